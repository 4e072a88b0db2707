"""pairwise, knn, radius_search, gauss and kde: the engine's calls on two point sets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union, cast, overload

import numpy as np
import numpy.typing as npt

from . import _arrays as A
from . import _simkit

Context = _simkit.Context
F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@overload
def pairwise(
    Q: npt.NDArray[Any],
    X: Any,
    metric: str = ...,
    *,
    context: Optional[Context] = ...,
    device: Optional[A.DeviceName] = ...,
    threads: Optional[int] = ...,
    gpu_memory: Optional[int] = ...,
) -> F32: ...
@overload
def pairwise(
    Q: Any,
    X: Any,
    metric: str = ...,
    *,
    context: Optional[Context] = ...,
    device: Optional[A.DeviceName] = ...,
    threads: Optional[int] = ...,
    gpu_memory: Optional[int] = ...,
) -> Any: ...
def pairwise(
    Q: Any,
    X: Any,
    metric: str = "sqeuclidean",
    *,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Any:
    """The m x n matrix S[i, j] = metric(Q[i], X[j]), float32.

    Q: queries, m x d; X: base, n x d. NumPy arrays, anything numpy.asarray takes, or
    DLPack arrays (torch, CuPy, JAX) on the host or a GPU, read in place. Other number types
    are converted to float32 with one copy (float64 included), non-contiguous arrays are
    copied. The result lives where Q lives, in Q's framework.

    metric: 'sqeuclidean', 'l2', 'l1', 'dot', 'cosine' or 'pearson' (metric.hpp has the
    formulas; cosine of a zero row is 0).

    Raises ValueError for empty sets, mismatched dimensions, NaN/Inf, an unknown metric.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).standard_normal((1000, 64), dtype=np.float32)
    >>> S = simkit.pairwise(X[:5], X, "cosine")
    >>> S.shape
    (5, 1000)
    """
    ctx = A.context(context, device, threads, gpu_memory)
    Qa, Xa = A.array_in(Q, "Q"), A.array_in(X, "X")
    results = A.Results(Qa, Xa)
    out = results.empty((Qa.shape[0], Xa.shape[0]), "float32")
    _simkit.pairwise(Qa, Xa, A.text(metric, "metric"), out, ctx, results.stream)
    return results.finish(out)


@overload
def knn(
    Q: npt.NDArray[Any],
    X: Any,
    k: int,
    metric: str = ...,
    *,
    method: str = ...,
    context: Optional[Context] = ...,
    device: Optional[A.DeviceName] = ...,
    threads: Optional[int] = ...,
    gpu_memory: Optional[int] = ...,
) -> Tuple[F32, I64]: ...
@overload
def knn(
    Q: Any,
    X: Any,
    k: int,
    metric: str = ...,
    *,
    method: str = ...,
    context: Optional[Context] = ...,
    device: Optional[A.DeviceName] = ...,
    threads: Optional[int] = ...,
    gpu_memory: Optional[int] = ...,
) -> Tuple[Any, Any]: ...
def knn(
    Q: Any,
    X: Any,
    k: int,
    metric: str = "sqeuclidean",
    *,
    method: str = "auto",
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Tuple[Any, Any]:
    """Exact k nearest rows of X for each row of Q: ``D, I = simkit.knn(Q, X, k)``.

    D (m x k, float32) holds the metric's values, best first: smallest distances, or largest
    similarities for 'dot', 'cosine', 'pearson'. I (m x k, int64) holds row numbers of X;
    equal values go to the lower row. The shapes and dtypes are FAISS's. Candidates are
    re-scored in float64, so the CPU and the GPU return the same ids.

    Arrays as in `pairwise`: D and I live where Q lives, in Q's framework (a CUDA torch
    tensor in, CUDA torch tensors out, queued on torch's current stream, no host copy).

    method: how the neighbours are found; every method returns the same ids and values.
    'brute' compares every pair (streamed in tiles through the fast product and selection
    kernels). 'tree' builds a bounding-volume hierarchy over X in Morton order and walks it
    with packets of 32 Morton-neighbouring queries, pruning each query by its current k-th
    float64 distance; it is exact, the same ids and values as brute force, and serves 'l2' and
    'sqeuclidean' with d <= 8 (k <= 128 on the GPU; the build is part of each call). 'auto'
    (default) takes the tree where it was measured faster (simkit's tree_knn_is_faster), from
    256 queries: on the CPU n >= 1024; on the GPU d <= 3
    with n >= 1024, d <= 5 with n >= 65536 or d <= 8 with n >= 2**22; brute force elsewhere.

    Raises ValueError when k < 1 or k > n, for empty sets, mismatched dimensions, NaN/Inf, an
    unknown metric or method; RuntimeError for method='tree' with another metric, d > 8, or
    k > 128 on the GPU.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).standard_normal((10000, 128), dtype=np.float32)
    >>> D, I = simkit.knn(X[:3], X, k=4)
    >>> I[:, 0]          # each query finds itself first
    array([0, 1, 2])
    >>> P = np.random.default_rng(1).random((100000, 3), dtype=np.float32)
    >>> D3, I3 = simkit.knn(P[:5], P, 16, "l2", method="tree", device="cpu")
    >>> bool((I3 == simkit.knn(P[:5], P, 16, "l2", method="brute", device="cpu")[1]).all())
    True
    """
    ctx = A.context(context, device, threads, gpu_memory)
    how = _knn_method(method)
    k = A.positive_int(k, "k")
    Qa, Xa = A.array_in(Q, "Q"), A.array_in(X, "X")
    if k > Xa.shape[0]:
        raise ValueError(f"k = {k} exceeds the number of rows of X ({Xa.shape[0]})")
    m = Qa.shape[0]
    results = A.Results(Qa, Xa)
    D, I = results.empty((m, k), "float32"), results.empty((m, k), "int64")
    _simkit.knn(Qa, Xa, k, A.text(metric, "metric"), D, I, ctx, results.stream, how)
    return results.finish(D), results.finish(I)


_KNN_METHODS = ("auto", "brute", "tree")


def _knn_method(method: Any) -> str:
    name = A.text(method, "method")
    if name not in _KNN_METHODS:
        raise ValueError(f"method must be 'auto', 'brute' or 'tree', got '{name}'")
    return name


@dataclass(frozen=True)
class RadiusResult:
    """What `radius_search` returns: the neighbours in compressed-sparse-row form.

    Query i's neighbours are ``ids[offsets[i]:offsets[i + 1]]``, nearest first, with their
    values in the same slice of ``values``. ``(values, ids, offsets)`` is the (data, indices,
    indptr) of a SciPy CSR matrix of shape (m, n).
    """

    offsets: npt.NDArray[np.int64]  #: m + 1, rising from 0
    ids: npt.NDArray[np.int64]  #: rows of X, query after query, each query's sorted by (value, id)
    values: npt.NDArray[np.float32]  #: the metric's value of each pair (l2: the distance; sqeuclidean: its square)
    capped: int  #: queries that had more than max_neighbors within the radius (they keep their nearest)


def radius_search(
    Q: Any,
    X: Any,
    radius: float,
    metric: str = "l2",
    *,
    max_neighbors: int = 0,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
) -> RadiusResult:
    """Every row of X within `radius` of each row of Q, nearest first, exact.

    ``r = simkit.radius_search(Q, X, 0.05)``: query i's neighbours are
    ``r.ids[r.offsets[i]:r.offsets[i + 1]]`` with their distances in the same slice of
    ``r.values`` (float32), sorted by (float64 value, id): the order and the values of `knn`,
    so a query's first k neighbours are its k nearest whenever it has k within the radius.
    offsets (m + 1), ids: int64. A pair is kept when its value <= radius, compared in float64,
    in the metric's own units (metric 'l2': the distance; 'sqeuclidean': the squared distance,
    so pass radius**2). max_neighbors > 0 keeps at most that many per query (its nearest) and
    counts in ``r.capped`` the queries that had more. For SciPy,
    ``scipy.sparse.csr_matrix((r.values, r.ids, r.offsets), shape=(len(Q), len(X)))`` (pairs at
    distance 0 stay as explicit zeros).

    Served by the tree of `knn` (method='tree'): metrics 'l2' and 'sqeuclidean', d <= 8, on the
    CPU or the GPU, the tree over X built in each call. Q and X are read on the host (GPU arrays
    are copied over once, other number types converted to float32); results are NumPy arrays.

    Raises ValueError for empty sets, mismatched dimensions, NaN/Inf, a negative or non-finite
    radius, max_neighbors < 0, an unknown metric; RuntimeError for another metric or d > 8.

    >>> import numpy as np, simkit
    >>> X = np.array([[0, 0], [1, 0], [0, 2], [3, 3]], np.float32)
    >>> r = simkit.radius_search(X[:2], X, 1.5)
    >>> r.offsets, r.ids, r.capped
    (array([0, 2, 4]), array([0, 1, 1, 0]), 0)
    >>> r.values
    array([0., 1., 0., 1.], dtype=float32)
    """
    ctx = A.context(context, device, threads, None)
    Qh, Xh = A.to_host(Q, "Q"), A.to_host(X, "X")
    try:
        rad = float(radius)
    except (TypeError, ValueError):
        raise ValueError(f"radius must be a number, got {radius!r}") from None
    if not (math.isfinite(rad) and rad >= 0):
        raise ValueError(f"radius must be finite and >= 0, got {radius}")
    cap = A.integer(max_neighbors, "max_neighbors")
    if cap < 0:
        raise ValueError(f"max_neighbors must be >= 0 (0: no cap), got {cap}")
    r = cast(Dict[str, Any], _simkit.radius_search(Qh, Xh, rad, A.text(metric, "metric"), cap, ctx))
    # int64 arrays from the module carry NumPy's 'long long' type code; a view as np.int64 (no
    # copy) makes them print and compare like any other int64 array.
    return RadiusResult(r["offsets"].view(np.int64), r["ids"].view(np.int64), r["values"], int(r["capped"]))


GaussReport = Dict[str, Union[str, int, float]]


def gauss(
    X: Any,
    Y: Any,
    h: float,
    weights: Any = None,
    method: str = "auto",
    eps: float = 1e-6,
    *,
    ifgt_clusters: int = 0,
    ifgt_order: int = 0,
    return_report: bool = False,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Any:
    """The Gauss transform G[j] = sum_i w_i exp(-||Y[j] - X[i]||^2 / h^2), float64.

    X: sources (n x d); Y: targets (m x d); weights: n values (default all 1), read on the host
    in float64. method: 'direct' (every pair, exact to rounding), 'ifgt' (the Improved Fast
    Gauss Transform, |error| <= eps * sum|w| guaranteed) or 'auto' (ifgt where its predicted
    cost wins). ifgt_clusters / ifgt_order fix the IFGT's K and p instead (the bound is then
    whatever they give; see the report). The result (m values) lives where Y lives.
    With return_report=True, returns (G, report): the method that ran, K, p, the cut-off
    radius and the error bound.

    Raises ValueError for h <= 0, eps outside (0, 1), weights of the wrong length, NaN/Inf.

    >>> import numpy as np, simkit
    >>> x = np.random.default_rng(1).random((5000, 3), dtype=np.float32)
    >>> G = simkit.gauss(x, x[:10], h=0.3)
    >>> G.shape, G.dtype
    ((10,), dtype('float64'))
    """
    ctx = A.context(context, device, threads, gpu_memory)
    Xa, Ya = A.array_in(X, "X"), A.array_in(Y, "Y")
    w = None if weights is None else A.to_host(weights, "weights", np.float64, 1)
    results = A.Results(Ya, Xa)
    out = results.empty((Ya.shape[0],), "float64")
    report = _simkit.gauss(
        Xa,
        Ya,
        float(h),
        w,
        out,
        A.text(method, "method"),
        float(eps),
        A.integer(ifgt_clusters, "ifgt_clusters"),
        A.integer(ifgt_order, "ifgt_order"),
        ctx,
        results.stream,
    )
    G = results.finish(out)
    return (G, report) if return_report else G


def kde(
    X: Any,
    at: Any,
    bandwidth: Union[str, float] = "scott",
    weights: Any = None,
    method: str = "auto",
    eps: float = 1e-6,
    *,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Any:
    """Gaussian kernel density estimates at the rows of `at`, normalised, float64.

    density(y) = sum_i w_i (2 pi sigma^2)^(-d/2) exp(-||y - X[i]||^2 / (2 sigma^2)), with the
    weights normalised to sum 1 (default 1/n): the Gauss transform with h = sqrt(2) sigma.
    bandwidth: sigma, or 'scott' (n^(-1/(d+4)) s) or 'silverman' ((4/(d+2))^(1/(d+4)) n^(-1/(d+4)) s),
    s being the mean over dimensions of the sample standard deviation of X. method and eps as
    in `gauss` (eps is relative to the largest possible density). The same as `simkit kde`.

    >>> import numpy as np, simkit
    >>> x = np.random.default_rng(2).standard_normal((20000, 1)).astype(np.float32)
    >>> p = simkit.kde(x, np.zeros((1, 1), np.float32))
    >>> abs(p[0] - 1 / np.sqrt(2 * np.pi)) < 0.01
    True
    """
    Xa = A.array_in(X, "X")
    n, d = Xa.shape
    if isinstance(bandwidth, str):
        if bandwidth not in ("scott", "silverman"):
            raise ValueError(f"bandwidth must be a number (sigma), 'scott' or 'silverman', got '{bandwidth}'")
        sigma = _simkit.kde_bandwidth(A.to_host(Xa, "X"), bandwidth)
    else:
        sigma = float(bandwidth)
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"bandwidth must be a finite sigma > 0, got {bandwidth}")
    if weights is None:
        w = np.full(n, 1.0 / n)
    else:
        w = A.to_host(weights, "weights", np.float64, 1)
        if w.shape[0] != n:
            raise ValueError(f"weights holds {w.shape[0]} values but X has {n} rows")
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite and >= 0")
        total = float(w.sum())
        if not total > 0:
            raise ValueError("weights sum to 0")
        w = w / total
    density = gauss(
        Xa,
        at,
        math.sqrt(2.0) * sigma,
        w,
        method,
        eps,
        context=context,
        device=device,
        threads=threads,
        gpu_memory=gpu_memory,
    )
    density *= math.exp(-0.5 * d * math.log(2.0 * math.pi * sigma * sigma))
    return density
