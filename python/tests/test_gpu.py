"""GPU arrays through DLPack: torch and CuPy tensors in place, results back on their GPU.

Every test here is marked `gpu` and skips (saying why) without CUDA, a GPU or torch/CuPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import simkit

pytestmark = pytest.mark.gpu


def _to_gpu(fw: Any, a: np.ndarray) -> Any:
    return fw.asarray(a, device="cuda") if fw.__name__ == "torch" else fw.asarray(a)


def _to_host(x: Any) -> np.ndarray:
    return x.cpu().numpy() if hasattr(x, "cpu") else x.get()


def _is_on_gpu(fw: Any, x: Any) -> bool:
    if fw.__name__ == "torch":
        return isinstance(x, fw.Tensor) and x.is_cuda
    return isinstance(x, fw.ndarray)


@pytest.mark.parametrize("metric", simkit.METRICS)
def test_knn_on_gpu_tensors_equals_cpu(gpu_framework: Any, rng: np.random.Generator, metric: str) -> None:
    Q = rng.standard_normal((123, 67), dtype=np.float32)
    X = rng.standard_normal((5003, 67), dtype=np.float32)
    D, I = simkit.knn(_to_gpu(gpu_framework, Q), _to_gpu(gpu_framework, X), 10, metric)
    assert _is_on_gpu(gpu_framework, D) and _is_on_gpu(gpu_framework, I)
    assert tuple(D.shape) == (123, 10) and str(I.dtype).endswith("int64")
    Dc, Ic = simkit.knn(Q, X, 10, metric, device="cpu")
    Ig, Dg = _to_host(I), _to_host(D)
    np.testing.assert_allclose(Dg, Dc, rtol=1e-6, atol=1e-6)
    if metric != "l1":
        np.testing.assert_array_equal(Ig, Ic)  # float64 re-scores: the same ids on near-ties
        return
    # l1 is not re-scored: each backend ranks its own float32 sums, which fold in a different
    # order, so two rows whose values agree to rounding may trade places -- nothing else.
    for q, p in zip(*np.nonzero(Ig != Ic)):
        assert set(Ig[q]) == set(Ic[q]) or p == 9, (q, p)
        assert abs(float(Dg[q, p]) - float(Dc[q, p])) <= 1e-5 * abs(float(Dc[q, p])), (q, p)


def test_pairwise_select_sort_scan_on_gpu(gpu_framework: Any, rng: np.random.Generator) -> None:
    fw = gpu_framework
    Q = rng.standard_normal((31, 19), dtype=np.float32)
    X = rng.standard_normal((2000, 19), dtype=np.float32)
    S = simkit.pairwise(_to_gpu(fw, Q), _to_gpu(fw, X), "cosine")
    np.testing.assert_allclose(_to_host(S), simkit.pairwise(Q, X, "cosine", device="cpu"), rtol=1e-5, atol=1e-6)
    v, i = simkit.select_k(S, 7, largest=True)
    assert _is_on_gpu(fw, i)
    np.testing.assert_array_equal(_to_host(i), simkit.select_k(_to_host(S), 7, largest=True, device="cpu")[1])
    keys = rng.integers(0, 100, 100003).astype(np.int32)
    np.testing.assert_array_equal(_to_host(simkit.sort(_to_gpu(fw, keys))), np.sort(keys, kind="stable"))
    np.testing.assert_array_equal(_to_host(simkit.scan(_to_gpu(fw, keys.astype(np.int64)))), np.cumsum(keys))


def test_float64_and_strided_gpu_inputs_are_converted(gpu_framework: Any, rng: np.random.Generator) -> None:
    X = rng.standard_normal((600, 16))
    Xg = _to_gpu(gpu_framework, X)  # float64
    D, I = simkit.knn(Xg[::2], Xg, 3)  # strided rows, float64: one copy each
    np.testing.assert_array_equal(_to_host(I)[:, 0], np.arange(0, 600, 2))


def test_index_search_with_gpu_queries(gpu_framework: Any, rng: np.random.Generator) -> None:
    X = rng.standard_normal((20000, 48), dtype=np.float32)
    index = simkit.Index("ivf_flat,nlist=64", 48)
    index.train(X)
    index.add(X)
    Q = X[:300]
    D, I = index.search(_to_gpu(gpu_framework, Q), 10, nprobe=16)
    assert _is_on_gpu(gpu_framework, I)
    np.testing.assert_array_equal(_to_host(I), index.search(Q, 10, nprobe=16, device="cpu")[1])


def test_cpu_device_with_gpu_arrays_is_refused(gpu_framework: Any) -> None:
    x = _to_gpu(gpu_framework, np.ones((4, 4), np.float32))
    with pytest.raises(ValueError, match="device='cpu'"):
        simkit.knn(x, x, 1, device="cpu")


def test_torch_stream_ordering(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    X = torch.randn(50000, 64, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        Q = X[:512] * 1.0  # made on s; simkit must run after it, on s
        D, I = simkit.knn(Q, X, 5)
        first = I[:, 0].clone()
    s.synchronize()
    assert torch.equal(first.cpu(), torch.arange(512))


class _Opaque:
    """A framework simkit has never heard of: only the two DLPack methods."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.inner.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.inner.__dlpack_device__()


def test_any_dlpack_gpu_array(gpu_framework: Any, rng: np.random.Generator) -> None:
    X = rng.standard_normal((1000, 8), dtype=np.float32)
    Xg = _to_gpu(gpu_framework, X)
    D, I = simkit.knn(_Opaque(Xg), _Opaque(Xg), 4)
    I_back = gpu_framework.from_dlpack(I)  # results are DLPack arrays on the same GPU
    np.testing.assert_array_equal(_to_host(I_back), simkit.knn(X, X, 4, device="cpu")[1])
