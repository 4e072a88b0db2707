#!/usr/bin/env python3
"""Plots what query packets buy in the point tree, from `simkit bench tree --csv` files.

Left: node fetches per query against the packet size (log-log), one line per device and d:
a node's box is fetched once per packet, so the line falls as packets grow. Middle: queries/s
against the packet size, the same lines (the time the fetches saved, less what divergence or the
packet's bookkeeping cost). Right, when a --crossover CSV is given: the tree's speed-up over
brute force against n, one line per device and d (1 marks where knn's automatic route switches).

    python3 scripts/plot-tree-bench.py --csv bench/results/2026-11-26-h200-tree-d3.csv \\
        bench/results/2026-11-26-h200-tree-d85.csv bench/results/2026-11-26-cpu2-tree-packets.csv \\
        --out bench/results/2026-11-26-tree-packets.png

Needs matplotlib (pip install matplotlib).
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", nargs="+", required=True, help="CSVs written by simkit bench tree --csv")
    parser.add_argument("--out", required=True, help="the .png to write")
    parser.add_argument("--label", action="append", default=[], help="DEVICE=NAME, e.g. gpu=H200 (legend text)")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot-tree-bench: needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2
    names = dict(item.split("=", 1) for item in args.label)
    rows = read_rows(args.csv)
    if not rows:
        print("plot-tree-bench: the CSVs hold no rows", file=sys.stderr)
        return 2
    packets: Dict[Tuple[str, int, int], List[Tuple[int, float, float]]] = defaultdict(list)
    cross: Dict[Tuple[str, int], List[Tuple[int, float]]] = defaultdict(list)
    for r in rows:
        key = (names.get(r["device"], r["device"]), int(r["d"]))
        if r["part"] == "tree":
            packets[key + (int(r["n"]),)].append(
                (int(r["packet"]), float(r["node_fetches_per_query"]), float(r["queries_per_s"])))
        elif r["part"] == "cross":
            cross[key].append((int(r["n"]), float(r["speedup_over_brute"])))
    panels = 3 if cross else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2))
    for (device, d, n), points in sorted(packets.items()):
        points.sort()
        label = f"{device}, d = {d}, n = {n:,}"
        axes[0].plot([p[0] for p in points], [p[1] for p in points], "o-", label=label)
        axes[1].plot([p[0] for p in points], [p[2] for p in points], "o-", label=label)
    for ax, title, unit in ((axes[0], "node fetches per query", "fetches"), (axes[1], "queries per second", "queries/s")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("packet size (queries walking together)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    if cross:
        ax = axes[2]
        for (device, d), points in sorted(cross.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label=f"{device}, d = {d}")
        ax.axhline(1.0, color="grey", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("base rows n (20,000 queries)")
        ax.set_ylabel("brute-force time / tree time")
        ax.set_title("where the tree overtakes brute force")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("simkit point tree: exact k-NN, k = 16, uniform points")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
