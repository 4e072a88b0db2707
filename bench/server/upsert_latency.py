#!/usr/bin/env python3
"""Single-point upsert latency of `simkit serve` on a loaded collection, and what a stream of
upserts does to the searches issued meanwhile (issue 28: "single-point upsert p50 at 100,000
points < 5 ms (was 129 ms), and a search issued during a stream of upserts waits for at most one
batch").

    .venv/bin/python bench/server/upsert_latency.py                        # 100,000 x 384, flat
    .venv/bin/python bench/server/upsert_latency.py --index ivf_flat,nlist=256 --csv ivf.csv
    .venv/bin/python bench/server/upsert_latency.py --points 10000 --upserts 50 --stream-seconds 2

What it does, in order:
  1. starts `simkit serve --data-dir TMP --port 0 --host 127.0.0.1 --device DEVICE --threads T`
     (port read from its "listening on http://HOST:PORT" line);
  2. creates the collection "writes" (--dim, Cosine, --index), and loads --points random unit
     vectors (NumPy, --seed) as ids 0..N-1, --batch points per request, wait=true; an index other
     than flat is then built with PUT /collections/writes/vector_index and awaited (a new collection
     starts flat; the others train on the stored points, docs/API.md);
  3. times --upserts single-point upserts, wait=true, alternately a new id (N, N+1, ...) and an
     existing one (overwritten), each with payload {"tag": i}: time.perf_counter around the whole
     HTTP round trip on one keep-alive connection (bodies are serialised before the clock starts);
  4. idle searches: one search (limit 10) every --interval-ms for --stream-seconds, no writes;
  5. stream: a thread upserts single points back to back (its own connection, alternating new and
     existing ids) for --stream-seconds while the main thread issues one search every
     --interval-ms; the search latencies during the stream against the idle ones show how long a
     search waits behind the writes;
  6. prints a Markdown table, stops the server with SIGTERM, appends a row to --csv (with the
     server's exit status), deletes TMP, and exits non-zero unless the server exited 0.

Latencies are client-side round trips in milliseconds; percentiles are nearest rank. The client
runs on the same machine as the server (the header says how many cores it has). Every loop is
bounded in count and in time. Standard library + NumPy; HTTP through http.client only.
"""
import argparse
import csv
import datetime
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from serve_ready import wait_ready

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION = "writes"
BASE = f"/collections/{COLLECTION}"


def fail(msg):
    raise SystemExit(f"upsert_latency: {msg}")


def pct(values, q):
    """Nearest-rank percentile (as loadgen and serve_throughput.py report them); NaN when empty."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def summary(values):
    return {"n": len(values), "p50": pct(values, 0.50), "p90": pct(values, 0.90), "p99": pct(values, 0.99),
            "max": max(values) if values else float("nan")}


class Client:
    """One keep-alive connection (TCP_NODELAY); request() returns (status, parsed body, seconds)."""

    def __init__(self, port, timeout):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, method, path, body=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        t0 = time.perf_counter()
        # A bytes body goes out in the same send() as the headers (http.client joins them).
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        dt = time.perf_counter() - t0
        return resp.status, (json.loads(raw) if raw else None), dt

    def close(self):
        self.conn.close()


def wait_for_binary(path, timeout_s):
    """The binary may be rebuilt under us by someone else: wait for it to reappear."""
    deadline = time.monotonic() + timeout_s
    while not os.access(path, os.X_OK):
        if time.monotonic() > deadline:
            fail(f"{path} is missing or not executable (waited {timeout_s:.0f} s)")
        time.sleep(2)


def start_server(args, data_dir):
    cmd = [args.simkit, "serve", "--data-dir", data_dir, "--port", "0", "--host", "127.0.0.1",
           "--device", args.device, "--threads", str(args.threads)] + args.server_arg
    out_path, err_path = os.path.join(data_dir, "..", "serve.out"), os.path.join(data_dir, "..", "serve.err")
    for attempt in range(3):  # a binary replaced mid-exec fails to start: try again (bounded)
        wait_for_binary(args.simkit, 300)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + args.start_timeout
        while time.monotonic() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(out_path, errors="replace").read())
            if m:
                wait_ready(f"http://127.0.0.1:{m.group(1)}", args.start_timeout)  # loading follows listening
                return proc, int(m.group(1)), err_path
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
            fail(f"no 'listening on' line within {args.start_timeout:.0f} s; command: {' '.join(cmd)}")
        log = open(err_path, errors="replace").read()[-2000:]
        print(f"upsert_latency: the server exited {proc.returncode} at start (attempt {attempt + 1}):\n{log}",
              file=sys.stderr)
        time.sleep(5)
    fail(f"the server did not start; command: {' '.join(cmd)}")


def stop_server(proc, err_path):
    """SIGTERM drains the server; returns (exit status, what went wrong or "") within two minutes."""
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
        return None, "the server did not exit within 120 s of SIGTERM (killed)"
    if rc != 0:
        log = open(err_path, errors="replace").read()[-2000:]
        return rc, f"the server exited {rc} after SIGTERM (0 required); its stderr ends:\n{log}"
    return rc, ""


def unit_rows(rng, n, d):
    X = rng.standard_normal((n, d), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def vector_text(row):
    """JSON text of one vector; float32 values printed with 9 significant digits round-trip."""
    return "[" + ",".join(f"{v:.9g}" for v in row.tolist()) + "]"


def upsert_body(pid, vtext, tag):
    return f'{{"points":[{{"id":{pid},"vector":{vtext},"payload":{{"tag":{tag}}}}}]}}'.encode()


def check_ok(status, body, what):
    if status != 200:
        fail(f"{what}: HTTP {status} {body}")


def load(client, args, rng):
    n, batch = args.points, args.batch
    t0 = time.monotonic()
    reported = 0  # tenths of the load reported so far
    for start in range(0, n, batch):
        rows = unit_rows(rng, min(batch, n - start), args.dim)
        points = ",".join(f'{{"id":{start + i},"vector":{vector_text(r)}}}' for i, r in enumerate(rows))
        status, body, _ = client.request("PUT", BASE + "/points?wait=true", ('{"points":[' + points + "]}").encode())
        check_ok(status, body, f"loading the batch at id {start}")
        done = min(start + batch, n)
        if done * 10 // n > reported:
            reported = done * 10 // n
            print(f"  loaded {done:,} / {n:,} points ({100 * done / n:.0f}%, {time.monotonic() - t0:.1f} s)",
                  flush=True)
    return time.monotonic() - t0


def build_index(client, args):
    """PUT /collections/writes/vector_index and poll GET until index.build is ready (bounded in time)."""
    t0 = time.monotonic()
    status, body, _ = client.request("PUT", BASE + "/vector_index", {"index": args.index})
    if status != 202:  # 202: the build goes on in the background
        fail(f"PUT {BASE}/vector_index {args.index!r}: HTTP {status} {body}")
    deadline = t0 + args.build_timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        status, body, _ = client.request("GET", BASE)
        check_ok(status, body, f"GET {BASE}")
        state = body["result"]["index"]["build"]
        if state == "ready":
            return time.monotonic() - t0, body["result"]["index"]["description"]
        if state.startswith("failed"):
            fail(f"building {args.index!r}: {state}")
    fail(f"the index build did not finish within {args.build_timeout:.0f} s")


def paced_searches(client, queries, seconds, interval_s, stop_early=None):
    """One search every interval_s for `seconds` (bounded count too); returns latencies in ms."""
    lat = []
    t0 = time.monotonic()
    max_count = int(seconds / interval_s) + 1
    for k in range(max_count):
        target = t0 + k * interval_s
        now = time.monotonic()
        if target - t0 >= seconds or now - t0 >= seconds or (stop_early and stop_early.is_set()):
            break
        if target > now:
            time.sleep(target - now)
        status, body, dt = client.request("POST", BASE + "/points/search", queries[k % len(queries)])
        check_ok(status, body, "search")
        if len(body["result"]) != 10:
            fail(f"a search returned {len(body['result'])} hits, not 10")
        lat.append(1000 * dt)
    return lat


class Writer(threading.Thread):
    """Upserts single points back to back until stopped, alternating a new id and an existing one;
    bounded by --stream-seconds (plus a margin) and by a count."""

    def __init__(self, port, args, vtexts, next_new, seconds, rng):
        super().__init__(daemon=True)
        self.port, self.args, self.vtexts, self.next_new, self.seconds = port, args, vtexts, next_new, seconds
        self.existing = rng.integers(0, args.points, size=len(vtexts)).tolist()
        self.stop = threading.Event()
        self.started = threading.Event()
        self.lat, self.error = [], None

    def run(self):
        try:
            client = Client(self.port, self.args.request_timeout)
            self.started.set()
            deadline = time.monotonic() + self.seconds + 30
            for i in range(1_000_000):
                if self.stop.is_set() or time.monotonic() > deadline:
                    break
                j = i % len(self.vtexts)
                pid = self.next_new + i // 2 if i % 2 == 0 else self.existing[j]
                status, body, dt = client.request("PUT", BASE + "/points?wait=true",
                                                  upsert_body(pid, self.vtexts[j], 1_000_000 + i))
                if status != 200:
                    raise RuntimeError(f"stream upsert {i}: HTTP {status} {body}")
                self.lat.append(1000 * dt)
            client.close()
        except Exception as e:  # reported by the main thread
            self.error = e
            self.started.set()


def filesystem_of(path):
    """Type and mount point of the file system holding path (Linux /proc/mounts): fsync costs follow it."""
    best = ("?", "")
    try:
        real = os.path.realpath(path)
        for line in open("/proc/mounts"):
            fields = line.split()
            mnt = fields[1].replace("\\040", " ")
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
                best = (fields[2], mnt)
    except OSError:
        pass
    return best


def machine_line(args):
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit, dirty = "unknown", ""
    built = datetime.datetime.fromtimestamp(os.path.getmtime(args.simkit)).strftime("%Y-%m-%d %H:%M")
    args.commit = commit + ("-dirty" if dirty else "")
    fs, mnt = filesystem_of(args.tmp_dir or tempfile.gettempdir())
    return (f"machine: {os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}){', ' + cpu if cpu else ''}; "
            f"data dir on {fs} ({mnt}); simkit commit {commit}{' (working tree has uncommitted changes)' if dirty else ''}, "
            f"binary {args.simkit} built {built}; date {datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simkit", default=os.path.join(REPO, "build", "apps", "cli", "simkit"),
                    help="the simkit binary (default: build/apps/cli/simkit of this checkout)")
    ap.add_argument("--device", default="cpu", help="cpu, gpu or auto (serve --device)")
    ap.add_argument("--threads", type=int, default=2, help="serve --threads: CPU threads of the CPU backend")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more argument for simkit serve, repeatable (e.g. --server-arg=--max-batch=1)")
    ap.add_argument("--points", type=int, default=100_000, help="points loaded before timing")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--index", default="flat",
                    help="index description, e.g. 'ivf_flat,nlist=256' (built after the load with PUT .../vector_index)")
    ap.add_argument("--batch", type=int, default=1000, help="points per request while loading")
    ap.add_argument("--upserts", type=int, default=200, help="timed single-point upserts (half new ids, half "
                    "overwrites, alternating)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed single-point overwrites and searches first")
    ap.add_argument("--stream-seconds", type=float, default=5.0,
                    help="length of the idle-search run and of the upsert stream")
    ap.add_argument("--interval-ms", type=float, default=20.0, help="one search every this many ms")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start-timeout", type=float, default=60.0, help="seconds to wait for 'listening on'")
    ap.add_argument("--build-timeout", type=float, default=1800.0, help="seconds to wait for an index build")
    ap.add_argument("--request-timeout", type=float, default=600.0, help="socket timeout of one request, s")
    ap.add_argument("--tmp-dir", help="where the server's data folder is made (default: the system's temporary "
                    "folder); a durable write is an fsync, so its file system matters (the header names it)")
    ap.add_argument("--csv", help="also append the row to this CSV file")
    args = ap.parse_args()
    if args.points < 2 or args.upserts < 1 or args.stream_seconds <= 0 or args.interval_ms <= 0:
        ap.error("--points >= 2, --upserts >= 1, --stream-seconds > 0 and --interval-ms > 0")
    args.simkit = os.path.abspath(args.simkit)
    wait_for_binary(args.simkit, 300)

    rng = np.random.default_rng(args.seed)
    header = machine_line(args)
    print(header, flush=True)
    tmp = tempfile.mkdtemp(prefix="upsert-latency-", dir=args.tmp_dir)
    proc = None
    try:
        data_dir = os.path.join(tmp, "data")
        os.makedirs(data_dir)
        proc, port, err_path = start_server(args, data_dir)
        print(f"server on port {port}: --device {args.device} --threads {args.threads} "
              f"{' '.join(args.server_arg)}".rstrip(), flush=True)
        client = Client(port, args.request_timeout)

        # 2. collection and load
        status, body, _ = client.request("PUT", BASE, {"vectors": {"size": args.dim, "distance": "Cosine"},
                                                        "index": args.index})
        check_ok(status, body, f"creating {COLLECTION} with index {args.index!r}")
        print(f"loading {args.points:,} x {args.dim} unit vectors, {args.batch} a request, wait=true", flush=True)
        load_s = load(client, args, rng)
        build_s, description = 0.0, args.index
        if args.index != "flat":
            build_s, description = build_index(client, args)
            print(f"  built {description} in {build_s:.1f} s", flush=True)
        status, body, _ = client.request("GET", BASE)
        check_ok(status, body, f"GET {BASE}")
        count, index_desc = body["result"]["points_count"], body["result"]["index"]["description"]
        if count != args.points:
            fail(f"the collection holds {count} points after the load, not {args.points}")
        print(f"  {count:,} points, index {index_desc}, load {load_s:.1f} s", flush=True)

        # Bodies are serialised up front so the clock times the round trip only.
        vtexts = [vector_text(r) for r in unit_rows(rng, max(args.upserts, 256), args.dim)]
        queries = [json.dumps({"vector": [float(v) for v in r], "limit": 10}).encode()
                   for r in unit_rows(rng, 256, args.dim)]

        # 3. timed single-point upserts, warm-up first (overwrites, so the count is unchanged)
        for i in range(args.warmup):
            status, body, _ = client.request("PUT", BASE + "/points?wait=true",
                                             upsert_body(i % args.points, vtexts[-1 - i % len(vtexts)], -1))
            check_ok(status, body, "warm-up upsert")
            status, body, _ = client.request("POST", BASE + "/points/search", queries[i % len(queries)])
            check_ok(status, body, "warm-up search")
        existing = rng.integers(0, args.points, size=args.upserts).tolist()
        bodies = []
        next_new = args.points
        for i in range(args.upserts):
            if i % 2 == 0:
                pid, next_new = next_new, next_new + 1
            else:
                pid = existing[i]
            bodies.append(upsert_body(pid, vtexts[i], i))
        upsert_ms = []
        for i, b in enumerate(bodies):
            status, body, dt = client.request("PUT", BASE + "/points?wait=true", b)
            check_ok(status, body, f"timed upsert {i}")
            if body["result"]["status"] != "completed":
                fail(f"timed upsert {i} answered {body}")
            upsert_ms.append(1000 * dt)
        up = summary(upsert_ms)
        print(f"single-point upserts (n={up['n']}): p50 {up['p50']:.2f} ms, p90 {up['p90']:.2f}, "
              f"p99 {up['p99']:.2f}, max {up['max']:.2f}", flush=True)

        # 4. idle searches at the stream's pace
        interval = args.interval_ms / 1000
        idle = summary(paced_searches(client, queries, args.stream_seconds, interval))
        print(f"searches with no writes (n={idle['n']}, one every {args.interval_ms:g} ms): p50 {idle['p50']:.2f} ms, "
              f"p99 {idle['p99']:.2f}, max {idle['max']:.2f}", flush=True)

        # 5. searches during a stream of single-point upserts
        writer = Writer(port, args, vtexts, next_new, args.stream_seconds, rng)
        writer.start()
        writer.started.wait(timeout=60)
        time.sleep(0.1)  # let the stream get going
        busy = summary(paced_searches(client, queries[::-1], args.stream_seconds, interval, writer.stop))
        writer.stop.set()
        writer.join(timeout=args.request_timeout + 60)
        if writer.is_alive():
            fail("the upsert stream did not stop")
        if writer.error:
            fail(f"upsert stream: {writer.error}")
        st = summary(writer.lat)
        print(f"searches during the upsert stream (n={busy['n']}): p50 {busy['p50']:.2f} ms, p99 {busy['p99']:.2f}, "
              f"max {busy['max']:.2f}; stream upserts n={st['n']} ({st['n'] / args.stream_seconds:.0f}/s): "
              f"p50 {st['p50']:.2f} ms, p99 {st['p99']:.2f}, max {st['max']:.2f}", flush=True)

        status, body, _ = client.request("GET", BASE)
        check_ok(status, body, f"GET {BASE}")
        final = body["result"]["points_count"]
        expected = next_new + (st["n"] + 1) // 2
        if final != expected:
            fail(f"the collection holds {final} points at the end, {expected} expected")
        client.close()

        # 6. the table first (the measurements stand whatever the shutdown does), then the shutdown
        table(args, header, index_desc, up, idle, busy, st)
        rc, problem = stop_server(proc, err_path)
        proc = None
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    if args.csv:
        f2 = lambda v: f"{v:.2f}"
        row = {"date": datetime.datetime.now().strftime("%Y-%m-%d"), "nproc": len(os.sched_getaffinity(0)),
               "commit": args.commit, "points": args.points,
               "dim": args.dim, "index": index_desc, "device": args.device, "threads": args.threads,
               "upserts": up["n"], "upsert_p50_ms": f2(up["p50"]), "upsert_p90_ms": f2(up["p90"]),
               "upsert_p99_ms": f2(up["p99"]), "upsert_max_ms": f2(up["max"]), "idle_searches": idle["n"],
               "search_idle_p50_ms": f2(idle["p50"]), "search_idle_p99_ms": f2(idle["p99"]),
               "search_idle_max_ms": f2(idle["max"]), "busy_searches": busy["n"],
               "search_writes_p50_ms": f2(busy["p50"]), "search_writes_p99_ms": f2(busy["p99"]),
               "search_writes_max_ms": f2(busy["max"]), "stream_upserts": st["n"],
               "stream_upsert_p50_ms": f2(st["p50"]), "stream_upsert_p99_ms": f2(st["p99"]),
               "stream_upsert_max_ms": f2(st["max"]), "load_s": f"{load_s:.1f}", "build_s": f"{build_s:.1f}",
               "server_exit": rc}
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(row.keys()))
            if new:
                w.writeheader()
            w.writerow(row)
        print(f"\nCSV row appended to {args.csv}")
    if problem:
        fail(problem)
    print("\nserver stopped with SIGTERM: exit status 0")


def table(args, header, index_desc, up, idle, busy, st):
    f2 = lambda v: f"{v:.2f}"
    print()
    print(header)
    print(f"`simkit serve --device {args.device} --threads {args.threads}{' ' if args.server_arg else ''}"
          f"{' '.join(args.server_arg)}`, {args.dim}-d Cosine, single-point upserts with wait=true "
          f"({up['n']} timed, alternately new and existing ids), searches limit 10 one every {args.interval_ms:g} ms "
          f"for {args.stream_seconds:g} s ({idle['n']} idle, {busy['n']} during writes); client round trips in ms\n")
    print("| points | index | upsert p50 | upsert p90 | upsert p99 | upsert max | search idle p50 | search idle p99 | "
          "search during writes p50 | p99 | max | stream upserts (n, p50) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.points:,} | {index_desc} | {f2(up['p50'])} | {f2(up['p90'])} | {f2(up['p99'])} | {f2(up['max'])} | "
          f"{f2(idle['p50'])} | {f2(idle['p99'])} | {f2(busy['p50'])} | {f2(busy['p99'])} | {f2(busy['max'])} | "
          f"{st['n']}, {f2(st['p50'])} |", flush=True)


if __name__ == "__main__":
    main()
