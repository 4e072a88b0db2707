#!/usr/bin/env python3
"""Grouped bars of `simkit bench strategies` (and bench/peers/strategies_torch.py) results: one
panel per metric, the dimensions as groups along x, one bar per strategy at its best block (the
row of highest Mops/s for that strategy, metric and dimension), Mops/s on a log scale. CPU and GPU
rows may come from different CSVs and share the chart; each legend entry names its device.

    python3 scripts/plot-strategies.py simkit-strategies.csv torch-strategies.csv \\
        --out bench/results/strategies.png [--title "1,000 x 10,000, H100"]
"""

from __future__ import annotations

import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402

METRIC_ORDER = ["euclidean", "cosine", "pearson", "pearson_opt"]
STRATEGY_ORDER = ["cpu_serial", "cpu_query_parallel", "cpu_dim_reduction", "s1_pair_blocks",
                  "s2_query_blocks", "s3_base_blocks", "s5_query_reduce", "s6_base_reduce", "s7_tiled",
                  "simkit_pairwise", "torch"]

Best = dict[tuple[str, str, str, int], tuple[float, str]]  # (metric, device, strategy, dim) -> (mops, block)


def ordered(names: set[str], order: list[str]) -> list[str]:
    """Known names in the given order, then any others alphabetically."""
    return [n for n in order if n in names] + sorted(names - set(order))


def read_best(paths: list[str]) -> Best:
    best: Best = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    mops = float(r["mops"])
                    key = (r["metric"], r["device"], r["strategy"], int(r["dim"]))
                except (KeyError, ValueError) as e:
                    raise SystemExit(f"{path}: bad row {r}: {e}") from e
                if not math.isfinite(mops) or mops <= 0:
                    continue  # nothing to draw on a log scale
                if key not in best or mops > best[key][0]:
                    best[key] = (mops, r.get("block", ""))
    if not best:
        raise SystemExit("no rows with a positive mops value in " + ", ".join(paths))
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+", help="CSV files with the strategies columns")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--title", default="", help="added to the figure title")
    a = p.parse_args()

    best = read_best(a.csv)
    metrics = ordered({k[0] for k in best}, METRIC_ORDER)
    devices = sorted({k[1] for k in best})
    # a series is one strategy on one device; its colour stays the same in every panel
    rank = {name: i for i, name in enumerate(ordered({k[2] for k in best}, STRATEGY_ORDER))}
    series = sorted({(k[2], k[1]) for k in best}, key=lambda s: (rank[s[0]], s[1]))
    cmap = plt.get_cmap("tab20" if len(series) > 10 else "tab10")
    colour = {s: cmap(i % cmap.N) for i, s in enumerate(series)}

    ncols = min(2, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.5 * ncols, 4.8 * nrows), squeeze=False)
    handles: dict[str, Artist] = {}  # one legend entry per series: a bar of it
    for ax, metric in zip(axes.flat, metrics):
        here = [s for s in series if any(k[0] == metric and (k[2], k[1]) == s for k in best)]
        dims = sorted({k[3] for k in best if k[0] == metric})
        width = 0.84 / max(len(here), 1)
        for i, (strategy, device) in enumerate(here):
            xs, ys, blocks = [], [], []
            for g, dim in enumerate(dims):
                hit = best.get((metric, device, strategy, dim))
                if hit:
                    xs.append(g - 0.42 + (i + 0.5) * width)
                    ys.append(hit[0])
                    blocks.append(hit[1])
            label = f"{strategy} ({device})"
            bars = ax.bar(xs, ys, width, color=colour[(strategy, device)], label=label,
                          hatch="//" if device == "cpu" else None, edgecolor="white", linewidth=0.3)
            handles.setdefault(label, bars.patches[0])
            for bx, by, block in zip(xs, ys, blocks):
                if block not in ("", "0"):  # the best block, written on top of its bar
                    ax.text(bx, by, f" {block}", ha="center", va="bottom", rotation=90, fontsize=6)
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 4)  # room for the block labels above the tallest bars
        ax.set_xticks(range(len(dims)))
        ax.set_xticklabels([f"d = {d}" for d in dims])
        ax.set_ylabel("Mops/s (pairs per second / 1e6)")
        ax.set_title(metric)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)

    title = f"Similarity-matrix strategies, best block each ({', '.join(devices)})"
    fig.suptitle(f"{title}: {a.title}" if a.title else title)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
               ncol=min(4, len(handles)), fontsize=8, frameon=False)
    legend_rows = math.ceil(len(handles) / min(4, len(handles)))
    height = fig.get_figheight()
    fig.tight_layout(rect=(0, (0.1 + 0.17 * legend_rows) / height, 1, 1 - 0.4 / height))
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}: {len(metrics)} metrics, {len(series)} strategies, devices {', '.join(devices)}")


if __name__ == "__main__":
    main()
