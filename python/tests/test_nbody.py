"""nbody_accel, nbody_initial, nbody_diagnostics and nbody_run against float64 NumPy references,
the documented errors, and a circular two-body orbit integrated for one period."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import simkit

TOL = 1e-5  # of the sum of the pair magnitudes (nbody.hpp's bound for the float32 direct sum)


def _bodies(rng: np.random.Generator, n: int) -> np.ndarray:
    B = np.empty((n, 4), np.float32)
    B[:, :3] = rng.standard_normal((n, 3))
    B[:, 3] = rng.uniform(0.1, 1.0, n)
    return B


def _field64(T: np.ndarray, B: np.ndarray, G: float, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float64 accelerations, potentials and per-target sums of the pair magnitudes of the
    bodies B (n x 4) at the points T (m x 3); pairs at distance zero left out."""
    x, s, mass = T[:, :3].astype(np.float64), B[:, :3].astype(np.float64), B[:, 3].astype(np.float64)
    d = s[None, :, :] - x[:, None, :]  # m x n x 3
    r2 = (d**2).sum(-1)
    apart = r2 > 0
    soft = np.where(apart, r2 + eps * eps, 1.0)
    inv = np.where(apart, 1.0 / np.sqrt(soft), 0.0)
    accel = G * ((mass * inv**3)[:, :, None] * d).sum(1)
    phi = -G * (mass * inv).sum(1)
    scale = G * (mass * np.sqrt(np.where(apart, r2, 0.0)) * inv**3).sum(1)
    return accel, phi, scale


def _worst(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> float:
    return float((np.abs(got.astype(np.float64) - want).max(1) / scale).max())


@pytest.mark.parametrize(("G", "eps"), [(1.0, 0.0), (6.674e-2, 0.05)])
def test_direct_accel_matches_float64(rng: np.random.Generator, G: float, eps: float) -> None:
    B = _bodies(rng, 203)
    a = simkit.nbody_accel(B, G=G, softening=eps, device="cpu")
    assert isinstance(a, np.ndarray) and a.shape == (203, 3) and a.dtype == np.float32
    want, _, scale = _field64(B, B, G, eps)
    assert _worst(a, want, scale) <= TOL


def test_field_at_targets_matches_float64(rng: np.random.Generator) -> None:
    B = _bodies(rng, 157)
    T = rng.standard_normal((61, 3)).astype(np.float32)
    T[7] = B[12, :3]  # a target on a body: that pair contributes nothing
    report: dict[str, Any] = {}
    a = simkit.nbody_accel(B, targets=T, softening=0.01, report=report, device="cpu")
    assert a.shape == (61, 3)
    want, _, scale = _field64(T, B, 1.0, 0.01)
    assert _worst(a, want, scale) <= TOL
    assert report["interactions"] == 61 * 157
    # float64 targets and a list of rows are converted; the bodies' own field is the one-set call
    np.testing.assert_array_equal(simkit.nbody_accel(B, targets=T.astype(np.float64).tolist(), softening=0.01), a)
    np.testing.assert_array_equal(simkit.nbody_accel(B, targets=B[:, :3]), simkit.nbody_accel(B))


def test_potential_only_when_asked(rng: np.random.Generator) -> None:
    B = _bodies(rng, 120)
    a = simkit.nbody_accel(B, softening=0.1)
    assert isinstance(a, np.ndarray)
    out = simkit.nbody_accel(B, softening=0.1, potential=True)
    assert isinstance(out, tuple) and len(out) == 2
    a2, phi = out
    np.testing.assert_array_equal(a2, a)
    assert phi.shape == (120,) and phi.dtype == np.float32
    _, want, scale = _field64(B, B, 1.0, 0.1)
    np.testing.assert_allclose(phi, want, rtol=1e-5)
    T = rng.standard_normal((9, 3)).astype(np.float32)
    _, phi_t = simkit.nbody_accel(B, targets=T, softening=0.1, potential=True)
    np.testing.assert_allclose(phi_t, _field64(T, B, 1.0, 0.1)[1], rtol=1e-5)


def test_barnes_hut_at_theta_zero_is_the_direct_sum(rng: np.random.Generator) -> None:
    B = _bodies(rng, 211)
    direct = simkit.nbody_accel(B, softening=0.02, device="cpu")
    bh = simkit.nbody_accel(B, softening=0.02, method="bh", theta=0.0, device="cpu")
    _, _, scale = _field64(B, B, 1.0, 0.02)
    assert _worst(bh, direct.astype(np.float64), scale) <= TOL
    # device='auto' runs Barnes-Hut on the CPU for host arrays
    np.testing.assert_array_equal(simkit.nbody_accel(B, softening=0.02, method="bh", theta=0.0), bh)
    T = rng.standard_normal((33, 3)).astype(np.float32)
    bh_t = simkit.nbody_accel(B, targets=T, softening=0.02, method="bh", theta=0.0, device="cpu")
    want, _, scale_t = _field64(T, B, 1.0, 0.02)
    assert _worst(bh_t, want, scale_t) <= TOL


def test_barnes_hut_fills_the_costs() -> None:
    B, _ = simkit.nbody_initial("plummer", 2000, seed=5)
    costs = np.zeros(2000, np.int64)
    report: dict[str, Any] = {}
    a = simkit.nbody_accel(B, softening=0.01, method="bh", theta=0.5, costs=costs, report=report, device="cpu")
    assert (costs > 0).all()
    assert int(costs.sum()) == report["interactions"]
    assert report["interactions"] < 2000 * 2000  # cells taken whole
    assert report["threads"] >= 1 and report["imbalance"] >= 1.0 and report["imbalance_equal_count"] >= 1.0
    # The counts are the previous call's work: a second call splits by them, same forces.
    again = simkit.nbody_accel(B, softening=0.01, method="bh", theta=0.5, costs=costs, report=report, device="cpu")
    np.testing.assert_allclose(again, a, rtol=1e-6, atol=1e-6 * float(np.abs(a).max()))
    want, _, scale = _field64(B, B, 1.0, 0.01)
    assert _worst(a, want, scale) < 0.05  # the monopole approximation at theta 0.5
    # Quadrupoles cut the median force error (relative to |a|) at the same theta.
    q = simkit.nbody_accel(B, softening=0.01, method="bh", theta=0.5, quadrupole=True, device="cpu")
    norm = np.linalg.norm(want, axis=1)
    mono_err = np.median(np.linalg.norm(a - want, axis=1) / norm)
    quad_err = np.median(np.linalg.norm(q - want, axis=1) / norm)
    assert quad_err < mono_err
    assert "build_ms" in report and "walk_ms" in report


NAN = np.ones((5, 4), np.float32)
NAN[2, 1] = np.nan
NEGATIVE = np.ones((5, 4), np.float32)
NEGATIVE[3, 3] = -1.0
GOOD = np.arange(20, dtype=np.float32).reshape(5, 4)
FLOAT_COSTS: Any = np.zeros(5)  # wrong on purpose: typed Any so that the calls type-check
LIST_VELOCITIES: Any = np.zeros((5, 3)).tolist()

# (what, call, a phrase the ValueError's message must hold)
BAD: list[tuple[str, Callable[[], Any], str]] = [
    ("n x 3", lambda: simkit.nbody_accel(np.ones((5, 3), np.float32)), "fourth column"),
    ("negative mass", lambda: simkit.nbody_accel(NEGATIVE), "mass"),
    ("NaN", lambda: simkit.nbody_accel(NAN), "finite"),
    ("NaN target", lambda: simkit.nbody_accel(GOOD, targets=[[0, np.nan, 0]]), "targets"),
    ("targets n x 4", lambda: simkit.nbody_accel(GOOD, targets=GOOD), "targets"),
    ("no bodies", lambda: simkit.nbody_accel(np.ones((0, 4), np.float32)), "bodies"),
    ("G = 0", lambda: simkit.nbody_accel(GOOD, G=0.0), "G"),
    ("softening < 0", lambda: simkit.nbody_accel(GOOD, softening=-1.0), "softening"),
    ("theta < 0", lambda: simkit.nbody_accel(GOOD, method="bh", theta=-0.1), "theta"),
    ("method", lambda: simkit.nbody_accel(GOOD, method="fmm"), "method"),
    ("costs float", lambda: simkit.nbody_accel(GOOD, method="bh", costs=FLOAT_COSTS), "costs"),
    ("costs length", lambda: simkit.nbody_accel(GOOD, method="bh", costs=np.zeros(4, np.int64)), "costs"),
    ("kind", lambda: simkit.nbody_initial("spiral", 100), "spiral"),
    ("n = 1", lambda: simkit.nbody_initial("plummer", 1), "n must be"),
    ("seed < 0", lambda: simkit.nbody_initial("plummer", 10, seed=-1), "seed"),
    ("velocities n x 4", lambda: simkit.nbody_diagnostics(GOOD, GOOD), "velocities"),
    ("run float64", lambda: simkit.nbody_run(GOOD.astype(np.float64), np.zeros((5, 3), np.float32), dt=0.1, steps=1),
     "bodies"),
    ("run list", lambda: simkit.nbody_run(GOOD, LIST_VELOCITIES, dt=0.1, steps=1), "velocities"),
    ("run strided", lambda: simkit.nbody_run(GOOD, np.zeros((5, 6), np.float32)[:, ::2], dt=0.1, steps=1),
     "velocities"),
    ("run dt", lambda: simkit.nbody_run(GOOD.copy(), np.zeros((5, 3), np.float32), dt=0.0, steps=1), "dt"),
    ("run every", lambda: simkit.nbody_run(GOOD.copy(), np.zeros((5, 3), np.float32), dt=0.1, steps=1, every=-1),
     "every"),
]


@pytest.mark.parametrize(("what", "call", "phrase"), BAD, ids=[c[0] for c in BAD])
def test_bad_input_raises_value_error(what: str, call: Callable[[], Any], phrase: str) -> None:
    with pytest.raises(ValueError, match=phrase):
        call()


def test_run_refuses_read_only_arrays() -> None:
    B = GOOD.copy()
    B.setflags(write=False)
    with pytest.raises(ValueError, match="bodies"):
        simkit.nbody_run(B, np.zeros((5, 3), np.float32), dt=0.1, steps=1)


@pytest.mark.parametrize("kind", ["plummer", "uniform", "collision"])
def test_initial_conditions_are_deterministic(kind: str) -> None:
    B, V = simkit.nbody_initial(kind, 301, seed=7)
    B2, V2 = simkit.nbody_initial(kind, 301, seed=7)
    assert B.shape == (301, 4) and V.shape == (301, 3)
    assert B.dtype == V.dtype == np.float32
    np.testing.assert_array_equal(B, B2)
    np.testing.assert_array_equal(V, V2)
    assert not np.array_equal(simkit.nbody_initial(kind, 301, seed=8)[0], B)
    assert abs(float(B[:, 3].astype(np.float64).sum()) - 1.0) < 1e-5
    centre = (B[:, 3:].astype(np.float64) * B[:, :3]).sum(0)
    assert np.abs(centre).max() < 1e-5
    d = simkit.nbody_diagnostics(B, V, softening=0.01)
    assert max(abs(p) for p in d["momentum"]) < 1e-5


def _two_body() -> tuple[np.ndarray, np.ndarray]:
    """Masses 1/2 at x = -1/2 and +1/2 circling their centre at speed 1/2: period 2 pi."""
    B = np.array([[-0.5, 0, 0, 0.5], [0.5, 0, 0, 0.5]], np.float32)
    V = np.array([[0, -0.5, 0], [0, 0.5, 0]], np.float32)
    return B, V


def test_diagnostics_of_the_two_body_orbit() -> None:
    B, V = _two_body()
    d = simkit.nbody_diagnostics(B, V)
    assert d["kinetic"] == pytest.approx(0.125, abs=1e-12)
    assert d["potential"] == pytest.approx(-0.25, abs=1e-12)
    assert d["total"] == pytest.approx(-0.125, abs=1e-12)
    assert d["momentum"] == (0.0, 0.0, 0.0)
    # G scales the potential only
    assert simkit.nbody_diagnostics(B, V, G=2.0)["potential"] == pytest.approx(-0.5, abs=1e-12)


def test_run_keeps_the_two_body_orbit() -> None:
    B, V = _two_body()
    log = simkit.nbody_run(B, V, dt=2 * math.pi / 1000, steps=1000, every=100, device="cpu")
    assert [d["step"] for d in log] == list(range(0, 1001, 100))
    e0 = log[0]["total"]
    assert e0 == pytest.approx(-0.125, abs=1e-7)
    drift = max(abs(d["total"] / e0 - 1) for d in log)
    assert drift < 1e-4
    for d in log:
        assert set(d) == {"step", "kinetic", "potential", "total", "momentum"}
        assert max(abs(p) for p in d["momentum"]) < 1e-6
    # updated in place, and after one period back where they started (to the phase error)
    assert B[0, 0] == pytest.approx(-0.5, abs=2e-3) and B[0, 1] == pytest.approx(0.0, abs=2e-2)
    assert B[1, 0] == pytest.approx(0.5, abs=2e-3)
    assert B[0, 3] == 0.5 and V[0, 1] < 0
    # the last entry is the diagnostics of the final state
    assert simkit.nbody_diagnostics(B, V)["total"] == pytest.approx(log[-1]["total"], rel=1e-12)


def test_run_without_reports_returns_nothing() -> None:
    B, V = _two_body()
    assert simkit.nbody_run(B, V, dt=0.01, steps=10) == []
    assert B[0, 1] != 0.0  # it did move
    B0 = B.copy()
    assert simkit.nbody_run(B, V, dt=0.01, steps=0, every=5) != []
    np.testing.assert_array_equal(B, B0)


def test_context_keywords(rng: np.random.Generator) -> None:
    B = _bodies(rng, 64)
    ref = simkit.nbody_accel(B, device="cpu")
    ctx = simkit.Context(device="cpu", threads=1)
    np.testing.assert_allclose(simkit.nbody_accel(B, context=ctx), ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(simkit.nbody_accel(B, device="cpu", threads=2), ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        simkit.nbody_accel(B, method="bh", theta=0.0, context=ctx), ref, rtol=1e-4, atol=1e-5 * float(np.abs(ref).max())
    )


@pytest.mark.gpu
def test_accel_on_gpu_tensors(gpu_framework: Any, rng: np.random.Generator) -> None:
    fw = gpu_framework
    B = _bodies(rng, 1001)
    T = rng.standard_normal((77, 3)).astype(np.float32)

    def to_gpu(a: np.ndarray) -> Any:
        return fw.asarray(a, device="cuda") if fw.__name__ == "torch" else fw.asarray(a)

    def to_host(x: Any) -> np.ndarray:
        return np.asarray(x.cpu().numpy() if fw.__name__ == "torch" else x.get())

    a, phi = simkit.nbody_accel(to_gpu(B), targets=to_gpu(T), softening=0.01, potential=True)
    assert not isinstance(a, np.ndarray) and not isinstance(phi, np.ndarray)
    want, want_phi, scale = _field64(T, B, 1.0, 0.01)
    assert _worst(to_host(a), want, scale) <= TOL
    np.testing.assert_allclose(to_host(phi), want_phi, rtol=1e-5)
    # host arrays summed on the GPU
    a_host = simkit.nbody_accel(B, softening=0.01, device="gpu")
    want_b, _, scale_b = _field64(B, B, 1.0, 0.01)
    assert _worst(a_host, want_b, scale_b) <= TOL
    V = np.zeros((1001, 3), np.float32)
    on_gpu = simkit.nbody_diagnostics(to_gpu(B), to_gpu(V), softening=0.01, device="gpu")
    on_cpu = simkit.nbody_diagnostics(B, V, softening=0.01, device="cpu")
    assert on_gpu["potential"] == pytest.approx(on_cpu["potential"], rel=1e-5)
    # Barnes-Hut on the GPU, on the tensors in place: theta 0 is the direct sum.
    report: dict[str, Any] = {}
    bh = simkit.nbody_accel(to_gpu(B), softening=0.01, method="bh", theta=0.0, report=report)
    assert not isinstance(bh, np.ndarray)
    assert _worst(to_host(bh), want_b, scale_b) <= TOL
    assert report["groups"] >= 1001 // 32 and report["nodes_tested"] > 0
    with pytest.raises(RuntimeError):
        simkit.nbody_accel(to_gpu(B), method="bh", quadrupole=True)
