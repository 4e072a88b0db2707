#!/usr/bin/env python3
"""Saturation throughput and latency at half of it, for `simkit serve` configurations.

    python3 bench/server/serve_throughput.py --simkit build/apps/cli/simkit --data-dir DIR \
        --collection wordnet --queries ../shared/data/wordnet/queries_minilm_f16.npy \
        --config "batched=--max-batch 64" --config "unbatched=--max-batch 1" \
        --overload batched=1500 --overload unbatched=150 --device cpu --out results.md

For each configuration a server is started on DATA-DIR (a collection already loaded, e.g. with
load_npy.py), then:
  1. saturation: `simkit loadgen` offers more than the server can answer (--overload, constant
     arrivals); the throughput is what the SERVER completed per second, read from its own
     /metrics (searches run, simkit_batch_size_sum) at two moments inside the run, so neither a
     growing queue nor answers arriving after the schedule inflate it;
  2. half load: loadgen at half that throughput (constant, open loop), whose latencies run from
     each request's scheduled time: p50, p99, p99.9.
The server is stopped with SIGTERM and must exit 0. Results go to a Markdown table and a CSV.
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from serve_ready import wait_ready


def metric(url, name):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def cpu_seconds(pid):
    """User + system CPU seconds the process has used (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(simkit, data_dir, device, extra):
    cmd = [simkit, "serve", "--data-dir", data_dir, "--port", "0", "--device", device] + shlex.split(extra)
    err = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://\S+)", line)
    if not m:
        proc.kill()
        sys.exit(f"serve_throughput: the server did not start: {line!r}; log {err.name}")
    wait_ready(m.group(1))  # it listens first, then loads the collection: measure once it has
    return proc, m.group(1), err.name


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    if rc != 0:
        sys.exit(f"serve_throughput: the server exited {rc} after SIGTERM")


class Load:
    """`--loadgens` loadgen processes sharing the rate and the connections (one loadgen is one
    thread); their per-request CSVs are merged, so percentiles stay exact."""

    def __init__(self, args, url, rate, duration, warmup, tmp, tag):
        self.warmup, self.duration, self.files = warmup, duration, []
        self.procs = []
        p = args.loadgens
        for i in range(p):
            base = os.path.join(tmp, f"{tag}-{i}")
            self.files.append(base)
            cmd = [args.simkit, "loadgen", "--url", url, "--collection", args.collection, "--queries", args.queries,
                   "--limit", str(args.limit), "--pattern", "constant", "--rate", f"{rate / p:.3f}",
                   "--duration", str(duration), "--warmup", str(warmup), "--connections",
                   str(max(1, args.connections // p)), "--drain", "15", "--seed", str(i), "--json", base + ".json",
                   "--csv", base + ".csv"]
            self.procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))

    def wait(self):
        for proc in self.procs:
            out, _ = proc.communicate(timeout=self.duration + self.warmup + 120)
            if proc.returncode != 0:
                sys.exit(f"serve_throughput: loadgen failed:\n{out}")
        summary = {"status_200": 0, "status_503": 0, "status_504": 0, "dropped": 0, "send_lag_p99_ms": 0.0}
        latencies = []
        for base in self.files:
            j = json.load(open(base + ".json"))
            for key in ("status_200", "status_503", "status_504", "dropped"):
                summary[key] += j[key]
            summary["send_lag_p99_ms"] = max(summary["send_lag_p99_ms"], j["send_lag_ms"]["p99"] or 0.0)
            with open(base + ".csv") as f:
                for row in csv.DictReader(f):
                    if row["status"] == "200" and float(row["scheduled_s"]) >= self.warmup:
                        latencies.append(float(row["latency_ms"]))
        latencies.sort()
        # Nearest rank, as loadgen reports it.
        pick = lambda q: latencies[max(0, math.ceil(q * len(latencies)) - 1)] if latencies else float("nan")
        summary["latency_ms"] = {"p50": pick(0.50), "p99": pick(0.99), "p99_9": pick(0.999),
                                 "max": latencies[-1] if latencies else float("nan")}
        summary["achieved_rate"] = len(latencies) / self.duration
        return summary


def measure_saturation(args, proc, url, rate, tmp, warmup=3.0):
    """Offers `rate` (more than the server can answer) for args.duration s and returns what the
    server itself completed per second (its /metrics count of searches run, read at two moments
    inside the run), with the mean batch, where a search spent its time, the server's CPU use,
    and the loadgens' own summary."""
    lg = Load(args, url, rate, args.duration, warmup, tmp, "sat")
    time.sleep(warmup + 2)
    route = 'simkit_http_request_duration_seconds_sum{route="POST /collections/{name}/points/search"}'
    names = ("simkit_batch_size_sum", "simkit_batch_size_count", "simkit_batch_queue_wait_seconds_sum", route)

    def reading():
        return time.monotonic(), [metric(url, n) for n in names], cpu_seconds(proc.pid)

    t0, m0, c0 = reading()
    time.sleep(max(1.0, args.duration - 4))
    t1, m1, c1 = reading()
    summary = lg.wait()
    searches = max(1.0, m1[0] - m0[0])
    summary.update({
        "throughput": (m1[0] - m0[0]) / (t1 - t0),
        "mean_batch": searches / max(1.0, m1[1] - m0[1]),
        # waiting for its batch, and in all (headers read to response queued), averaged
        "in_queue_ms": 1000 * (m1[2] - m0[2]) / searches,
        "in_server_ms": 1000 * (m1[3] - m0[3]) / searches,
        "cores": (c1 - c0) / (t1 - t0),
        "cpu_us": 1e6 * (c1 - c0) / searches,
    })
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simkit", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--config", action="append", required=True, help="NAME=server arguments")
    ap.add_argument("--overload", action="append", default=[], help="NAME=offered req/s for saturation")
    ap.add_argument("--duration", type=float, default=20, help="seconds of each load run")
    ap.add_argument("--connections", type=int, default=1024, help="in all, shared by the loadgens")
    ap.add_argument("--loadgens", type=int, default=1, help="loadgen processes (one thread each)")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--label", default="", help="machine label for the table")
    ap.add_argument("--out", required=True, help="Markdown table; a .csv is written beside it")
    args = ap.parse_args()

    overload = dict(o.split("=", 1) for o in args.overload)
    rows = []
    for spec in args.config:
        name, extra = spec.split("=", 1)
        rate = float(overload.get(name, max(map(float, overload.values())) if overload else 2000))
        proc, url, log = start_server(args.simkit, args.data_dir, args.device, extra)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                sat = measure_saturation(args, proc, url, rate, tmp)
                throughput, mean_batch = sat["throughput"], sat["mean_batch"]
                in_queue_ms, in_server_ms, cores, cpu_us = (sat["in_queue_ms"], sat["in_server_ms"], sat["cores"],
                                                            sat["cpu_us"])
                print(f"[{name}] offered {rate:.0f}/s: server ran {throughput:.0f} searches/s "
                      f"(mean batch {mean_batch:.1f}, mean {in_queue_ms:.2f} ms queued, {in_server_ms:.2f} ms in the "
                      f"server; {cores:.2f} cores busy, {cpu_us:.0f} CPU us per search); loadgen: {sat['status_200']} x 200, "
                      f"{sat['status_503']} x 503, {sat['status_504']} x 504, {sat['dropped']} dropped", flush=True)
                # 2. Half of saturation, open loop.
                time.sleep(2)  # let the queue empty
                half = throughput / 2
                h = Load(args, url, half, args.duration, 3.0, tmp, "half").wait()
                lat = h["latency_ms"]
                print(f"[{name}] half load {half:.0f}/s: achieved {h['achieved_rate']:.0f}/s, "
                      f"p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, p99.9 {lat['p99_9']:.2f} ms, "
                      f"errors 503 {h['status_503']} 504 {h['status_504']} dropped {h['dropped']}, "
                      f"loadgen send lag p99 {h['send_lag_p99_ms']:.2f} ms", flush=True)
        finally:
            stop_server(proc)
        rows.append({"machine": args.label, "device": args.device, "config": name, "server_args": extra.strip(),
                     "offered_overload": rate, "saturation_rps": round(throughput, 1),
                     "mean_batch": round(mean_batch, 2), "sat_queue_ms": round(in_queue_ms, 3),
                     "sat_server_ms": round(in_server_ms, 3), "sat_server_cores": round(cores, 2),
                     "sat_cpu_us_per_search": round(cpu_us, 1), "half_rate": round(half, 1),
                     "half_achieved": round(h["achieved_rate"], 1), "p50_ms": round(lat["p50"], 3),
                     "p99_ms": round(lat["p99"], 3), "p999_ms": round(lat["p99_9"], 3),
                     "half_503": h["status_503"], "half_504": h["status_504"], "half_dropped": h["dropped"],
                     "half_send_lag_p99_ms": round(h["send_lag_p99_ms"], 3), "loadgens": args.loadgens})

    csv_path = os.path.splitext(args.out)[0] + ".csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(args.out, "w") as f:
        f.write("| machine | device | config | server args | saturation (req/s) | mean batch | "
                "half load (req/s) | p50 (ms) | p99 (ms) | p99.9 (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['machine']} | {r['device']} | {r['config']} | `{r['server_args']}` | "
                    f"{r['saturation_rps']:,.0f} | {r['mean_batch']} | {r['half_achieved']:,.0f} | {r['p50_ms']} | "
                    f"{r['p99_ms']} | {r['p999_ms']} |\n")
        # Each configuration against the last one (the unbatched baseline by convention).
        for r in rows[:-1]:
            f.write(f"\nSaturation ratio {r['config']} / {rows[-1]['config']}: "
                    f"{r['saturation_rps'] / rows[-1]['saturation_rps']:.1f}x\n")
    print(open(args.out).read())


if __name__ == "__main__":
    main()
