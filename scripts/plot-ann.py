#!/usr/bin/env python3
"""Recall@10 against queries per second, one panel per case, for every CSV of `simkit bench ann`
and bench/peers/ann_peers.py given (same columns). Exact searches are drawn as single points at
their recall; approximate indexes as curves over their sweep (nprobe, ef, lsh probes or IndexLSH
bits), one curve per configuration (the params column: ivf_pq's m and refine, lsh's tables and
bits). Filtered rows (simkit's params `allow=KIND:FRACTION`, the peers' `filter=KIND,allowed=F`)
get a panel per case, kind and fraction, their recall against the exact filtered answer.

    python3 scripts/plot-ann.py simkit-ann.csv peers-ann.csv --out bench/results/ann.png
"""

import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


FILTER_KEYS = ("allow", "filter", "allowed", "plan")


def panel_and_params(r):
    """The row's panel (its case, and its allow-list when filtered) and its params without the
    filter's keys (simkit's plan varies along a sweep: one curve either way)."""
    items = [kv.split("=", 1) for kv in r.get("params", "").split(",") if "=" in kv]
    kv = dict(items)
    panel = r["case"]
    if "allow" in kv:
        kind, frac = kv["allow"].split(":")
        panel += f", {kind} allow-list {frac}"
    elif "filter" in kv:
        panel += f", {kv['filter']} allow-list {kv.get('allowed', '?')}"
    return panel, ",".join(f"{k}={v}" for k, v in items if k not in FILTER_KEYS)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="")
    a = p.parse_args()
    series = defaultdict(list)  # panel -> (row, params)
    for path in a.csv:
        with open(path) as f:
            for r in csv.DictReader(f):
                panel, params = panel_and_params(r)
                series[panel].append((r, params))
    cases = sorted(series)
    cols = min(len(cases), 3)
    rows = (len(cases) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 5 * rows), squeeze=False)
    for ax in axes.flat[len(cases):]:
        ax.set_visible(False)
    for ax, case in zip(axes.flat, cases):
        curves = defaultdict(list)
        for r, params in series[case]:
            label = f'{r["system"]} {r["index"]} ({r["device"]})'
            if r["nlist"] not in ("", "0"):
                label += f' nlist={r["nlist"]}'
            if params:
                label += f" {params}"
            curves[label].append((float(r["recall_at_10"]), float(r["qps"]), r["nprobe"]))
        for label, pts in sorted(curves.items()):
            pts.sort()
            xs, ys = [x for x, _, _ in pts], [y for _, y, _ in pts]
            style = "-o" if len(pts) > 1 else "*"
            ax.plot(xs, ys, style, label=label, markersize=5 if len(pts) > 1 else 12)
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("queries per second (batched)")
        ax.set_title(f"{case}{' - ' + a.title if a.title else ''}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
