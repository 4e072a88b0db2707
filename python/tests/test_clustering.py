"""kmeans and kcenter against float64 checks of what they promise."""

from __future__ import annotations

import numpy as np
import pytest
from reference import pairwise64

import simkit


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine"])
def test_kmeans_labels_and_inertia(rng: np.random.Generator, metric: str) -> None:
    centers = rng.standard_normal((7, 13)) * 4
    X = (centers[rng.integers(0, 7, 2003)] + rng.standard_normal((2003, 13))).astype(np.float32)
    r = simkit.kmeans(X, 7, metric, seed=3, iterations=30)
    assert r.centroids.shape == (7, 13) and r.centroids.dtype == np.float32
    assert r.labels.shape == (2003,) and r.labels.dtype == np.int64
    S = pairwise64(X, r.centroids, metric)
    if metric == "cosine":
        np.testing.assert_array_equal(r.labels, np.argmax(S, axis=1))
        inertia = (1 - S[np.arange(2003), r.labels]).sum()
    else:
        np.testing.assert_array_equal(r.labels, np.argmin(S, axis=1))
        inertia = S[np.arange(2003), r.labels].sum()
    assert r.inertia == pytest.approx(inertia, rel=1e-6)
    assert 1 <= r.iterations <= 30 and len(r.history) >= 1
    again = simkit.kmeans(X, 7, metric, seed=3, iterations=30)
    np.testing.assert_array_equal(again.centroids, r.centroids)  # deterministic, bit for bit


def test_kmeans_given_init_and_zero_iterations(rng: np.random.Generator) -> None:
    X = rng.standard_normal((500, 5), dtype=np.float32)
    init = X[:4].copy()
    r = simkit.kmeans(X, 4, init=init, iterations=0)
    np.testing.assert_array_equal(r.centroids, init)
    np.testing.assert_array_equal(r.labels, np.argmin(pairwise64(X, init, "sqeuclidean"), axis=1))


def test_kcenter_radius_and_centers(rng: np.random.Generator) -> None:
    X = rng.random((1500, 3), dtype=np.float32)
    r = simkit.kcenter(X, 20, seed=5)
    np.testing.assert_array_equal(r.centers, X[r.ids])
    dist = np.sqrt(pairwise64(X, r.centers, "sqeuclidean"))
    np.testing.assert_array_equal(r.labels, np.argmin(dist, axis=1))
    assert r.radius == pytest.approx(dist.min(axis=1).max(), rel=1e-5)
    assert len(set(r.ids.tolist())) == 20
