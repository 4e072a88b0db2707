#!/usr/bin/env python3
"""CPU peers of simkit's Barnes-Hut at matched accuracy: Flatiron's fast multipole method
(fmm3dpy.lfmm3d) and pytreegrav's Barnes-Hut (pytreegrav.Accel), beside simkit.nbody_accel
(method="bh"), on the same Plummer sphere (simkit.nbody_initial, G = 1, no softening).

Each system sweeps its accuracy knob (fmm3dpy: eps; pytreegrav and simkit: theta, with and
without quadrupoles where offered) and reports the median and 99th-percentile relative force error
against simkit's direct sum at 256 bodies, and the median time of --runs calls. The table then
compares times where each system first reaches a median error <= --target (default 1e-3).

    PYTHONPATH=build/python python3 bench/peers/nbody_peers.py --sizes 16,18 --threads 2 \\
        --csv bench/results/cpu2-nbody-peers.csv

pip install fmm3dpy pytreegrav (both on PyPI); simkit's Python module from this build.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from typing import Callable, Dict, List

import numpy as np


def timed(fn: Callable[[], np.ndarray], runs: int) -> "tuple[float, np.ndarray]":
    out = fn()  # warm-up (and JIT compilation for pytreegrav)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def errors(accel: np.ndarray, truth: np.ndarray, sample: np.ndarray) -> "tuple[float, float]":
    d = np.linalg.norm(accel[sample] - truth, axis=1) / np.linalg.norm(truth, axis=1)
    return float(np.median(d)), float(np.percentile(d, 99))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="14,16", help="log2 N, comma-separated")
    ap.add_argument("--threads", type=int, default=0, help="threads for simkit and pytreegrav (0: all)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--target", type=float, default=1e-3, help="median force error to match")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    try:
        import fmm3dpy
        import pytreegrav
        import simkit
    except ImportError as e:
        sys.exit(f"{e}: pip install fmm3dpy pytreegrav, and PYTHONPATH=build/python for simkit")
    if args.threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    threads = args.threads if args.threads > 0 else None

    rows: List[Dict[str, object]] = []
    print(f"{'N':>9} {'system':<24} {'setting':<16} {'time s':>9} {'median err':>11} {'p99 err':>10}")
    for log_n in [int(s) for s in args.sizes.split(",")]:
        n = 1 << log_n
        bodies, _ = simkit.nbody_initial("plummer", n, seed=args.seed + log_n)
        pos = bodies[:, :3].astype(np.float64)
        mass = bodies[:, 3].astype(np.float64)
        sample = np.linspace(0, n - 1, 256).astype(np.int64)
        truth = simkit.nbody_accel(bodies, targets=bodies[sample, :3], device="cpu").astype(np.float64)

        def record(system: str, setting: str, fn: Callable[[], np.ndarray]) -> None:
            seconds, accel = timed(fn, args.runs)
            med, p99 = errors(np.asarray(accel, dtype=np.float64), truth, sample)
            rows.append({"system": system, "n": n, "setting": setting, "time_s": seconds,
                         "median_err": med, "p99_err": p99})
            print(f"{n:>9} {system:<24} {setting:<16} {seconds:>9.3f} {med:>11.2e} {p99:>10.2e}", flush=True)

        for theta in (0.3, 0.5, 0.7):
            record("simkit_bh", f"theta={theta}",
                   lambda: simkit.nbody_accel(bodies, method="bh", theta=theta, device="cpu", threads=threads))
        for theta in (0.5, 0.7, 1.0):
            for quad in (False, True):
                record("pytreegrav", f"theta={theta}{' quad' if quad else ''}",
                       lambda: pytreegrav.Accel(pos, mass, np.zeros(n), theta=theta, parallel=True,
                                                method="tree", quadrupole=quad))
        for eps in (1e-2, 1e-3, 1e-4):
            # lfmm3d sums q / (4 pi r): 4 pi times its gradient at a source is the acceleration
            # sum_j q_j (x_j - x) / r^3.
            record("fmm3dpy", f"eps={eps:g}",
                   lambda: 4 * np.pi * fmm3dpy.lfmm3d(eps=eps, sources=pos.T.copy(), charges=mass, pg=2).grad.T)

        print(f"  at median error <= {args.target:g}:")
        for system in ("simkit_bh", "pytreegrav", "fmm3dpy"):
            ok = [r for r in rows if r["system"] == system and r["n"] == n and float(r["median_err"]) <= args.target]
            if ok:
                best = min(ok, key=lambda r: float(r["time_s"]))
                print(f"    {system:<12} {float(best['time_s']):8.3f} s ({best['setting']})")
            else:
                print(f"    {system:<12} never reached")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
