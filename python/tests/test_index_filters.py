"""simkit.Index.search(..., allowed=ids): allow-list searches against a float64 brute force over
the allowed rows, and the ways a bad allow-list is refused."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import pytest

import simkit
from simkit import _simkit

N, D_, M, K = 1037, 37, 23, 15  # awkward sizes; K > 1% of N, so the 1% list pads
NLIST = 16


def _stored(rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base rows under scattered ids (added out of order), and queries. Gaussian float data:
    no two candidates of a query tie, so the order is the values' order alone."""
    X = rng.standard_normal((N, D_)).astype(np.float32)
    ids = rng.choice(1_000_000, N, replace=False).astype(np.int64)
    Q = rng.standard_normal((M, D_)).astype(np.float32)
    return X, ids, Q


def _brute(X: np.ndarray, ids: np.ndarray, Q: np.ndarray, allowed: np.ndarray, k: int, metric: str) -> Tuple[
        np.ndarray, np.ndarray]:
    """The k best allowed rows per query in float64, ranked by (value, id), padded with id -1."""
    keep = np.isin(ids, allowed)
    Xa, ida, Qd = X[keep].astype(np.float64), ids[keep], Q.astype(np.float64)
    if metric == "sqeuclidean":
        values = ((Qd[:, None, :] - Xa[None, :, :]) ** 2).sum(axis=2)
        key, pad = values, np.inf
    else:  # cosine similarity: larger is better
        Xn = Xa / np.linalg.norm(Xa, axis=1, keepdims=True)
        Qn = Qd / np.linalg.norm(Qd, axis=1, keepdims=True)
        values = Qn @ Xn.T
        key, pad = -values, -np.inf
    Dt = np.full((Q.shape[0], k), pad)
    It = np.full((Q.shape[0], k), -1, dtype=np.int64)
    for r in range(Q.shape[0]):
        order = np.lexsort((ida, key[r]))[:k]
        Dt[r, : len(order)] = values[r, order]
        It[r, : len(order)] = ida[order]
    return Dt, It


def _subset(rng: np.random.Generator, ids: np.ndarray, fraction: float) -> np.ndarray:
    count = int(round(fraction * len(ids)))
    return np.sort(rng.choice(ids, count, replace=False))


def _built(kind: str, metric: str, X: np.ndarray, ids: np.ndarray) -> simkit.Index:
    index = simkit.Index("flat" if kind == "flat" else f"ivf_flat,nlist={NLIST}", D_, metric)
    index.train(X)
    index.add(X, ids)
    return index


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine"])
@pytest.mark.parametrize("kind", ["flat", "ivf_flat"])
@pytest.mark.parametrize("fraction", [0.01, 0.3, 1.0, 0.0])
def test_allowed_matches_brute_force(rng: np.random.Generator, kind: str, metric: str, fraction: float) -> None:
    X, ids, Q = _stored(rng)
    index = _built(kind, metric, X, ids)
    allowed = _subset(rng, ids, fraction)
    Dt, It = _brute(X, ids, Q, allowed, K, metric)
    nprobe = NLIST if kind == "ivf_flat" else None  # every list: exact whatever the plan
    stats: dict = {}
    D, I = index.search(Q, K, nprobe=nprobe, allowed=allowed, stats=stats)
    assert D.dtype == np.float32 and I.dtype == np.int64 and I.shape == D.shape == (M, K)
    np.testing.assert_array_equal(I, It)
    np.testing.assert_allclose(D, Dt, rtol=1e-5, atol=1e-5)
    assert set(stats) == {"short_rows", "candidates", "gathered"}
    assert stats["gathered"] in (0, 1)
    assert stats["short_rows"] == (M if len(allowed) < K else 0)
    if fraction == 0.0:
        assert (I == -1).all() and np.isinf(D).all()
    if kind == "ivf_flat" and stats["gathered"]:
        # A gathered list is searched exactly, lists or no lists: one probe changes nothing.
        np.testing.assert_array_equal(index.search(Q, K, nprobe=1, allowed=allowed)[1], It)


def test_allowed_ids_not_stored_are_ignored_and_input_forms_agree(rng: np.random.Generator) -> None:
    X, ids, Q = _stored(rng)
    index = _built("flat", "sqeuclidean", X, ids)
    chosen = _subset(rng, ids, 0.1)
    strangers = np.setdiff1d(np.arange(-5, 2_000_000, 997), ids)[:50]  # negative ids among them
    allowed = np.union1d(chosen, strangers)
    _, It = _brute(X, ids, Q, chosen, K, "sqeuclidean")
    _, I = index.search(Q, K, allowed=allowed)
    np.testing.assert_array_equal(I, It)
    read_only = allowed.copy()
    read_only.flags.writeable = False
    strided = np.repeat(allowed, 2)[::2]  # a non-contiguous view of the same ids
    for form in (allowed.tolist(), tuple(allowed.tolist()), read_only, strided):
        np.testing.assert_array_equal(index.search(Q, K, allowed=form)[1], It)
    non_negative = allowed[allowed >= 0]  # every id here is below 2^31
    for dtype in (np.int32, np.uint32, np.uint64):
        np.testing.assert_array_equal(index.search(Q, K, allowed=non_negative.astype(dtype))[1], It)
    # No list is not an empty list: None searches everything and does not gather.
    stats: dict = {}
    _, Iall = index.search(Q, K, stats=stats)
    np.testing.assert_array_equal(Iall, _brute(X, ids, Q, ids, K, "sqeuclidean")[1])
    assert stats["gathered"] == 0


@pytest.mark.parametrize(
    "allowed, message",
    [
        ([3, 1, 2], r"allowed must be sorted ascending without repeats .*position 1 holds 1 after 3"),
        (np.array([1, 2, 2, 5]), r"allowed must be sorted ascending without repeats .*position 2 holds 2 after 2"),
        (np.array([0, 4, 9, 7], dtype=np.int32), r"position 3 holds 7 after 9"),
        (np.array([[1, 2], [3, 4]]), r"allowed must be 1-D, got 2-D"),
        (np.int64(3), r"allowed must be 1-D, got 0-D"),
        (np.array([1.0, 2.0]), r"allowed must hold integer ids, got dtype float64"),
        (np.array([1, 2], dtype=np.float32), r"allowed must hold integer ids, got dtype float32"),
        (np.array([True, False]), r"allowed must hold integer ids, got dtype bool"),
        (["a", "b"], r"allowed must hold integer ids"),
        (np.array([1, 2**63], dtype=np.uint64), r"allowed holds an id beyond int64"),
    ],
)
def test_bad_allow_lists_are_refused(rng: np.random.Generator, allowed: Any, message: str) -> None:
    X, ids, Q = _stored(rng)
    index = _built("flat", "sqeuclidean", X[:50], ids[:50])
    with pytest.raises(ValueError, match=message):
        index.search(Q, 3, allowed=allowed)


def test_the_binding_refuses_what_the_python_layer_would(rng: np.random.Generator) -> None:
    # The extension module checks again (for callers of the handle, and as the C++ contract).
    X, ids, Q = _stored(rng)
    index = _built("flat", "sqeuclidean", X[:50], np.arange(50))
    h = index._handle
    Dout, Iout = np.empty((M, 3), np.float32), np.empty((M, 3), np.int64)
    with pytest.raises(ValueError, match="sorted ascending without repeats; position 2 holds 1 after 4"):
        h.search(Q, 3, 0, 0, 0, 0, np.array([0, 4, 1], np.int64), Dout, Iout, _simkit.Context())
    with pytest.raises(ValueError, match="allowed must hold int64, got float64"):
        h.search(Q, 3, 0, 0, 0, 0, np.array([0.0, 4.0]), Dout, Iout, _simkit.Context())
    with pytest.raises(ValueError, match="allowed must be 1-D"):
        h.search(Q, 3, 0, 0, 0, 0, np.zeros((2, 2), np.int64), Dout, Iout, _simkit.Context())
    short, candidates, gathered = h.search(Q, 3, 0, 0, 0, 0, np.array([7, 9], np.int64), Dout, Iout, _simkit.Context())
    assert set(Iout[:, :2].ravel()) <= {7, 9} and (Iout[:, 2] == -1).all() and short == M and gathered == 1


class _FakeGpuIds:
    """Looks like a CUDA array to the DLPack protocol; the allow-list check must refuse it
    before reading it."""

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise AssertionError("a GPU allow-list must not be read")

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (2, 0)  # kDLCUDA, device 0


def test_gpu_allow_list_is_refused_by_protocol(rng: np.random.Generator) -> None:
    X, ids, Q = _stored(rng)
    index = _built("flat", "sqeuclidean", X[:50], ids[:50])
    with pytest.raises(ValueError, match="allowed is a GPU array .*host"):
        index.search(Q, 3, allowed=_FakeGpuIds())


def test_torch_cuda_allow_list_is_refused(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device here")
    X, ids, Q = _stored(rng)
    index = _built("flat", "sqeuclidean", X[:50], np.arange(50))
    with pytest.raises(ValueError, match="allowed is a GPU array"):
        index.search(Q, 3, allowed=torch.arange(10, device="cuda"))
    # A CPU tensor is fine, as any host array is.
    _, I = index.search(Q, 3, allowed=torch.arange(10))
    assert ((I >= 0) & (I < 10)).all()
