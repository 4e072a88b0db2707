#!/usr/bin/env python3
"""The seed's serving experiment (seed 001, sections 2.3-2.4, Figure 5) on `simkit serve`.

    python3 bench/server/serve_experiment.py --simkit build/apps/cli/simkit --data-dir DIR \
        --collection wordnet --queries ../shared/data/wordnet/queries_minilm_f16.npy --device cpu \
        --config "unbatched=--max-batch 1" --config "seed 4/1s=--max-batch 4 --max-delay-us 1000000" \
        --config "batched=--max-batch 64" --sweep unbatched --sweep batched \
        --overload unbatched=100 --overload batched=1500 --out bench/results/DATE-cpu-serve-experiment

1. Patterns: every configuration gets the seed's three arrival patterns for --pattern-seconds
   each (60 in the seed): constant 1 req/s, random gaps uniform in [0.1, 2.0] s, and Poisson
   1 req/s, from one `simkit loadgen` (open loop: latency from each request's scheduled time).
   With --parallel the configurations run side by side, each on its own copy of the data
   directory (their traffic is 1 req/s each).
2. Sweep: for each --sweep configuration, its saturation (the server's own count of searches
   run while offered --overload), then constant-rate runs at fractions of it up to beyond it:
   p50 / p99 and what was dropped or refused, against the offered rate.
Writes OUT-patterns.csv, OUT-sweep.csv, OUT.md (tables) and, when matplotlib is there,
OUT-hist.png (a latency histogram per configuration and pattern) and OUT-sweep.png (p99 against
offered load). Per-request CSVs stay in OUT-runs/.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_throughput import Load, measure_saturation, start_server, stop_server  # noqa: E402

# The seed's patterns: (name, loadgen arguments).
PATTERNS = [
    ("constant", ["--pattern", "constant", "--rate", "1"]),
    ("random", ["--pattern", "random", "--min-gap", "0.1", "--max-gap", "2.0"]),
    ("poisson", ["--pattern", "poisson", "--rate", "1"]),
]
SWEEP_FRACTIONS = [0.1, 0.25, 0.5, 0.7, 0.85, 1.0, 1.2]


def run_patterns(args, name, extra, data_dir, runs_dir, rows, lock):
    proc, url, log = start_server(args.simkit, data_dir, args.device, extra)
    try:
        for pattern, pargs in PATTERNS:
            base = os.path.join(runs_dir, f"{name}-{pattern}".replace(" ", "_").replace("/", "_"))
            cmd = [args.simkit, "loadgen", "--url", url, "--collection", args.collection, "--queries", args.queries,
                   "--limit", str(args.limit), "--duration", str(args.pattern_seconds), "--connections", "16",
                   "--seed", "1", "--csv", base + ".csv", "--json", base + ".json", *pargs]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.pattern_seconds + 120)
            if out.returncode != 0:
                sys.exit(f"serve_experiment: loadgen failed:\n{out.stdout}{out.stderr}")
            j = json.load(open(base + ".json"))
            batches = j["server_batches"] or {}
            lat = {k: round(v, 2) for k, v in (j["latency_ms"] or {}).items() if k != "count"}
            row = {"config": name, "server_args": extra, "pattern": pattern, "sent": j["sent"],
                   "ok": j["status_200"], "errors": j["sent"] - j["status_200"], "dropped": j["dropped"],
                   "achieved_rps": round(j["achieved_rate"], 3), "mean_ms": lat.get("mean"),
                   "p50_ms": lat.get("p50"), "p90_ms": lat.get("p90"), "p95_ms": lat.get("p95"),
                   "p99_ms": lat.get("p99"), "max_ms": lat.get("max"),
                   "server_mean_batch": round(batches["mean_size"], 2) if batches else None, "csv": os.path.basename(base + ".csv")}
            with lock:
                rows.append(row)
                print(f"[{name}] {pattern}: {row['ok']} x 200, mean {row['mean_ms']} ms, p50 {row['p50_ms']} ms, "
                      f"p99 {row['p99_ms']} ms, server batches of {row['server_mean_batch']}", flush=True)
    finally:
        stop_server(proc)


def run_sweep(args, name, extra, rate, rows):
    proc, url, log = start_server(args.simkit, args.data_dir, args.device, extra)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sat = measure_saturation(args, proc, url, rate, tmp)
            print(f"[{name}] saturation {sat['throughput']:.1f} searches/s (offered {rate}, mean batch "
                  f"{sat['mean_batch']:.1f})", flush=True)
            for fraction in SWEEP_FRACTIONS:
                offered = fraction * sat["throughput"]
                time.sleep(2)  # let the queue empty
                h = Load(args, url, offered, args.sweep_seconds, 2.0, tmp, f"sweep-{fraction}").wait()
                lat = h["latency_ms"]
                row = {"config": name, "server_args": extra, "saturation_rps": round(sat["throughput"], 1),
                       "fraction": fraction, "offered_rps": round(offered, 1),
                       "achieved_rps": round(h["achieved_rate"], 1), "p50_ms": round(lat["p50"], 3),
                       "p99_ms": round(lat["p99"], 3), "p999_ms": round(lat["p99_9"], 3),
                       "status_503": h["status_503"], "status_504": h["status_504"], "dropped": h["dropped"]}
                rows.append(row)
                print(f"[{name}] {offered:.1f}/s ({fraction:.2f} of saturation): achieved {row['achieved_rps']}/s, "
                      f"p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms, 503 {row['status_503']}, "
                      f"dropped {row['dropped']}", flush=True)
    finally:
        stop_server(proc)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot(args, pattern_rows, sweep_rows, runs_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    specs = [f"{r['config']}, {r['pattern']}={os.path.join(runs_dir, r['csv'])}" for r in pattern_rows]
    if specs:
        subprocess.run([sys.executable, os.path.join(here, "plot_latency.py"), "--out", args.out + "-hist.png",
                       "--columns", "3", "--title", f"{args.label}: latency by arrival pattern (seed's Figure 5)",
                       *specs], check=True)
    if sweep_rows:
        subprocess.run([sys.executable, os.path.join(here, "plot_sweep.py"), "--out", args.out + "-sweep.png",
                        "--title", f"{args.label}: p99 against offered load", args.out + "-sweep.csv"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simkit", required=True)
    ap.add_argument("--data-dir", required=True, help="a data directory with the collection loaded")
    ap.add_argument("--collection", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--config", action="append", required=True, help="NAME=server arguments")
    ap.add_argument("--sweep", action="append", default=[], help="a configuration NAME to sweep to saturation")
    ap.add_argument("--overload", action="append", default=[], help="NAME=req/s offered to find its saturation")
    ap.add_argument("--pattern-seconds", type=float, default=60)
    ap.add_argument("--sweep-seconds", type=float, default=12)
    ap.add_argument("--duration", type=float, default=12, help="seconds of the saturation run")
    ap.add_argument("--parallel", action="store_true", help="the configurations' pattern runs side by side")
    ap.add_argument("--phase", choices=["all", "patterns", "sweep"], default="all",
                    help="run one part only; the tables and plots take the other part's CSV when it is there")
    ap.add_argument("--connections", type=int, default=512, help="sweep: in all, shared by the loadgens")
    ap.add_argument("--loadgens", type=int, default=2, help="sweep: loadgen processes")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--label", default="", help="machine label")
    ap.add_argument("--out", required=True, help="output prefix, e.g. bench/results/2026-11-24-cpu-serve-experiment")
    args = ap.parse_args()
    configs = [spec.split("=", 1) for spec in args.config]
    overload = dict(o.split("=", 1) for o in args.overload)
    runs_dir = args.out + "-runs"
    os.makedirs(runs_dir, exist_ok=True)

    pattern_rows, lock = [], threading.Lock()
    if args.phase in ("all", "patterns"):
        if args.parallel:
            copies, threads = [], []
            for i, (name, extra) in enumerate(configs):
                copy = f"{args.data_dir.rstrip('/')}-copy{i}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(args.data_dir, copy)
                copies.append(copy)
                threads.append(threading.Thread(target=run_patterns,
                                                args=(args, name, extra, copy, runs_dir, pattern_rows, lock)))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for copy in copies:
                shutil.rmtree(copy, ignore_errors=True)
        else:
            for name, extra in configs:
                run_patterns(args, name, extra, args.data_dir, runs_dir, pattern_rows, lock)
        order = {name: i for i, (name, _) in enumerate(configs)}
        pattern_rows.sort(key=lambda r: (order[r["config"]], [p for p, _ in PATTERNS].index(r["pattern"])))
        if len(pattern_rows) != len(configs) * len(PATTERNS):
            sys.exit("serve_experiment: a pattern run did not finish")
        write_csv(args.out + "-patterns.csv", pattern_rows)
    else:
        pattern_rows = read_csv(args.out + "-patterns.csv")

    sweep_rows = []
    if args.phase in ("all", "sweep"):
        for name in args.sweep:
            extra = dict(configs)[name]
            run_sweep(args, name, extra, float(overload.get(name, 1000)), sweep_rows)
        if sweep_rows:
            write_csv(args.out + "-sweep.csv", sweep_rows)
    else:
        sweep_rows = read_csv(args.out + "-sweep.csv")

    with open(args.out + ".md", "w") as f:
        f.write(f"Machine: {args.label}, device {args.device}.\n\n")
        if pattern_rows:
            f.write("| config | server args | pattern | 200s | errors | mean (ms) | p50 (ms) | p90 (ms) | p95 (ms) | "
                "p99 (ms) | max (ms) | server batch |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in pattern_rows:
            f.write(f"| {r['config']} | `{r['server_args']}` | {r['pattern']} | {r['ok']} | {r['errors']} | "
                    f"{r['mean_ms']} | {r['p50_ms']} | {r['p90_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
                    f"{r['max_ms']} | {r['server_mean_batch']} |\n")
        if sweep_rows:
            f.write("\n| config | saturation (req/s) | offered (req/s) | achieved (req/s) | p50 (ms) | p99 (ms) | "
                    "p99.9 (ms) | 503 | dropped |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
            for r in sweep_rows:
                f.write(f"| {r['config']} | {float(r['saturation_rps']):,.1f} | {float(r['offered_rps']):,.1f} | "
                        f"{float(r['achieved_rps']):,.1f} | {r['p50_ms']} | {r['p99_ms']} | {r['p999_ms']} | "
                        f"{r['status_503']} | {r['dropped']} |\n")
    try:
        import matplotlib  # noqa: F401

        plot(args, pattern_rows, sweep_rows, runs_dir)
    except ImportError:
        print("serve_experiment: no matplotlib, so no plots (pip install matplotlib)", file=sys.stderr)
    print(open(args.out + ".md").read())


if __name__ == "__main__":
    main()
