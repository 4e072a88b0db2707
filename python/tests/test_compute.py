"""pairwise, knn, gauss, kde against float64 NumPy references on awkward shapes."""

from __future__ import annotations

import numpy as np
import pytest
from reference import knn64, larger_is_better, pairwise64

import simkit

METRICS = simkit.METRICS


@pytest.mark.parametrize("metric", METRICS)
def test_pairwise_matches_float64(rng: np.random.Generator, metric: str) -> None:
    Q = rng.standard_normal((37, 53), dtype=np.float32)
    X = rng.standard_normal((1037, 53), dtype=np.float32)
    S = simkit.pairwise(Q, X, metric)
    assert S.shape == (37, 1037) and S.dtype == np.float32
    ref = pairwise64(Q, X, metric)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(S, ref, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("metric", METRICS)
def test_knn_ids_are_the_float64_ranking(rng: np.random.Generator, metric: str) -> None:
    Q = rng.standard_normal((29, 41), dtype=np.float32)
    X = rng.standard_normal((2011, 41), dtype=np.float32)
    D, I = simkit.knn(Q, X, 17, metric)
    assert D.shape == I.shape == (29, 17)
    assert D.dtype == np.float32 and I.dtype == np.int64
    Dr, Ir = knn64(Q, X, 17, metric)
    if metric == "l1":
        # l1 is ranked on float32 sums: ids may swap only between values equal to float32 rounding.
        np.testing.assert_allclose(D, Dr, rtol=1e-5)
        assert (I == Ir).mean() > 0.99
    else:
        np.testing.assert_array_equal(I, Ir)
        np.testing.assert_allclose(D, Dr, rtol=1e-6, atol=1e-6)


def test_knn_ties_go_to_the_lower_id(rng: np.random.Generator) -> None:
    X = rng.integers(0, 3, size=(500, 4)).astype(np.float32)  # many exact ties
    Q = rng.integers(0, 3, size=(20, 4)).astype(np.float32)
    D, I = simkit.knn(Q, X, 50)
    _, Ir = knn64(Q, X, 50, "sqeuclidean")
    np.testing.assert_array_equal(I, Ir)


def test_inputs_converted_as_documented(rng: np.random.Generator) -> None:
    X64 = rng.standard_normal((300, 16))  # float64: converted with one copy
    Q = X64[:40:2]  # non-contiguous rows: copied
    D, I = simkit.knn(Q, X64, 3)
    assert np.array_equal(I[:, 0], np.arange(0, 40, 2))
    Dl, Il = simkit.knn(Q.tolist(), X64.astype(np.float32), 3)  # nested lists
    np.testing.assert_array_equal(Il, I)
    Di, Ii = simkit.knn(np.arange(12).reshape(3, 4), np.arange(40).reshape(10, 4), 2)  # integers
    np.testing.assert_array_equal(Ii[:, 0], [0, 1, 2])
    Xf = np.asfortranarray(X64.astype(np.float32))
    np.testing.assert_array_equal(simkit.knn(Q, Xf, 3)[1], I)


def test_context_and_keywords(rng: np.random.Generator) -> None:
    Q = rng.standard_normal((10, 8), dtype=np.float32)
    X = rng.standard_normal((100, 8), dtype=np.float32)
    ref = simkit.knn(Q, X, 5)[1]
    ctx = simkit.Context(device="cpu", threads=1)
    assert repr(ctx).startswith("simkit.Context(device='cpu', threads=1")
    np.testing.assert_array_equal(simkit.knn(Q, X, 5, context=ctx)[1], ref)
    np.testing.assert_array_equal(simkit.knn(Q, X, 5, device="cpu", threads=2)[1], ref)
    np.testing.assert_array_equal(simkit.knn(Q, X, 5, context=ctx, threads=2)[1], ref)


def test_device_names_for_several_gpus() -> None:
    # The names parse on every build; a GPU list is refused when a call needs the GPUs and the
    # build or the machine lacks them (tests/test_gpu_shards.cpp runs the split on GPUs).
    assert simkit.Context(device="gpu:0,1").device == "gpu:0,1"
    assert simkit.Context(device="cuda:2,0").gpu_ids == [2, 0]
    assert simkit.Context(device="cuda:1").device == "gpu" and simkit.Context(device="cuda:1").gpu_id == 1
    assert simkit.Context(device="cuda").device == "gpu"
    for bad in ("gpu:", "gpu:0,0", "cuda:x", "gpu:1;2"):
        with pytest.raises(ValueError, match="device"):
            simkit.Context(device=bad)
    X = np.ones((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="list of GPU ids"):
        simkit.knn(X, X, 1, device=[0, "1"])  # type: ignore[list-item]
    if not simkit.gpus():
        with pytest.raises(RuntimeError):
            simkit.knn(X, X, 1, device=[0, 1])


def _gauss64(X: np.ndarray, Y: np.ndarray, h: float, w: np.ndarray) -> np.ndarray:
    d2 = ((Y[:, None, :].astype(np.float64) - X[None, :, :].astype(np.float64)) ** 2).sum(-1)
    return np.asarray(np.exp(-d2 / h**2) @ w)


@pytest.mark.parametrize("d", [1, 3, 7])
def test_gauss_direct_and_ifgt(rng: np.random.Generator, d: int) -> None:
    X = rng.random((3001, d), dtype=np.float32)
    Y = rng.random((211, d), dtype=np.float32)
    w = rng.random(3001)
    h = 0.4 * d
    ref = _gauss64(X, Y, h, w)
    G = simkit.gauss(X, Y, h, w, method="direct")
    assert G.shape == (211,) and G.dtype == np.float64
    np.testing.assert_allclose(G, ref, rtol=1e-5)
    Gi, report = simkit.gauss(X, Y, h, w, method="ifgt", eps=1e-4, return_report=True)
    assert report["method"] == "ifgt"
    assert np.abs(Gi - ref).max() <= 1e-4 * w.sum()
    np.testing.assert_allclose(simkit.gauss(X, Y, h), _gauss64(X, Y, h, np.ones(3001)), rtol=1e-5)


def test_kde_rules_and_normalisation(rng: np.random.Generator) -> None:
    X = rng.standard_normal((4000, 2)).astype(np.float32)
    at = rng.standard_normal((50, 2)).astype(np.float32)
    n, d = X.shape
    s = np.std(X.astype(np.float64), axis=0, ddof=1).mean()
    for rule, sigma in (
        ("scott", n ** (-1 / (d + 4)) * s),
        ("silverman", (4 / (d + 2)) ** (1 / (d + 4)) * n ** (-1 / (d + 4)) * s),
        (0.3, 0.3),
    ):
        p = simkit.kde(X, at, bandwidth=rule, method="direct")
        ref = _gauss64(X, at, np.sqrt(2) * sigma, np.full(n, 1 / n)) / (2 * np.pi * sigma**2) ** (d / 2)
        np.testing.assert_allclose(p, ref, rtol=1e-5)
    w = rng.random(n)
    p = simkit.kde(X, at, bandwidth=0.5, weights=w, method="direct")
    ref = _gauss64(X, at, np.sqrt(2) * 0.5, w / w.sum()) / (2 * np.pi * 0.25) ** (d / 2)
    np.testing.assert_allclose(p, ref, rtol=1e-5)


def test_larger_is_better_order(rng: np.random.Generator) -> None:
    Q = rng.standard_normal((5, 9), dtype=np.float32)
    X = rng.standard_normal((77, 9), dtype=np.float32)
    for metric in METRICS:
        D, _ = simkit.knn(Q, X, 10, metric)
        diffs = np.diff(D, axis=1)
        assert (diffs <= 0).all() if larger_is_better(metric) else (diffs >= 0).all()
