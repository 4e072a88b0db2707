"""Softened Newtonian gravity (nbody.hpp): accelerations and potentials of point masses, initial
conditions, conserved quantities and a leapfrog integrator."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

from . import _arrays as A
from . import _simkit

Context = _simkit.Context
F32 = npt.NDArray[np.float32]

_METHODS = ("direct", "bh")


def nbody_accel(
    bodies: Any,
    *,
    targets: Any = None,
    G: float = 1.0,
    softening: float = 0.0,
    method: str = "direct",
    theta: float = 0.5,
    quadrupole: bool = False,
    potential: bool = False,
    costs: Optional[npt.NDArray[np.int64]] = None,
    report: Optional[Dict[str, Any]] = None,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Any:
    """Gravitational accelerations of softened point masses, float32, m x 3.

        accel(x)     = G sum_j m_j (x_j - x) / (|x_j - x|^2 + softening^2)^(3/2)
        potential(x) = -G sum_j m_j / sqrt(|x_j - x|^2 + softening^2)

    bodies: n x 4 rows (x, y, z, mass), masses >= 0. Without `targets`, every body feels all the
    others (m = n); with targets (m x 3 rows x, y, z) the bodies' field is taken there instead.
    A pair at distance zero contributes nothing (a body and itself, a target on a body). Arrays
    as in `simkit.knn`: NumPy or DLPack (torch, CuPy) on the host or a GPU, other number types
    converted to float32 with one copy; the results live where the targets (else the bodies)
    live, in their framework. With potential=True, returns (accel, potential), potential being
    m float32 values.

    method: 'direct' (every pair, float32, CPU or GPU) or 'bh' (Barnes-Hut: a tree whose cells
    seen under an angle below `theta` count as one mass; theta=0 opens every cell; on the CPU an
    octree walked per group of nearby targets, on the GPU a binary radix tree walked by warps of
    up to 32 nearby targets; device='auto' runs it where the arrays are). quadrupole (bh, CPU
    only): add each accepted cell's quadrupole moment (about 3x less error at theta 0.5). costs
    (bh): a host int64 NumPy array of m values, the per-target work of the previous call (all
    zero at first), used on the CPU to split the targets over threads by equal work, and
    overwritten with this call's. A dict passed as `report` receives 'interactions' (pair and
    cell interactions in all), 'threads', 'imbalance' (max / mean thread work under the split
    used) and 'imbalance_equal_count' (the same under an equal-count split), 'build_ms' and
    'walk_ms' (bh: tree construction and walk), 'groups' and 'nodes_tested' (bh on the GPU: the
    groups of targets walked together and the node tests they made).

    Raises ValueError for bodies that are not n x 4, targets that are not m x 3, NaN/Inf, a
    negative mass, G <= 0, a negative softening or theta, an unknown method; RuntimeError for
    quadrupole=True on the GPU.

    >>> import numpy as np, simkit
    >>> B = np.array([[0, 0, 0, 1], [1, 0, 0, 1]], np.float32)
    >>> simkit.nbody_accel(B)
    array([[ 1.,  0.,  0.],
           [-1.,  0.,  0.]], dtype=float32)
    >>> a, phi = simkit.nbody_accel(B, targets=[[0.5, 0, 0]], potential=True)
    >>> phi
    array([-4.], dtype=float32)
    """
    ctx = A.context(context, device, threads, gpu_memory)
    name = A.text(method, "method")
    if name not in _METHODS:
        raise ValueError(f"method must be 'direct' (every pair) or 'bh' (Barnes-Hut), got '{name}'")
    Ba = A.array_in(bodies, "bodies")
    Ta = None if targets is None else A.array_in(targets, "targets")
    like = Ba if Ta is None else Ta
    if quadrupole and ctx.device == "auto" and not (A.on_gpu(Ba) or A.on_gpu(like)):
        ctx = Context(device="cpu", threads=ctx.threads, gpu_memory=ctx.gpu_memory, gpu_id=ctx.gpu_id)
    counts = None if costs is None else _costs(costs)
    m = like.shape[0]
    results = A.Results(like, Ba)
    accel = results.empty((m, 3), "float32")
    phi = results.empty((m,), "float32") if potential else None
    r = _simkit.nbody_accel(
        Ba,
        Ta,
        float(G),
        float(softening),
        name,
        float(theta),
        bool(quadrupole),
        accel,
        phi,
        counts,
        ctx,
        results.stream,
    )
    if report is not None:
        report.update(r)
    if phi is not None:
        return results.finish(accel), results.finish(phi)
    return results.finish(accel)


def nbody_initial(kind: str, n: int, seed: int = 0) -> Tuple[F32, F32]:
    """Initial conditions: ``bodies, velocities = simkit.nbody_initial('plummer', n)``.

    bodies: n x 4 float32 (x, y, z, mass), velocities: n x 3 float32, NumPy; total mass 1, the
    centre of mass at rest at the origin, units where G = 1; the same seed gives the same bits.
    kind: 'plummer' (a Plummer sphere in Henon units: virial radius 1, energy -1/4),
    'uniform' (a cold ball, uniform in the unit sphere, at rest) or 'collision' (two Plummer
    spheres of n/2 bodies, 6 apart on x, falling towards each other).

    Raises ValueError for another kind, n < 2 (collision: n < 4), a seed outside [0, 2^64).

    >>> B, V = simkit.nbody_initial("plummer", 1000, seed=1)
    >>> B.shape, V.shape, round(float(B[:, 3].sum()), 6)
    ((1000, 4), (1000, 3), 1.0)
    """
    s = A.integer(seed, "seed")
    if s < 0 or s >= 2**64:
        raise ValueError(f"seed must be in [0, 2^64), got {s}")
    bodies, velocities = _simkit.nbody_initial(A.text(kind, "kind"), A.integer(n, "n"), s)
    return bodies, velocities


def nbody_diagnostics(
    bodies: Any,
    velocities: Any,
    *,
    G: float = 1.0,
    softening: float = 0.0,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> Dict[str, Any]:
    """What an integration conserves, in float64, as a dict: 'kinetic' (sum m v^2 / 2),
    'potential' (sum m phi / 2, the softened potential of `nbody_accel`), 'total' (their sum)
    and 'momentum' (a 3-tuple, sum m v).

    bodies: n x 4 (x, y, z, mass); velocities: n x 3. Read on the host (GPU arrays are copied
    over once); the potentials are summed on `device`.

    >>> B = np.array([[-0.5, 0, 0, 0.5], [0.5, 0, 0, 0.5]], np.float32)
    >>> V = np.array([[0, -0.5, 0], [0, 0.5, 0]], np.float32)
    >>> d = simkit.nbody_diagnostics(B, V)
    >>> d["kinetic"], d["potential"], d["total"]
    (0.125, -0.25, -0.125)
    """
    ctx = A.context(context, device, threads, gpu_memory)
    Bh, Vh = A.to_host(bodies, "bodies"), A.to_host(velocities, "velocities")
    r: Dict[str, Any] = dict(_simkit.nbody_diagnostics(Bh, Vh, float(G), float(softening), ctx))
    return r


def nbody_run(
    bodies: npt.NDArray[np.float32],
    velocities: npt.NDArray[np.float32],
    *,
    dt: float,
    steps: int,
    G: float = 1.0,
    softening: float = 0.0,
    every: int = 0,
    context: Optional[Context] = None,
    device: Optional[A.DeviceName] = None,
    threads: Optional[int] = None,
    gpu_memory: Optional[int] = None,
) -> List[Dict[str, Any]]:
    """`steps` leapfrog steps of `dt` (kick-drift-kick: second order and symplectic, so the
    energy error oscillates rather than grows), updating `bodies` (n x 4: x, y, z, mass; the
    positions change) and `velocities` (n x 3) in place.

    Both must be writable, C-contiguous float32 NumPy arrays (ValueError otherwise: an in-place
    update of a converted copy would be lost). The accelerations are summed on `device`
    (method 'direct'). With every > 0, returns the `nbody_diagnostics` of the start and of every
    `every`-th step, each dict with its 'step' added; with every = 0, an empty list.

    >>> B = np.array([[-0.5, 0, 0, 0.5], [0.5, 0, 0, 0.5]], np.float32)
    >>> V = np.array([[0, -0.5, 0], [0, 0.5, 0]], np.float32)
    >>> log = simkit.nbody_run(B, V, dt=2 * np.pi / 1000, steps=1000, every=500)
    >>> [d["step"] for d in log]
    [0, 500, 1000]
    >>> abs(log[-1]["total"] / log[0]["total"] - 1) < 1e-4
    True
    """
    ctx = A.context(context, device, threads, gpu_memory)
    _in_place(bodies, "bodies")
    _in_place(velocities, "velocities")
    taken = _simkit.nbody_run(
        bodies,
        velocities,
        float(dt),
        A.integer(steps, "steps"),
        float(G),
        float(softening),
        A.integer(every, "every"),
        ctx,
    )
    return [dict(d) for d in taken]


def _in_place(x: Any, name: str) -> None:
    """The arrays nbody_run updates: used as they are, never converted."""
    if not isinstance(x, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array (updated in place), got {type(x).__name__}")
    if x.dtype != np.float32 or x.ndim != 2 or not x.flags.c_contiguous:
        raise ValueError(
            f"{name} must be a 2-D C-contiguous float32 NumPy array (updated in place), got {x.ndim}-D "
            f"{x.dtype}{'' if x.flags.c_contiguous else ', not C-contiguous'}; "
            f"convert it first (np.ascontiguousarray({name}, dtype=np.float32))"
        )
    if not x.flags.writeable:
        raise ValueError(f"{name} is read-only; nbody_run updates it in place")


def _costs(x: Any) -> npt.NDArray[np.int64]:
    """The cost-zone counts: a host int64 NumPy array, updated in place, never converted."""
    if not isinstance(x, np.ndarray) or x.dtype != np.int64 or x.ndim != 1 or not x.flags.c_contiguous:
        raise ValueError(
            "costs must be a 1-D C-contiguous int64 NumPy array (updated in place), e.g. "
            f"np.zeros(m, np.int64); got {type(x).__name__} {getattr(x, 'dtype', '')}".rstrip()
        )
    if not x.flags.writeable:
        raise ValueError("costs is read-only; it is updated in place")
    return x
