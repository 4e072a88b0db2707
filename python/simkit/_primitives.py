"""The parallel primitives: scan, segmented scan, sort, merge, top-k selection, CSR SpMV.

Each returns new arrays in the framework and on the device of its input (NumPy on the host,
torch or CuPy where they live), as NumPy's and torch's functions do; the work runs on the
device the arrays are on (or `device=`). Integer sums wrap around; float order puts NaN last
(NumPy's rule); every sort and merge is stable. primitives.hpp describes the algorithms.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _arrays as A
from . import _simkit

_VALUE_TYPES = ("int32", "int64", "float32", "float64")
_KEY_TYPES = ("int32", "int64", "float32")


def _dtype_name(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _vector(x: Any, name: str, allowed: Tuple[str, ...]) -> Any:
    """A 1-D contiguous array of one of the `allowed` types, in x's framework."""
    if x is None:
        raise ValueError(f"{name} is None; expected a 1-D array")
    fw = A.framework(x)
    if fw == "torch":
        v = x.contiguous()
    elif fw == "cupy":
        v = A.optional_module("cupy").ascontiguousarray(x)
    elif fw == "dlpack" and A.on_gpu(x):
        v = A.foreign(x)
    else:
        v = np.ascontiguousarray(np.asarray(x))
        if (v.dtype == np.bool_ and "bool" not in allowed) or v.dtype.kind not in "iufb":
            raise ValueError(f"{name} must hold numbers, got dtype {v.dtype}")
    if len(v.shape) != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(v.shape)}")
    if _dtype_name(v) not in allowed:
        raise ValueError(f"{name} must hold {', '.join(allowed)}; got {_dtype_name(v)} (convert it first)")
    return v


def _ctx(kw: Dict[str, Any]) -> _simkit.Context:
    return A.context_from_keywords(kw)


def scan(x: Any, op: str = "sum", *, exclusive: bool = False, **kw: Any) -> Any:
    """Prefix scan: out[i] = x[0] op ... op x[i] (exclusive: up to x[i - 1], out[0] = identity).

    op: 'sum', 'product', 'min', 'max'. int32, int64, float32, float64. Deterministic: the same
    input gives the same bits whatever the threads or the GPU's scheduling.

    >>> simkit.scan(np.arange(5, dtype=np.int64))
    array([ 0,  1,  3,  6, 10])
    """
    v = _vector(x, "x", _VALUE_TYPES)
    results = A.Results(v)
    out = results.empty(v.shape, _dtype_name(v))
    if v.shape[0]:
        _simkit.scan(v, out, A.text(op, "op"), bool(exclusive), _ctx(kw), results.stream)
    return results.finish(out)


def segmented_scan(
    x: Any, heads: Any = None, offsets: Any = None, op: str = "sum", *, exclusive: bool = False, **kw: Any
) -> Any:
    """A scan restarted at every segment, given by `heads` (nonzero where a segment starts,
    one per element) or by `offsets` (segment s is x[offsets[s]:offsets[s + 1]], from 0 to len(x)).

    >>> simkit.segmented_scan(np.ones(6, np.int32), offsets=np.array([0, 2, 6]))
    array([1, 2, 1, 2, 3, 4], dtype=int32)
    """
    v = _vector(x, "x", _VALUE_TYPES)
    if (heads is None) == (offsets is None):
        raise ValueError("give exactly one of heads and offsets")
    h = o = None
    if heads is not None:
        h = _vector(heads, "heads", ("uint8", "bool"))
    else:
        o = _vector(offsets, "offsets", ("int32", "int64"))
    results = A.Results(v)
    out = results.empty(v.shape, _dtype_name(v))
    _simkit.segmented_scan(v, h, o, out, A.text(op, "op"), bool(exclusive), _ctx(kw), results.stream)
    return results.finish(out)


def sort(keys: Any, values: Any = None, *, descending: bool = False, **kw: Any) -> Any:
    """Stable sort; returns the sorted keys, or (keys, values) with values carried along.

    keys: int32, int64 or float32 (NaN last ascending, first descending); values: int32,
    int64, float32 or float64 of the same length.

    >>> simkit.sort(np.array([3.0, 1.0, 2.0], np.float32))
    array([1., 2., 3.], dtype=float32)
    """
    k = A.copy_of(_vector(keys, "keys", _KEY_TYPES))
    v = None
    if values is not None:
        v = A.copy_of(_vector(values, "values", _VALUE_TYPES))
        if v.shape[0] != k.shape[0]:
            raise ValueError(f"values has {v.shape[0]} elements but keys has {k.shape[0]}")
    if k.shape[0]:
        _simkit.sort(k, v, bool(descending), _ctx(kw), A.Results(k).stream)
    return k if v is None else (k, v)


def merge(
    a: Any, b: Any, a_values: Any = None, b_values: Any = None, *, descending: bool = False, **kw: Any
) -> Any:
    """Merges sorted a and b (stable: a's equal keys first); returns the keys, or (keys, values).

    >>> simkit.merge(np.array([1, 4], np.int32), np.array([2, 3], np.int32))
    array([1, 2, 3, 4], dtype=int32)
    """
    ka, kb = _vector(a, "a", _KEY_TYPES), _vector(b, "b", _KEY_TYPES)
    if (a_values is None) != (b_values is None):
        raise ValueError("give a_values and b_values together, or neither")
    results = A.Results(ka, kb)
    out = results.empty((ka.shape[0] + kb.shape[0],), _dtype_name(ka))
    va = vb = vo = None
    if a_values is not None:
        va, vb = _vector(a_values, "a_values", _VALUE_TYPES), _vector(b_values, "b_values", _VALUE_TYPES)
        if va.shape[0] != ka.shape[0] or vb.shape[0] != kb.shape[0]:
            raise ValueError("a_values and b_values must be as long as a and b")
        vo = results.empty((va.shape[0] + vb.shape[0],), _dtype_name(va))
    if out.shape[0]:
        _simkit.merge(ka, kb, out, va, vb, vo, bool(descending), _ctx(kw), results.stream)
    return results.finish(out) if vo is None else (results.finish(out), results.finish(vo))


def select_k(x: Any, k: int, *, largest: bool = False, **kw: Any) -> Tuple[Any, Any]:
    """Per row of x (rows x cols, float32), the k smallest (largest=True: largest) values,
    best first, and their column indices (int64); ties to the lower index; NaN never selected
    (a row with fewer than k other values is padded with NaN and -1). Like torch.topk.

    >>> v, i = simkit.select_k(np.array([[3, 1, 2]], np.float32), 2)
    >>> i
    array([[1, 2]])
    """
    xa = A.array_in(x, "x")
    k = A.positive_int(k, "k")
    if k > xa.shape[1]:
        raise ValueError(f"k = {k} exceeds the number of columns of x ({xa.shape[1]})")
    results = A.Results(xa)
    values, ids = results.empty((xa.shape[0], k), "float32"), results.empty((xa.shape[0], k), "int64")
    _simkit.select_k(xa, k, bool(largest), values, ids, _ctx(kw), results.stream)
    return results.finish(values), results.finish(ids)


def spmv_csr(indptr: Any, indices: Any, data: Any, x: Any, *, n_cols: Optional[int] = None, **kw: Any) -> Any:
    """y = A x for A in CSR form (SciPy's csr_matrix.indptr, .indices, .data); n_cols defaults
    to len(x). Products summed in float64, each y[r] rounded once.

    >>> import scipy.sparse as sp                                # doctest: +SKIP
    >>> A = sp.random(1000, 500, density=0.01, format="csr", dtype=np.float32)
    >>> y = simkit.spmv_csr(A.indptr, A.indices, A.data, np.ones(500, np.float32))
    """
    p = _vector(indptr, "indptr", ("int32", "int64"))
    i = _vector(indices, "indices", ("int32", "int64"))
    d = _vector(data, "data", ("float32", "float64"))
    xv = _vector(x, "x", ("float32", "float64"))
    if p.shape[0] < 1:
        raise ValueError("indptr needs at least one entry (rows + 1)")
    cols = xv.shape[0] if n_cols is None else A.integer(n_cols, "n_cols")
    results = A.Results(xv, p)
    y = results.empty((p.shape[0] - 1,), _dtype_name(xv))
    _simkit.spmv_csr(p, i, d, cols, xv, y, _ctx(kw), results.stream)
    return results.finish(y)
