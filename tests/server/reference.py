"""Float64 references of the server's four distances (numpy brute force)."""

from __future__ import annotations

import numpy as np

# API distance -> `simkit knn --metric` name, and whether larger scores are better.
KNN_METRIC = {"Cosine": "cosine", "Dot": "dot", "Euclid": "l2", "Manhattan": "l1"}
LARGER_IS_BETTER = {"Cosine": True, "Dot": True, "Euclid": False, "Manhattan": False}


def scores(X: np.ndarray, Q: np.ndarray, distance: str) -> np.ndarray:
    """m x n scores in float64, as the server reports them (Euclid: the distance itself, not squared)."""
    X = X.astype(np.float64)
    Q = Q.astype(np.float64)
    if distance == "Dot":
        return Q @ X.T
    if distance == "Cosine":
        xn = np.linalg.norm(X, axis=1)
        qn = np.linalg.norm(Q, axis=1)
        return (Q @ X.T) / np.outer(qn, xn)
    if distance == "Euclid":
        d2 = (Q * Q).sum(1)[:, None] + (X * X).sum(1)[None, :] - 2 * Q @ X.T
        return np.sqrt(np.maximum(d2, 0))
    if distance == "Manhattan":
        return np.abs(Q[:, None, :] - X[None, :, :]).sum(-1)
    raise ValueError(distance)


def top_k(S: np.ndarray, ids: np.ndarray, k: int, distance: str) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k best (ids, scores), best first, ties to the lower id."""
    key = -S if LARGER_IS_BETTER[distance] else S
    out_ids = np.empty((S.shape[0], min(k, S.shape[1])), dtype=np.int64)
    out_s = np.empty(out_ids.shape, dtype=np.float64)
    for r in range(S.shape[0]):
        order = np.lexsort((ids, key[r]))[: out_ids.shape[1]]
        out_ids[r] = ids[order]
        out_s[r] = S[r, order]
    return out_ids, out_s


def margin_ok(S_row: np.ndarray, k: int, distance: str, rel: float = 1e-4) -> bool:
    """False when the k-th and (k+1)-th best scores are so close that float32 rounding may swap them."""
    key = np.sort(-S_row if LARGER_IS_BETTER[distance] else S_row)
    if k >= len(key):
        return True
    scale = max(1.0, float(np.abs(key[: k + 1]).max()))
    return bool(np.all(np.diff(key[: k + 1]) > rel * scale))


def compare_ranking(got: list[int], want: list[int], score_of: dict[int, float], rel: float = 1e-5) -> int:
    """Asserts that two best-first id lists are the same ranking: equal ids at every position,
    except where float32 rounding may reorder a near-tie (both ids' float64 scores within
    `rel` of each other). Returns how many positions differed that way."""
    assert len(got) == len(want), (got, want)
    assert len(set(got)) == len(got), f"repeated ids: {got}"
    swapped = 0
    for p, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        assert g in score_of, f"position {p}: id {g} is not a candidate at all"
        sg, sw = score_of[g], score_of[w]
        tol = rel * max(1.0, abs(sw))
        assert abs(sg - sw) <= tol, f"position {p}: got id {g} (score {sg}), expected id {w} (score {sw})"
        swapped += 1
    return swapped
