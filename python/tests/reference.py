"""Float64 NumPy references for the metrics and the k-NN rule (ranked by (value, id))."""

from __future__ import annotations

import numpy as np


def pairwise64(Q: np.ndarray, X: np.ndarray, metric: str) -> np.ndarray:
    q, x = Q.astype(np.float64), X.astype(np.float64)
    if metric in ("sqeuclidean", "l2"):
        d = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        return d if metric == "sqeuclidean" else np.sqrt(d)
    if metric == "l1":
        return np.abs(q[:, None, :] - x[None, :, :]).sum(-1)
    if metric == "dot":
        return q @ x.T
    if metric == "pearson":
        q = q - q.mean(1, keepdims=True)
        x = x - x.mean(1, keepdims=True)
    nq, nx = np.linalg.norm(q, axis=1), np.linalg.norm(x, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = (q @ x.T) / np.outer(nq, nx)
    s[~np.isfinite(s)] = 0.0
    return s


def larger_is_better(metric: str) -> bool:
    return metric in ("dot", "cosine", "pearson")


def knn64(Q: np.ndarray, X: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The k best per row by (float64 value, id): ids ascending among equal values."""
    S = pairwise64(Q, X, metric)
    key = -S if larger_is_better(metric) else S
    ids = np.argsort(key, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, ids, 1), ids
