"""k-means and k-center."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Union, cast

import numpy as np
import numpy.typing as npt

from . import _arrays as A
from . import _simkit


@dataclass(frozen=True)
class KmeansResult:
    """What `kmeans` returns."""

    centroids: npt.NDArray[np.float32]  #: k x d
    labels: npt.NDArray[np.int64]  #: n: each point's nearest centroid (float64 exact, ties to the lower id)
    inertia: float  #: sum of squared distances (cosine: of 1 - similarity) at `centroids`
    iterations: int  #: Lloyd updates made
    history: npt.NDArray[np.float64]  #: the training inertia after each assignment
    empty_reseeded: int  #: clusters that emptied and were re-seeded
    points_ranked_exactly: int  #: assignments the fast product could not settle


@dataclass(frozen=True)
class KcenterResult:
    """What `kcenter` returns."""

    centers: npt.NDArray[np.float32]  #: k x d rows of X, in the order chosen
    ids: npt.NDArray[np.int64]  #: k: which rows
    labels: npt.NDArray[np.int64]  #: n: each point's nearest center
    radius: float  #: the largest distance of a point to its nearest center


def kmeans(
    X: Any,
    k: int,
    metric: str = "sqeuclidean",
    *,
    init: Union[str, Any] = "kmeans++",
    iterations: int = 25,
    tol: float = 1e-4,
    seed: int = 0,
    sample: int = 0,
    context: Optional[_simkit.Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> KmeansResult:
    """Lloyd's k-means on the rows of X (n x d), on the CPU or the GPU.

    metric: 'sqeuclidean' or 'cosine' (spherical k-means). init: 'kmeans++', 'random' or a
    k x d array of starting centroids. Stops after `iterations` updates or once an update
    lowers the inertia by less than `tol` of it. sample > 0 trains on that many rows drawn with
    `seed`; the labels still cover every row. Labels are the float64 nearest centroid, and the
    same seed gives the same centroids bit for bit on the CPU and the GPU. X is read on the
    host: a GPU array is copied over once. Results are NumPy arrays.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).standard_normal((5000, 16), dtype=np.float32)
    >>> r = simkit.kmeans(X, 8, seed=1)
    >>> r.centroids.shape, r.labels.shape
    ((8, 16), (5000,))
    """
    ctx = A.context(context, device, threads, gpu_memory)
    Xh = A.to_host(X, "X")
    initial = None
    init_name = "given"
    if isinstance(init, str):
        init_name = init
    else:
        initial = A.to_host(init, "init")
    r = _simkit.kmeans(
        Xh,
        A.positive_int(k, "k"),
        A.text(metric, "metric"),
        init_name,
        initial,
        A.integer(iterations, "iterations"),
        float(tol),
        _seed(seed),
        A.integer(sample, "sample"),
        ctx,
    )
    return KmeansResult(**cast(Dict[str, Any], r))


def kcenter(
    X: Any,
    k: int,
    *,
    seed: int = 0,
    context: Optional[_simkit.Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> KcenterResult:
    """Farthest-point k-center (Gonzalez): a radius within 2x of the best possible.

    The seed draws the first center; each next one is the row farthest from those chosen
    (ties: the lower row). Euclidean. X is read on the host; results are NumPy arrays.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).random((2000, 2), dtype=np.float32)
    >>> r = simkit.kcenter(X, 16)
    >>> r.centers.shape, float(r.radius) < 0.3
    ((16, 2), True)
    """
    ctx = A.context(context, device, threads, gpu_memory)
    r = _simkit.kcenter(A.to_host(X, "X"), A.positive_int(k, "k"), _seed(seed), ctx)
    return KcenterResult(**cast(Dict[str, Any], r))


def _seed(seed: Any) -> int:
    s = A.integer(seed, "seed")
    if s < 0 or s >= 2**64:
        raise ValueError(f"seed must be in [0, 2^64), got {s}")
    return s
