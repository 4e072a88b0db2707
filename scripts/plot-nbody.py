#!/usr/bin/env python3
"""Draws an `simkit nbody run`: the last snapshot's bodies projected on x-y (point size by mass)
and the energy drift and |momentum| over time from the run's report CSV.

    python3 scripts/plot-nbody.py --report run.csv --snapshot bodies_001000.npy --out run.png

`simkit nbody run --plot run.png` runs this script itself (it is compiled into the binary).
"""

from __future__ import annotations

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", required=True, help="CSV: step,time,kinetic,potential,drift,momentum")
    ap.add_argument("--snapshot", required=True, help="n x 4 float32 .npy (x, y, z, mass)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="simkit nbody run")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.report)))
    t = [float(r["time"]) for r in rows]
    drift = [abs(float(r["drift"])) for r in rows]
    momentum = [float(r["momentum"]) for r in rows]
    bodies = np.load(a.snapshot)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.5))
    size = 2.0 * bodies[:, 3] / max(float(bodies[:, 3].mean()), 1e-30)
    left.scatter(bodies[:, 0], bodies[:, 1], s=size, c="k", alpha=0.5, linewidths=0)
    left.set_aspect("equal")
    left.set_xlabel("x")
    left.set_ylabel("y")
    left.set_title(f"{len(bodies):,} bodies at t = {t[-1]:.3g} (x-y projection)")
    right.semilogy(t[1:], [max(d, 1e-17) for d in drift[1:]], label="|E / E0 - 1|")
    right.semilogy(t[1:], [max(p, 1e-17) for p in momentum[1:]], label="|momentum|")
    right.set_xlabel("time")
    right.set_title("conservation")
    right.grid(True, which="both", alpha=0.3)
    right.legend()
    fig.suptitle(a.title)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
