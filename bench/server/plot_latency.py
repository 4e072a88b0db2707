#!/usr/bin/env python3
"""Latency histograms of `simkit loadgen` runs, one panel per run (the seed's Figure 5 layout).

    python3 bench/server/plot_latency.py --out hist.png [--warmup 5] [--title T] \
        "batched, poisson=poisson.csv" "unbatched, poisson=poisson-1.csv"

Each argument is LABEL=FILE or FILE: a per-request CSV from `simkit loadgen --csv`
(scheduled_s,sent_s,latency_ms,status). A panel shows the latencies of the 200 responses
scheduled after the warmup, with p50 and p99 marked and the counts of everything else.
`simkit loadgen --plot` runs this same script (it is compiled into the binary).
"""
import argparse
import csv
import math
import os
import sys


def load(path, warmup):
    ok, other, dropped = [], 0, 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if float(row["scheduled_s"]) < warmup:
                continue
            if row["status"] == "200":
                ok.append(float(row["latency_ms"]))
            elif row["sent_s"] == "":
                dropped += 1
            else:
                other += 1
    ok.sort()
    return ok, other, dropped


def percentile(sorted_values, q):
    # Nearest rank, as loadgen reports it: the smallest value with at least q of them at or below.
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="LABEL=FILE or FILE (loadgen --csv)")
    ap.add_argument("--out", required=True, help="the image (.png, .svg, .pdf)")
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds at the start not counted")
    ap.add_argument("--title", default="")
    ap.add_argument("--columns", type=int, default=3)
    args = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plotting needs matplotlib: pip install matplotlib (or apt install python3-matplotlib)")

    runs = []
    for spec in args.runs:
        # An existing file is a run by itself; otherwise LABEL=FILE (the label ends at the first '=').
        label, _, path = ("", "", spec) if os.path.exists(spec) else spec.partition("=")
        runs.append((label or os.path.basename(path), path, *load(path, args.warmup)))
    cols = max(1, min(args.columns, len(runs)))
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(runs):]:
        ax.axis("off")
    for ax, (label, path, ok, other, dropped) in zip(axes.flat, runs):
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("latency from the scheduled send (ms)")
        ax.set_ylabel("requests")
        if not ok:
            ax.text(0.5, 0.5, "no 200 responses", ha="center", va="center", transform=ax.transAxes)
            continue
        ax.hist(ok, bins=min(60, max(10, len(ok) // 4)), color="#4878a8")
        p50, p99 = percentile(ok, 0.50), percentile(ok, 0.99)
        for value, name, color in ((p50, "p50", "#2a9d4b"), (p99, "p99", "#c0392b")):
            ax.axvline(value, color=color, linestyle="--", linewidth=1)
        mean = sum(ok) / len(ok)
        text = (f"n {len(ok)}  mean {mean:.1f}\np50 {p50:.1f}  p90 {percentile(ok, 0.9):.1f}\n"
                f"p95 {percentile(ok, 0.95):.1f}  p99 {p99:.1f} ms")
        if other or dropped:
            text += f"\nnot 200: {other}  dropped: {dropped}"
        ax.text(0.97, 0.95, text, ha="right", va="top", fontsize=8, transform=ax.transAxes,
                bbox=dict(facecolor="white", alpha=0.8, edgecolor="#cccccc"))
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
