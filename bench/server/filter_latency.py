#!/usr/bin/env python3
"""Filtered search latency of `simkit serve` with and without payload indexes (issue 34: "a
filtered search with a payload index at 1% selectivity over 1,000,000 points answers in < 5 ms
on 2 cores; the same without the index").

    .venv/bin/python bench/server/filter_latency.py                      # 1,000,000 x 16, flat
    .venv/bin/python bench/server/filter_latency.py --points 100000 --searches 100 --md out.md

What it does, in order:
  1. starts `simkit serve --data-dir TMP --port 0 --device cpu --threads T` (upsert_latency.py's
     helpers), creates the collection "filtered" (--dim, Euclid, flat: exact, so every allowed
     point can be returned and the filter, not the index, decides what is searched);
  2. loads --points random vectors as ids 0..N-1, --batch points per request (wait=true), each
     with the payload {"lang": "l<k>", "price": p, "n": i % 1000}: k uniform in 0..99 (each
     keyword 1%), p uniform in [0, 100) with two decimals. The load goes through the REST API and
     its time is reported (a faster ingest is being built separately);
  3. for each query kind -- unfiltered; lang == "l7" (1%); price in [10, 11) (1%); lang in
     {l0..l9} and price < 10 (10% x 10% = 1%) -- runs --warmup searches and then --searches
     timed ones (limit 10, a fresh random query vector each, one keep-alive connection, one
     search at a time): client-side round trips in ms, median and p99 (nearest rank), and the
     number of hits of the last search (10 unless the filter is empty);
  4. creates the payload indexes lang: keyword and price: float (PUT .../index?wait=true,
     timed), checks that the filters select the same points as before (counted by a search with a
     limit above the expected count over the same query), and times the same searches again;
  5. prints a Markdown table (and writes it to --md), stops the server with SIGTERM (status 0
     required) and deletes TMP.
"""
import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upsert_latency as ul  # noqa: E402  (the server's start and stop, the HTTP client, percentiles)

COLLECTION = "filtered"
BASE = f"/collections/{COLLECTION}"

QUERIES = {
    "unfiltered": None,
    "keyword 1% (lang = l7)": {"must": [{"key": "lang", "match": {"value": "l7"}}]},
    "range 1% (10 <= price < 11)": {"must": [{"key": "price", "range": {"gte": 10, "lt": 11}}]},
    "keyword 10% and range 10% (1%)": {"must": [{"key": "lang", "match": {"any": [f"l{i}" for i in range(10)]}},
                                                {"key": "price", "range": {"lt": 10}}]},
}


def load(client, args, rng):
    t0 = time.monotonic()
    for start in range(0, args.points, args.batch):
        m = min(args.batch, args.points - start)
        X = rng.standard_normal((m, args.dim), dtype=np.float32)
        lang = rng.integers(0, 100, m)
        price = rng.integers(0, 10000, m)
        points = ",".join(
            f'{{"id":{start + i},"vector":{ul.vector_text(X[i])},"payload":'
            f'{{"lang":"l{lang[i]}","price":{price[i] / 100:.2f},"n":{(start + i) % 1000}}}}}' for i in range(m))
        status, body, _ = client.request("PUT", BASE + "/points?wait=true", ('{"points":[' + points + "]}").encode())
        ul.check_ok(status, body, f"loading the batch at id {start}")
        if (start // args.batch) % 20 == 19:
            print(f"  loaded {start + m:,} / {args.points:,} ({time.monotonic() - t0:.0f} s)", flush=True)
    return time.monotonic() - t0


def search_body(q, f, limit):
    body = {"vector": [float(x) for x in q], "limit": limit}
    if f is not None:
        body["filter"] = f
    return body


def time_searches(client, args, rng, f):
    """(latencies in ms of the timed searches, hits of the last one)."""
    times, hits = [], 0
    for i in range(args.warmup + args.searches):
        status, body, dt = client.request("POST", BASE + "/points/search",
                                          search_body(rng.standard_normal(args.dim), f, 10))
        ul.check_ok(status, body, "a search")
        hits = len(body["result"])
        if i >= args.warmup:
            times.append(dt * 1000)
    return times, hits


def matching(client, args, f):
    """How many points the filter selects (up to 20,000: two pages of searches, limit 10,000 each)."""
    total = 0
    for offset in (0, 10000):
        body = search_body(np.ones(args.dim), f, 10000)
        body["offset"] = offset
        status, answer, _ = client.request("POST", BASE + "/points/search", body)
        ul.check_ok(status, answer, "a counting search")
        total += len(answer["result"])
        if len(answer["result"]) < 10000:
            break
    return total


def run_all(client, args, rng, label, rows):
    for name, f in QUERIES.items():
        times, hits = time_searches(client, args, rng, f)
        rows.append((label, name, ul.pct(times, 0.5), ul.pct(times, 0.99), hits))
        print(f"  {label:>16} | {name:<32} | median {ul.pct(times, 0.5):8.2f} ms | p99 {ul.pct(times, 0.99):8.2f} ms",
              flush=True)


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ul.REPO).stdout.strip()
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simkit", default=os.path.join(ul.REPO, "build", "apps", "cli", "simkit"))
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--md", default="", help="also write the Markdown table here")
    ap.add_argument("--server-arg", action="append", default=[], help="an extra argument for simkit serve")
    ap.add_argument("--start-timeout", type=float, default=600)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    tmp = tempfile.mkdtemp(prefix="simkit-filter-bench-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    proc, port, err_path = ul.start_server(args, data)
    problem = ""
    try:
        client = ul.Client(port, timeout=600)
        ul.check_ok(*client.request("PUT", BASE, {"vectors": {"size": args.dim, "distance": "Euclid"}})[:2], "create")
        load_s = load(client, args, rng)
        print(f"loaded {args.points:,} points in {load_s:.1f} s ({args.points / load_s:,.0f} points/s)", flush=True)
        counts = {name: matching(client, args, f) for name, f in QUERIES.items() if f is not None}
        print(f"points matching: {counts}", flush=True)
        rows = []
        run_all(client, args, rng, "no index", rows)
        t0 = time.monotonic()
        for field, schema in [("lang", "keyword"), ("price", "float")]:
            ul.check_ok(*client.request("PUT", BASE + "/index?wait=true", {"field_name": field,
                                                                            "field_schema": schema})[:2], "index")
        index_s = time.monotonic() - t0
        print(f"payload indexes lang (keyword) and price (float) built in {index_s:.2f} s", flush=True)
        for name, f in QUERIES.items():
            if f is not None and matching(client, args, f) != counts[name]:
                ul.fail(f"{name}: the index changed how many points match")
        run_all(client, args, rng, "payload index", rows)
        client.close()
    finally:
        rc, problem = ul.stop_server(proc, err_path)
        shutil.rmtree(tmp, ignore_errors=True)

    cores = os.cpu_count()
    lines = [
        f"{args.points:,} points x {args.dim} (Euclid, flat), `simkit serve --device {args.device} --threads "
        f"{args.threads}`; {platform.processor() or platform.machine()}, {cores} cores (client on the same machine); "
        f"commit {commit()}; {datetime.date.today().isoformat()}.",
        f"Load through REST: {load_s:.1f} s ({args.points / load_s:,.0f} points/s, {args.batch:,} a request). "
        f"Payload indexes (lang: keyword, price: float) built in {index_s:.2f} s.",
        f"Points matching: {', '.join(f'{k}: {v:,}' for k, v in counts.items())}.",
        "",
        f"Latency of one search (limit 10), {args.searches} timed after {args.warmup} warm-up, client round trip:",
        "",
        "| payload indexes | query | median ms | p99 ms | hits |",
        "|---|---|---:|---:|---:|",
    ] + [f"| {label} | {name} | {p50:.2f} | {p99:.2f} | {hits} |" for label, name, p50, p99, hits in rows]
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.md:
        with open(args.md, "w") as out:
            out.write(text)
    if problem:
        ul.fail(problem)


if __name__ == "__main__":
    main()
