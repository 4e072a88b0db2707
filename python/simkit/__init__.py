"""simkit: similarity search, exact and approximate nearest neighbours, k-means, Gauss
transforms, softened n-body gravity and parallel primitives on NVIDIA GPUs and CPUs.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).standard_normal((100000, 128), dtype=np.float32)
    >>> D, I = simkit.knn(X[:10], X, k=5)                  # exact, FAISS's shapes
    >>> P = np.random.default_rng(1).random((100000, 3), dtype=np.float32)
    >>> r = simkit.radius_search(P[:10], P, 0.02)          # fixed radius, CSR (low d)
    >>> index = simkit.Index("ivf_flat,nlist=256", 128)    # approximate
    >>> index.train(X); index.add(X)
    >>> D, I = index.search(X[:10], 5, nprobe=16)

Arrays: NumPy (or anything numpy.asarray takes) and DLPack arrays (torch, CuPy, JAX) on the
host or a GPU, read in place; results come back in the framework and on the device of the
queries. Run settings: every function takes ``device='auto'|'cpu'|'gpu'``, ``threads=0``
(all), ``gpu_memory=None`` (bytes) or ``context=simkit.Context(...)``.

Errors: ValueError for bad input (naming the argument), OSError for files, MemoryError when
memory runs out, RuntimeError for the GPU or what this build cannot do. Ctrl-C interrupts a
long call between tiles with KeyboardInterrupt.
"""

from __future__ import annotations

import os as _os
import platform as _platform

import numpy as _np  # noqa: F401 - loaded first, so that its own BLAS makes its own choice


def _pick_blas_kernels() -> bool:
    # Debian 12's OpenBLAS 0.3.21 falls back to its generic SSE3 kernels ("Prescott", sgemm
    # ~2.5x slower) on CPUs newer than it knows. It reads OPENBLAS_CORETYPE once, when it
    # loads: set it for that moment from the CPU's features (a user's own value is kept), and
    # take it back after, so that child processes see the environment they were given.
    if "OPENBLAS_CORETYPE" in _os.environ or _platform.machine() != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    core = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    if core is None:
        return False
    _os.environ["OPENBLAS_CORETYPE"] = core
    return True


_blas_forced = _pick_blas_kernels()
from . import _simkit  # noqa: E402 - after the BLAS choice above

if _blas_forced:
    del _os.environ["OPENBLAS_CORETYPE"]

from ._clustering import KcenterResult, KmeansResult, kcenter, kmeans  # noqa: E402
from ._compute import RadiusResult, gauss, kde, knn, pairwise, radius_search  # noqa: E402
from ._index import Index  # noqa: E402
from ._io import read, write  # noqa: E402
from ._nbody import nbody_accel, nbody_diagnostics, nbody_initial, nbody_run  # noqa: E402
from ._primitives import merge, scan, segmented_scan, select_k, sort, spmv_csr  # noqa: E402

Context = _simkit.Context
built_with_cuda = _simkit.built_with_cuda
build_info = _simkit.build_info
blas_kernels = _simkit.blas_kernels
gpus = _simkit.gpus
__version__: str = _simkit.version()

METRICS = ("sqeuclidean", "l2", "l1", "dot", "cosine", "pearson")

__all__ = [
    "Context",
    "Index",
    "KcenterResult",
    "KmeansResult",
    "METRICS",
    "RadiusResult",
    "__version__",
    "blas_kernels",
    "build_info",
    "built_with_cuda",
    "gauss",
    "gpus",
    "kcenter",
    "kde",
    "kmeans",
    "knn",
    "merge",
    "nbody_accel",
    "nbody_diagnostics",
    "nbody_initial",
    "nbody_run",
    "pairwise",
    "radius_search",
    "read",
    "scan",
    "segmented_scan",
    "select_k",
    "sort",
    "spmv_csr",
    "write",
]
