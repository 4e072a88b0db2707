"""How arrays cross into simkit and results come back.

Inputs: NumPy arrays (and anything ``numpy.asarray`` accepts) on the host; any object with
``__dlpack__`` (PyTorch, CuPy, JAX, ...) where it lives, host or GPU, read in place. What simkit
cannot read in place is converted here with one copy, as the docstrings say: other float or
integer types become float32, non-contiguous arrays become contiguous. Results are allocated in
the framework of the argument they follow (NumPy for host inputs that are not tensors, a torch
tensor on the same GPU for a CUDA tensor, ...), and simkit writes into them directly.

Streams: for torch and CuPy arrays on a GPU, simkit's work is queued on the framework's current
stream, so it is ordered after the work that produced the inputs and before what the caller
queues next; like any torch or CuPy operation, the call may return before the GPU is done.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _simkit

# DLPack device types of GPU memory: CUDA, CUDA managed.
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13

_default_context: Optional[_simkit.Context] = None


def optional_module(name: str) -> Any:
    """A framework module (torch, cupy, jax), imported when an array of it shows up; typed Any
    because the package does not depend on any of them."""
    return importlib.import_module(name)


#: A device keyword: 'cpu', 'gpu', 'auto', 'gpu:1', 'gpu:0,1', 'gpu:all' (or PyTorch's 'cuda...'
#: spelling), or a list of GPU ids to split the work over.
DeviceName = Union[str, Sequence[int]]


def device_name(device: Any) -> str:
    """A device keyword as simkit.Context reads it: a name ('cpu', 'cuda:all', 'gpu:0,1'), or a
    list of GPU ids, which splits the work over those GPUs."""
    if isinstance(device, (list, tuple)):
        if not device or not all(isinstance(g, int) and not isinstance(g, bool) for g in device):
            raise ValueError(f"device: a list of GPU ids must hold ints, got {device!r}")
        return "gpu:" + ",".join(str(g) for g in device)
    return text(device, "device")


def context(
    ctx: Optional[_simkit.Context],
    device: Any,
    threads: Optional[int],
    gpu_memory: Optional[int],
) -> _simkit.Context:
    """The Context of one call: `ctx` (or the default one) with the keywords given laid over it."""
    global _default_context
    if ctx is None and device is None and threads is None and gpu_memory is None:
        if _default_context is None:
            _default_context = _simkit.Context()
        return _default_context
    if ctx is not None and not isinstance(ctx, _simkit.Context):
        raise ValueError(f"context must be a simkit.Context, got {type(ctx).__name__}")
    base = ctx if ctx is not None else _simkit.Context()
    return _simkit.Context(
        device=base.device if device is None else device_name(device),
        threads=base.threads if threads is None else integer(threads, "threads"),
        gpu_memory=base.gpu_memory if gpu_memory is None else integer(gpu_memory, "gpu_memory"),
        gpu_id=base.gpu_id,
    )


CONTEXT_KEYWORDS = ("context", "device", "threads", "gpu_memory")


def context_from_keywords(kw: Dict[str, Any]) -> _simkit.Context:
    """The Context from a function's **kw, which may hold only CONTEXT_KEYWORDS."""
    unknown = sorted(set(kw) - set(CONTEXT_KEYWORDS))
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {', '.join(unknown)}; the run settings are {', '.join(CONTEXT_KEYWORDS)}"
        )
    return context(kw.get("context"), kw.get("device"), kw.get("threads"), kw.get("gpu_memory"))


def framework(x: Any) -> str:
    """'numpy', 'torch', 'cupy', 'dlpack' (another framework) or 'other'."""
    t = type(x)
    if t is np.ndarray:
        return "numpy"
    module = t.__module__
    if module.startswith("torch"):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return "dlpack"
    return "other"


def on_gpu(x: Any) -> bool:
    fw = framework(x)
    if fw == "torch":
        return bool(x.is_cuda)
    if fw == "cupy":
        return True
    if fw == "dlpack":
        return int(x.__dlpack_device__()[0]) in (_DL_CUDA, _DL_CUDA_MANAGED)
    return False


def _stream_of(x: Any) -> int:
    """The raw CUDA stream of x's framework on x's GPU, or 0 (simkit's own, synchronised)."""
    fw = framework(x)
    if fw == "torch":
        return int(optional_module("torch").cuda.current_stream(x.device).cuda_stream)
    if fw == "cupy":
        cupy = optional_module("cupy")
        with cupy.cuda.Device(x.device.id):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


class Results:
    """Where one call's results go, worked out once per call: arrays allocated in the framework
    and on the device of `like` (the argument the results follow), and the stream of the first
    GPU array among `like` and `others` (0: none, simkit's own streams)."""

    __slots__ = ("like", "fw", "stream")

    def __init__(self, like: Any, *others: Any) -> None:
        self.like = like
        self.fw = framework(like)
        gpu = next((a for a in (like, *others) if on_gpu(a)), None)
        self.stream = 0 if gpu is None else _stream_of(gpu)

    def empty(self, shape: Tuple[int, ...], dtype: str) -> Any:
        """Uninitialised, in like's framework where simkit can allocate there (NumPy, torch,
        CuPy); for a Foreign array, a simkit-owned DLPack buffer that `finish` hands over."""
        if self.fw == "torch":
            torch = optional_module("torch")
            return torch.empty(shape, dtype=getattr(torch, dtype), device=self.like.device)
        if self.fw == "cupy":
            cupy = optional_module("cupy")
            with cupy.cuda.Device(self.like.device.id):
                return cupy.empty(shape, dtype=dtype)
        if isinstance(self.like, Foreign):
            cols = shape[1] if len(shape) == 2 else 1
            return _simkit.device_empty(shape[0], cols, dtype, self.like.gpu_id, len(shape))
        return np.empty(shape, dtype=dtype)

    def finish(self, out: Any) -> Any:
        """A result from `empty`, as an array of like's framework."""
        if not isinstance(self.like, Foreign):
            return out
        if self.like.module in ("jax", "jaxlib"):
            return optional_module("jax.dlpack").from_dlpack(out)
        from_dlpack = getattr(optional_module(self.like.module), "from_dlpack", None)
        return from_dlpack(out) if from_dlpack is not None else out


_FLOAT_KINDS = "fiub"


def _numpy_input(x: Any, name: str, dtype: Any, ndim: int) -> np.ndarray:
    if x is None:
        raise ValueError(f"{name} is None; expected a {ndim}-D array")
    try:
        a = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - whatever asarray chokes on, the message says why
        raise ValueError(f"{name} cannot be read as an array: {e}") from None
    if a.dtype.kind not in _FLOAT_KINDS:
        raise ValueError(f"{name} must hold numbers, got dtype {a.dtype}")
    if a.dtype != dtype or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=dtype)
    return a


def _check_ndim(shape: Tuple[int, ...], name: str, ndim: int) -> None:
    if len(shape) == ndim:
        return
    hint = ""
    if ndim == 2 and len(shape) == 1:
        hint = f"; for a single vector use {name}.reshape(1, -1) (or {name}[None, :])"
    raise ValueError(f"{name} must be {ndim}-D, got {len(shape)}-D with shape {tuple(shape)}{hint}")


def _torch_input(x: Any, name: str, dtype: Any) -> Any:
    torch = optional_module("torch")
    want = getattr(torch, np.dtype(dtype).name)
    if x.dtype.is_complex or x.dtype == torch.bool:
        raise ValueError(f"{name} must hold real numbers, got {x.dtype}")
    if x.dtype != want:
        x = x.to(want)
    return x.contiguous()


def _cupy_input(x: Any, name: str, dtype: Any) -> Any:
    cupy = optional_module("cupy")
    if x.dtype.kind not in _FLOAT_KINDS:
        raise ValueError(f"{name} must hold numbers, got dtype {x.dtype}")
    return cupy.ascontiguousarray(x, dtype=dtype)


def array_in(x: Any, name: str, dtype: Any = np.float32, ndim: int = 2, allow_empty: bool = False) -> Any:
    """x as an array simkit reads in place: C-contiguous `dtype` with `ndim` axes."""
    fw = framework(x)
    if fw == "numpy" and x.dtype == dtype and x.ndim == ndim and x.flags.c_contiguous:
        a: Any = x  # the fast path: nothing to check that simkit does not check itself
    elif fw == "torch":
        _check_ndim(tuple(x.shape), name, ndim)
        a = _torch_input(x, name, dtype)
    elif fw == "cupy":
        _check_ndim(tuple(x.shape), name, ndim)
        a = _cupy_input(x, name, dtype)
    elif fw == "dlpack" and on_gpu(x):
        a = foreign(x)
    else:
        a = _numpy_input(x, name, dtype, ndim)
        _check_ndim(a.shape, name, ndim)
    if not allow_empty and ndim == 2 and (a.shape[0] == 0 or a.shape[1] == 0):
        raise ValueError(f"{name} is empty (shape {tuple(a.shape)}); need at least one row and one column")
    if not allow_empty and ndim == 1 and a.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    return a


def host_copy(x: Any, name: str) -> Any:
    """x itself when NumPy can read it where it is, else a host copy (torch, CuPy on a GPU)."""
    fw = framework(x)
    if fw == "torch":
        return x.detach().cpu().numpy()
    if fw == "cupy":
        return x.get()
    if fw == "dlpack" and on_gpu(x):
        raise ValueError(f"{name} is on a GPU in a framework simkit cannot copy from; pass a host array")
    return x


class Foreign:
    """A GPU array of a framework simkit does not know, passed through by DLPack, with the
    shape and dtype name (read once through DLPack) that the Python layer sizes results by."""

    def __init__(self, array: Any) -> None:
        self.array = array
        shape, self.dtype = _simkit.array_info(array)
        self.shape: Tuple[int, ...] = tuple(shape)
        self.module = type(array).__module__.split(".")[0]
        self.gpu_id = int(array.__dlpack_device__()[1])

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()


def foreign(x: Any) -> Foreign:
    """x read as it is (the module checks its type and layout), with its shape."""
    return x if isinstance(x, Foreign) else Foreign(x)


def to_host(x: Any, name: str, dtype: Any = np.float32, ndim: int = 2) -> np.ndarray:
    """x as a host NumPy array of `dtype` (one device-to-host copy for GPU arrays)."""
    result: np.ndarray = array_in(host_copy(x, name), name, dtype, ndim)
    return result


def integer_in(x: Any, name: str, ndim: int = 1) -> Any:
    """Ids and offsets: integer arrays kept integer (float arrays are refused, not rounded)."""
    if x is None:
        raise ValueError(f"{name} is None; expected an integer array")
    fw = framework(x)
    if fw in ("numpy", "other"):
        a = np.asarray(x)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)  # np.asarray([]) is float64
        if a.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold integers, got dtype {a.dtype}")
        _check_ndim(a.shape, name, ndim)
        return np.ascontiguousarray(a, dtype=np.int64)
    _check_ndim(tuple(x.shape), name, ndim)
    return x


def copy_of(x: Any) -> Any:
    """A copy in x's own framework (the primitives work in place on it)."""
    fw = framework(x)
    if fw == "torch":
        return x.clone()
    if fw in ("cupy", "numpy"):
        return x.copy()
    raise ValueError("simkit cannot copy this array; pass a NumPy, torch or CuPy array")


def integer(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    return int(v)


def text(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a string, got {v!r}")
    return v


def positive_int(v: Any, name: str) -> int:
    n = integer(v, name)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n
