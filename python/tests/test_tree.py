"""knn(method='tree') and radius_search: the low-dimensional tree returns exactly what brute force
and a float64 NumPy reference return (ids and values, bit for bit), and refuses what it does not
serve."""

from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np
import pytest
from reference import knn64

import simkit

TREE_METRICS = ("l2", "sqeuclidean")


def sqdist64(Q: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Squared distances in float64, summed in the order of simkit's exact_sqdist (lanes j and
    j + 4 of the first 8 coordinates, then the rest one by one), so that the float64 keys, and
    hence the float32 values and the cut at the radius, agree to the bit."""
    e = Q.astype(np.float64)[:, None, :] - X.astype(np.float64)[None, :, :]
    d = Q.shape[1]
    s = np.zeros(e.shape[:2])
    t = 0
    if d >= 8:
        lanes = e[..., 0:4] ** 2 + e[..., 4:8] ** 2
        s = (lanes[..., 0] + lanes[..., 1]) + (lanes[..., 2] + lanes[..., 3])
        t = 8
    for j in range(t, d):
        s = s + e[..., j] ** 2
    return s


def values64(Q: np.ndarray, X: np.ndarray, metric: str) -> np.ndarray:
    s = sqdist64(Q, X)
    return np.sqrt(s) if metric == "l2" else s


def radius64(
    Q: np.ndarray, X: np.ndarray, radius: float, metric: str, cap: int = 0
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """All pairs, each query's sorted by (float64 value, id), cut at value <= radius and at cap."""
    V = values64(Q, X, metric)
    offsets: List[int] = [0]
    ids: List[np.ndarray] = []
    vals: List[np.ndarray] = []
    capped = 0
    for row in V:
        order = np.lexsort((np.arange(row.size), row))
        keep = order[row[order] <= radius]
        if cap and keep.size > cap:
            keep = keep[:cap]
            capped += 1
        ids.append(keep)
        vals.append(row[keep].astype(np.float32))
        offsets.append(offsets[-1] + keep.size)
    return np.array(offsets, np.int64), np.concatenate(ids).astype(np.int64), np.concatenate(vals), capped


def points(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    return rng.random((n, d), dtype=np.float32)


@pytest.mark.parametrize("d", (2, 3, 8))
@pytest.mark.parametrize("metric", TREE_METRICS)
@pytest.mark.parametrize("k", (1, 10))
def test_tree_equals_brute_force(rng: np.random.Generator, d: int, metric: str, k: int) -> None:
    X, Q = points(rng, 3000, d), points(rng, 200, d)
    Db, Ib = simkit.knn(Q, X, k, metric, method="brute", device="cpu")
    Dt, It = simkit.knn(Q, X, k, metric, method="tree", device="cpu")
    assert Dt.shape == It.shape == (200, k) and Dt.dtype == np.float32 and It.dtype == np.int64
    np.testing.assert_array_equal(It, Ib)
    np.testing.assert_array_equal(Dt, Db)
    Da, Ia = simkit.knn(Q, X, k, metric, method="auto", device="cpu")
    np.testing.assert_array_equal(Ia, Ib)
    np.testing.assert_array_equal(Da, Db)


@pytest.mark.parametrize("metric", TREE_METRICS)
def test_tree_is_the_float64_ranking(rng: np.random.Generator, metric: str) -> None:
    # n >= 4096 at d = 3: method='auto' takes the tree here.
    X, Q = points(rng, 5000, 3), points(rng, 100, 3)
    Dr, Ir = knn64(Q, X, 16, metric)
    for method in ("tree", "auto"):
        D, I = simkit.knn(Q, X, 16, metric, method=method, device="cpu", threads=2)
        np.testing.assert_array_equal(I, Ir)
        np.testing.assert_array_equal(D, Dr.astype(np.float32))


def test_tree_ties_go_to_the_lower_id(rng: np.random.Generator) -> None:
    X = rng.integers(0, 4, size=(3000, 3)).astype(np.float32)  # 64 sites, ~47 copies each
    Q = rng.integers(0, 4, size=(50, 3)).astype(np.float32)
    Db, Ib = simkit.knn(Q, X, 60, "l2", method="brute", device="cpu")
    Dt, It = simkit.knn(Q, X, 60, "l2", method="tree", device="cpu")
    np.testing.assert_array_equal(It, Ib)
    np.testing.assert_array_equal(Dt, Db)
    np.testing.assert_array_equal(It, knn64(Q, X, 60, "l2")[1])


@pytest.mark.parametrize("d", (2, 3, 8))
@pytest.mark.parametrize("metric", TREE_METRICS)
def test_radius_search_matches_float64(rng: np.random.Generator, d: int, metric: str) -> None:
    X, Q = points(rng, 3000, d), points(rng, 200, d)
    r = {2: 0.04, 3: 0.1, 8: 0.45}[d]  # a few to a few dozen neighbours each
    radius = r if metric == "l2" else r * r
    res = simkit.radius_search(Q, X, radius, metric)
    assert isinstance(res, simkit.RadiusResult)
    assert res.offsets.dtype == np.int64 and res.ids.dtype == np.int64 and res.values.dtype == np.float32
    offsets, ids, values, capped = radius64(Q, X, radius, metric)
    assert ids.size > 200  # the test means something
    np.testing.assert_array_equal(res.offsets, offsets)
    np.testing.assert_array_equal(res.ids, ids)
    np.testing.assert_array_equal(res.values, values)
    assert res.capped == capped == 0


def test_radius_search_prefix_is_knn(rng: np.random.Generator) -> None:
    X, Q = points(rng, 3000, 3), points(rng, 100, 3)
    res = simkit.radius_search(Q, X, 0.2, device="cpu", threads=1)
    D, I = simkit.knn(Q, X, 5, "l2", method="brute", device="cpu")
    counts = np.diff(res.offsets)
    assert counts.min() >= 5
    for i in range(len(Q)):
        a = res.offsets[i]
        np.testing.assert_array_equal(res.ids[a : a + 5], I[i])
        np.testing.assert_array_equal(res.values[a : a + 5], D[i])


@pytest.mark.parametrize("metric", TREE_METRICS)
def test_radius_search_cap_keeps_the_nearest(rng: np.random.Generator, metric: str) -> None:
    X, Q = points(rng, 3000, 2), points(rng, 200, 2)
    radius = 0.05 if metric == "l2" else 0.0025
    full = simkit.radius_search(Q, X, radius, metric)
    cap = int(np.median(np.diff(full.offsets)))
    res = simkit.radius_search(Q, X, radius, metric, max_neighbors=cap)
    offsets, ids, values, capped = radius64(Q, X, radius, metric, cap)
    assert 0 < capped < len(Q)
    assert res.capped == capped == int((np.diff(full.offsets) > cap).sum())
    np.testing.assert_array_equal(res.offsets, offsets)
    np.testing.assert_array_equal(res.ids, ids)
    np.testing.assert_array_equal(res.values, values)


def test_radius_search_ties_and_zero_radius(rng: np.random.Generator) -> None:
    X = rng.integers(0, 5, size=(2000, 2)).astype(np.float32)  # 25 sites: exact ties everywhere
    Q = rng.integers(0, 5, size=(30, 2)).astype(np.float32)
    for radius in (0.0, 1.0, 1.5):
        res = simkit.radius_search(Q, X, radius)
        offsets, ids, values, _ = radius64(Q, X, radius, "l2")
        np.testing.assert_array_equal(res.offsets, offsets)
        np.testing.assert_array_equal(res.ids, ids)
        np.testing.assert_array_equal(res.values, values)


def test_radius_search_inputs_and_empty_answers() -> None:
    X = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]  # nested float64 lists: converted
    res = simkit.radius_search([[10.0, 10.0], [0.0, 0.0]], X, 1.0)
    np.testing.assert_array_equal(res.offsets, [0, 0, 2])
    np.testing.assert_array_equal(res.ids, [0, 1])
    np.testing.assert_array_equal(res.values, np.array([0, 1], np.float32))
    none = simkit.radius_search([[10.0, 10.0]], X, 0.5)
    np.testing.assert_array_equal(none.offsets, [0, 0])
    assert none.ids.shape == (0,) and none.values.shape == (0,) and none.capped == 0


X9 = np.random.default_rng(0).random((100, 9), dtype=np.float32)
X3 = X9[:, :3].copy()

ERRORS: List[Tuple[str, Any, type, str]] = [
    ("bad method", lambda: simkit.knn(X3, X3, 1, method="kdtree"), ValueError, "method"),
    ("method not str", lambda: simkit.knn(X3, X3, 1, method=1), ValueError, "method"),  # type: ignore[call-overload]
    ("tree cosine", lambda: simkit.knn(X3, X3, 1, "cosine", method="tree"), RuntimeError, "l2 and sqeuclidean"),
    ("tree d = 9", lambda: simkit.knn(X9, X9, 1, "l2", method="tree"), RuntimeError, "d <= 8"),
    ("radius < 0", lambda: simkit.radius_search(X3, X3, -0.1), ValueError, "radius"),
    ("radius NaN", lambda: simkit.radius_search(X3, X3, float("nan")), ValueError, "radius"),
    ("radius text", lambda: simkit.radius_search(X3, X3, "big"), ValueError, "radius"),  # type: ignore[arg-type]
    ("cap < 0", lambda: simkit.radius_search(X3, X3, 0.1, max_neighbors=-1), ValueError, "max_neighbors"),
    ("radius cosine", lambda: simkit.radius_search(X3, X3, 0.1, "cosine"), RuntimeError, "l2 and sqeuclidean"),
    ("radius d = 9", lambda: simkit.radius_search(X9, X9, 0.1), RuntimeError, "d <= 8"),
    ("radius bad metric", lambda: simkit.radius_search(X3, X3, 0.1, "l3"), ValueError, "metric"),
    ("radius dims differ", lambda: simkit.radius_search(X3, X9, 0.1), ValueError, "dimension"),
    ("radius empty", lambda: simkit.radius_search(X3[:0], X3, 0.1), ValueError, "Q is empty"),
    ("radius NaN input", lambda: simkit.radius_search(np.full((1, 3), np.nan, np.float32), X3, 0.1), ValueError, "NaN"),
]


@pytest.mark.parametrize("name,call,error,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name: str, call: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call()


def test_gpu_tree_equals_the_cpu_tree_or_is_refused_without_a_gpu() -> None:
    """On a GPU the tree gives the CPU's neighbours (its float64 keys sum in another order, so a
    near-tie may fall differently: the test data has none); without one the request is refused."""
    P = np.random.default_rng(5).random((5000, 3), dtype=np.float32)
    if not (simkit.built_with_cuda() and simkit.gpus()):
        with pytest.raises(RuntimeError, match="CUDA|GPU"):
            simkit.knn(P, P, 4, "l2", method="tree", device="gpu")
        with pytest.raises(RuntimeError, match="CUDA|GPU"):
            simkit.radius_search(P, P, 0.05, device="gpu")
        return
    D, I = simkit.knn(P[:500], P, 8, "l2", method="tree", device="gpu")
    Dc, Ic = simkit.knn(P[:500], P, 8, "l2", method="tree", device="cpu")
    np.testing.assert_array_equal(I, Ic)
    np.testing.assert_array_equal(D, Dc)
    r = simkit.radius_search(P[:500], P, 0.05, device="gpu")
    rc = simkit.radius_search(P[:500], P, 0.05, device="cpu")
    np.testing.assert_array_equal(r.offsets, rc.offsets)
    np.testing.assert_array_equal(r.ids, rc.ids)
