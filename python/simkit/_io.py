"""Reading and writing point sets and ids in the formats the simkit command line uses."""

from __future__ import annotations

import os
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from . import _arrays as A
from . import _simkit

PathLike = Union[str, "os.PathLike[str]"]


def read(path: PathLike) -> npt.NDArray[Any]:
    """Reads a matrix: .npy, .fvecs, .bvecs -> float32 (n x d); .ivecs, integer .npy -> int64.

    Every header is checked against the file's size: a missing, truncated or lying file raises
    OSError naming the file and the problem; a 1-D .npy is read as one column.

    >>> import simkit
    >>> X = simkit.read("base.fvecs")          # doctest: +SKIP
    """
    p = os.fspath(path)
    ext = os.path.splitext(p)[1].lower()
    if ext == ".ivecs" or (ext == ".npy" and _npy_is_integer(p)):
        return _simkit.read_ids(p)
    return _simkit.read_matrix(p)


def write(path: PathLike, array: Any) -> None:
    """Writes atomically (a temporary file beside `path`, then a rename).

    Float arrays go to .npy (float32), .fvecs or .bvecs (integers 0..255 only); integer arrays
    to .npy (int64) or .ivecs (int32). 1-D arrays are written as one column.

    >>> simkit.write("ids.ivecs", I)              # doctest: +SKIP
    """
    p = os.fspath(path)
    if array is None:
        raise ValueError("array is None")
    a = A.host_copy(array, "array")
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"array must be 1-D or 2-D, got {a.ndim}-D")
    if a.dtype.kind in "iu":
        _simkit.write_ids(p, np.ascontiguousarray(a, dtype=np.int64))
    elif a.dtype.kind in "fb":
        _simkit.write_matrix(p, np.ascontiguousarray(a, dtype=np.float32))
    else:
        raise ValueError(f"array must hold numbers, got dtype {a.dtype}")


def _npy_is_integer(path: str) -> bool:
    try:
        kind = np.load(path, mmap_mode="r", allow_pickle=False).dtype.kind
    except Exception:  # noqa: BLE001 - simkit's reader then says what is wrong with the file
        return False
    return bool(kind in "iu")
