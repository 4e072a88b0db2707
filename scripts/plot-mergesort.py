#!/usr/bin/env python3
"""Draws the merge sort study (`simkit bench mergesort --csv`) as the MergePath seed's figures.

Panels: kernel time against size_i (n fixed; one line per version and input), against threads per
block (at each version's best size_i), and against n (log-log, every version and the production
sorts, random input); then Merge Path's speed-up over the naive tree merge against n, and, when
the CSVs hold both, OpenCL's kernel time over CUDA's for the same Merge Path kernel against n.
Several CSVs may be given (a CUDA run and an OpenCL run of the same card, say).

    python3 scripts/plot-mergesort.py gpu.csv opencl.csv --out mergesort.png

`simkit bench mergesort --plot F.png` runs this script (compiled into the binary). Needs
matplotlib (pip install matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from typing import Dict, List, Tuple


def read_rows(paths: List[str]) -> List[Dict[str, str]]:
    rows: List[Dict[str, str]] = []
    for path in paths:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def lines(rows: List[Dict[str, str]], sweep: str, x: str, key: Tuple[str, ...]) -> Dict[Tuple[str, ...], List[Tuple[float, float]]]:
    out: Dict[Tuple[str, ...], List[Tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if r["sweep"] == sweep:
            out[tuple(r[k] for k in key)].append((float(r[x]), float(r["kernel_ms"])))
    for points in out.values():
        points.sort()
    return out


def ratio_by_n(rows: List[Dict[str, str]], top: str, bottom: str) -> Dict[str, List[Tuple[float, float]]]:
    """kernel_ms of version `top` over `bottom` at each n of the n sweep, per input."""
    ms: Dict[Tuple[str, str, int], float] = {}
    for r in rows:
        if r["sweep"] == "n":
            ms[(r["version"], r["input"], int(r["n"]))] = float(r["kernel_ms"])
    out: Dict[str, List[Tuple[float, float]]] = defaultdict(list)
    for (version, input_, n), t in ms.items():
        if version == top and (bottom, input_, n) in ms:
            out[input_].append((n, t / ms[(bottom, input_, n)]))
    for points in out.values():
        points.sort()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="CSVs written by simkit bench mergesort --csv")
    parser.add_argument("--out", required=True, help="the .png to write")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot-mergesort: needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2
    rows = read_rows(args.csv)
    if not rows:
        print("plot-mergesort: the CSVs hold no rows", file=sys.stderr)
        return 2
    speedup = ratio_by_n(rows, "naive (CUDA)", "merge path (CUDA)")
    opencl = ratio_by_n(rows, "merge path (OpenCL)", "merge path (CUDA)")
    panels = 3 + bool(speedup) + bool(opencl)
    fig, axes = plt.subplots(1, panels, figsize=(5.0 * panels, 4.3))
    for (version, input_), points in sorted(lines(rows, "size_i", "size_i", ("version", "input")).items()):
        axes[0].plot([p[0] for p in points], [p[1] for p in points], "o-", ms=3, label=f"{version}, {input_}")
    axes[0].set(xscale="log", yscale="log", xlabel="size_i (insertion run)", ylabel="kernel ms", title="time vs size_i")
    for (version, input_), points in sorted(lines(rows, "block", "block", ("version", "input")).items()):
        axes[1].plot([p[0] for p in points], [p[1] for p in points], "o-", ms=3, label=f"{version}, {input_}")
    axes[1].set(xscale="log", yscale="log", xlabel="threads per block", ylabel="kernel ms", title="time vs block size")
    by_n = {k: v for k, v in lines(rows, "n", "n", ("version", "input")).items() if k[1] == "random"}
    for (version, _), points in sorted(by_n.items()):
        axes[2].plot([p[0] for p in points], [p[1] for p in points], "o-", ms=3, label=version)
    axes[2].set(xscale="log", yscale="log", xlabel="n (random input)", ylabel="kernel ms", title="time vs n")
    at = 3
    for title, data, label in (("naive / merge path (CUDA)", speedup, "merge path's speed-up over naive"),
                               ("OpenCL / CUDA, same merge path", opencl, "OpenCL kernel time / CUDA's")):
        if not data:
            continue
        ax = axes[at]
        at += 1
        for input_, points in sorted(data.items()):
            ax.plot([p[0] for p in points], [p[1] for p in points], "o-", ms=3, label=input_)
        ax.axhline(1.0, color="grey", lw=1)
        ax.set(xscale="log", xlabel="n", ylabel=label, title=title)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("merge sort study: the MergePath seed's versions and simkit's production sorts")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
