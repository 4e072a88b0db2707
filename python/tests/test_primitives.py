"""The primitives against NumPy on awkward lengths, every supported type."""

from __future__ import annotations

import numpy as np
import pytest

import simkit

N = [1, 7, 1000, 65537 + 11]


def _values(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", N)
def test_scan(rng: np.random.Generator, dtype: str, n: int) -> None:
    x = _values(rng, n, dtype)
    ref = np.cumsum(x.astype(np.float64) if dtype.startswith("float") else x).astype(dtype)
    out = simkit.scan(x)
    assert out.dtype == x.dtype and out.shape == x.shape
    if dtype.startswith("int"):
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(simkit.scan(x, exclusive=True), np.concatenate([[0], ref[:-1]]))
        np.testing.assert_array_equal(simkit.scan(x, "max"), np.maximum.accumulate(x))
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3 * np.sqrt(n))
        np.testing.assert_array_equal(simkit.scan(x, "min"), np.minimum.accumulate(x))


@pytest.mark.parametrize("n", N)
def test_segmented_scan(rng: np.random.Generator, n: int) -> None:
    x = rng.integers(-9, 9, n).astype(np.int64)
    heads = rng.random(n) < 0.1
    heads[0] = True
    starts = np.flatnonzero(heads)
    ref = np.concatenate([np.cumsum(s) for s in np.split(x, starts[1:])])
    np.testing.assert_array_equal(simkit.segmented_scan(x, heads=heads), ref)
    offsets = np.concatenate([starts, [n]]).astype(np.int32)
    np.testing.assert_array_equal(simkit.segmented_scan(x, offsets=offsets), ref)
    excl = simkit.segmented_scan(x, offsets=offsets, exclusive=True)
    np.testing.assert_array_equal(excl, ref - x)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
@pytest.mark.parametrize("n", N)
def test_sort_stable_with_values(rng: np.random.Generator, dtype: str, n: int) -> None:
    keys = _values(rng, n, dtype)
    if dtype == "float32" and n > 3:
        keys[::97] = np.nan
    vals = np.arange(n, dtype=np.int64)
    k, v = simkit.sort(keys, vals)
    order = np.argsort(keys, kind="stable")  # NaN last, equal keys in input order
    np.testing.assert_array_equal(k, keys[order])
    np.testing.assert_array_equal(v, order)
    kd, vd = simkit.sort(keys, vals, descending=True)
    # Descending keeps equal keys in input order too, and puts NaN first.
    order = np.lexsort((np.arange(n), -np.nan_to_num(keys.astype(np.float64), nan=np.inf)))
    np.testing.assert_array_equal(vd, order)


def test_sort_leaves_input_untouched(rng: np.random.Generator) -> None:
    keys = rng.standard_normal(100).astype(np.float32)
    before = keys.copy()
    simkit.sort(keys)
    np.testing.assert_array_equal(keys, before)


@pytest.mark.parametrize("na,nb", [(0, 5), (1, 1), (1000, 37), (70001, 65536)])
def test_merge(rng: np.random.Generator, na: int, nb: int) -> None:
    a = np.sort(rng.integers(0, 100, na)).astype(np.int32)
    b = np.sort(rng.integers(0, 100, nb)).astype(np.int32)
    out, vals = simkit.merge(a, b, np.zeros(na, np.int64), np.ones(nb, np.int64))
    order = np.argsort(np.concatenate([a, b]), kind="stable")  # a's equal keys first
    np.testing.assert_array_equal(out, np.concatenate([a, b])[order])
    np.testing.assert_array_equal(vals, np.concatenate([np.zeros(na), np.ones(nb)])[order])


@pytest.mark.parametrize("rows,cols,k", [(1, 1, 1), (13, 1000, 10), (7, 5000, 300), (3, 100000, 2048)])
def test_select_k(rng: np.random.Generator, rows: int, cols: int, k: int) -> None:
    x = rng.integers(0, 50, (rows, cols)).astype(np.float32)  # ties everywhere
    v, i = simkit.select_k(x, k)
    order = np.argsort(x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(v, np.take_along_axis(x, order, 1))
    vl, il = simkit.select_k(x, k, largest=True)
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(il, order)


def test_select_k_pads_nan_rows() -> None:
    x = np.array([[np.nan, 1.0, np.nan]], np.float32)
    v, i = simkit.select_k(x, 2)
    assert i.tolist() == [[1, -1]] and v[0, 0] == 1.0 and np.isnan(v[0, 1])


@pytest.mark.parametrize("rows,cols", [(1, 1), (300, 200), (5, 70000)])
def test_spmv_csr(rng: np.random.Generator, rows: int, cols: int) -> None:
    dense = np.where(rng.random((rows, cols)) < 0.05, rng.standard_normal((rows, cols)), 0.0)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int64)
    indices = np.nonzero(dense)[1].astype(np.int64)
    data = dense[dense != 0]
    x = rng.standard_normal(cols)
    y = simkit.spmv_csr(indptr, indices, data, x)
    np.testing.assert_allclose(y, dense @ x, rtol=1e-12, atol=1e-12)
    y32 = simkit.spmv_csr(indptr.astype(np.int32), indices.astype(np.int32), data.astype(np.float32),
                          x.astype(np.float32))
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, dense.astype(np.float32).astype(np.float64) @ x.astype(np.float32), rtol=1e-5,
                               atol=1e-5)
