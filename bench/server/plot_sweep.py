#!/usr/bin/env python3
"""p50 and p99 latency against offered load, one line per configuration, from the -sweep.csv of
bench/server/serve_experiment.py (columns config, offered_rps, p50_ms, p99_ms, saturation_rps).

    python3 bench/server/plot_sweep.py --out sweep.png [--title T] run-sweep.csv [more.csv ...]
"""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csvs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plotting needs matplotlib: pip install matplotlib")

    series = {}
    for path in args.csvs:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                series.setdefault(row["config"], []).append(row)
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for i, (name, rows) in enumerate(series.items()):
        rows.sort(key=lambda r: float(r["offered_rps"]))
        x = [float(r["offered_rps"]) for r in rows]
        color = f"C{i}"
        ax.plot(x, [float(r["p99_ms"]) for r in rows], "o-", color=color, label=f"{name} p99")
        ax.plot(x, [float(r["p50_ms"]) for r in rows], "s--", color=color, alpha=0.6, label=f"{name} p50")
        ax.axvline(float(rows[0]["saturation_rps"]), color=color, linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("offered load (requests/s, constant arrivals); dotted: measured saturation")
    ax.set_ylabel("latency from the scheduled send (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if args.title:
        ax.set_title(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
