#!/usr/bin/env python3
"""Bulk upsert throughput of `simkit serve` over REST (issue 34, "ingest"): points/s and MB/s of
JSON for batches of --batch points at --dim, with the server's own split of where the time went.

    .venv/bin/python bench/server/ingest_throughput.py                     # 50,000 x 384, batches of 1,000
    .venv/bin/python bench/server/ingest_throughput.py --connections 4 --repeat 5 --csv ingest.csv
    .venv/bin/python bench/server/ingest_throughput.py --form batch --floats short --payload none

What it does, in order:
  1. builds every request body before any clock starts (the client must not be the bottleneck):
     --points random unit vectors (NumPy, --seed) in bodies of --batch points, as
     {"points": [{"id", "vector", "payload"}, ...]} or Qdrant's {"batch": {"ids", "vectors",
     "payloads"}} (--form); the vectors' text is what Python clients send (--floats repr:
     json.dumps of float32 values widened to float64, ~20 characters a value) or 9 significant
     digits, what float32 needs to round-trip (--floats short, ~13 characters); payloads {"n": id, "tag": "t<id % 10>"}
     or none (--payload);
  2. starts `simkit serve --data-dir TMP --port 0 --device DEVICE` (port read from its
     "listening on http://HOST:PORT" line);
  3. --repeat times: creates a fresh collection (--dim, Cosine, flat), then --connections threads,
     each with one keep-alive http.client connection, send the bodies (PUT .../points?wait=true;
     every answer must be 200 "completed") until all are sent; the wall time runs from the
     first request to the last answer; the collection must then hold --points points;
  4. reads the server's simkit_upsert_seconds_total{stage} and simkit_upsert_requests_total from
     /metrics before and after each run: the time per request in each stage of the write path
     (receive: the body read off the socket, from the headers on; parse: the JSON to points;
     queue: waiting for the write pool and the collection's writer lock; store: the SQLite
     transaction up to its fsync; apply: the index append and the payload map); stages of
     different requests overlap (parsing runs on the I/O threads while a write is stored);
  5. prints one line per run and the best with the spread, the CPU seconds the client used (so
     that its share of the machine shows), stops the server (SIGTERM, exit status 0 required),
     deletes TMP, and appends a row to --csv.

Run it on a quiet machine: other processes compete with the server for its cores (the header
prints the load average when it starts). Standard library + NumPy; HTTP through http.client.
"""
import argparse
import csv
import datetime
import http.client
import json
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

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ("receive", "parse", "queue", "store", "apply")


def fail(msg):
    raise SystemExit(f"ingest_throughput: {msg}")


class Client:
    """One keep-alive connection (TCP_NODELAY); request() returns (status, body bytes)."""

    def __init__(self, port, timeout):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, method, path, body=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def close(self):
        self.conn.close()


def vector_texts(X, floats):
    """The JSON text of each row: what json.dumps writes for row.tolist() (repr of float64), or
    9 significant digits, which float32 needs to round-trip (%.9g)."""
    if floats == "repr":
        return [json.dumps(row) for row in X.tolist()]
    return ["[" + ",".join(row) + "]" for row in np.char.mod("%.9g", X).tolist()]


def make_bodies(args):
    rng = np.random.default_rng(args.seed)
    bodies = []
    for start in range(0, args.points, args.batch):
        n = min(args.batch, args.points - start)
        X = rng.standard_normal((n, args.dim), dtype=np.float32)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        vtexts = vector_texts(X, args.floats)
        ids = range(start, start + n)
        payloads = [None if args.payload == "none" else json.dumps({"n": i, "tag": f"t{i % 10}"}) for i in ids]
        if args.form == "points":
            parts = []
            for i, v, p in zip(ids, vtexts, payloads):
                parts.append(f'{{"id":{i},"vector":{v}' + (f',"payload":{p}}}' if p else "}"))
            text = '{"points":[' + ",".join(parts) + "]}"
        else:
            text = ('{"batch":{"ids":[' + ",".join(map(str, ids)) + '],"vectors":[' + ",".join(vtexts) + "]" +
                    (',"payloads":[' + ",".join(payloads) + "]" if args.payload != "none" else "") + "}}")
        bodies.append(text.encode())
    return bodies


def ready(port):
    """Whether the server answers: GET /readyz is 200 once its collections are loaded (a server
    without the route, 404, is ready when it listens)."""
    try:
        c = Client(port, 10)
        status, _ = c.request("GET", "/readyz")
        c.close()
        return status in (200, 404)
    except OSError:
        return False


def start_server(args, data_dir):
    cmd = [args.simkit, "serve", "--data-dir", data_dir, "--port", "0", "--host", "127.0.0.1",
           "--device", args.device] + args.server_arg
    out_path, err_path = data_dir + ".out", data_dir + ".err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(out_path, errors="replace").read())
        if m and ready(int(m.group(1))):
            return proc, int(m.group(1)), err_path
        if proc.poll() is not None:
            fail(f"the server exited {proc.returncode} at start: {open(err_path, errors='replace').read()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=30)
    fail(f"no 'listening on' line within 60 s; command: {' '.join(cmd)}")


def stop_server(proc, err_path):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
        return "the server did not exit within 120 s of SIGTERM (killed)"
    if rc != 0:
        return f"the server exited {rc} after SIGTERM (0 required): {open(err_path, errors='replace').read()[-2000:]}"
    return ""


def stage_seconds(client):
    """{stage: seconds} and the request count from the server's /metrics (zeros when absent)."""
    status, text = client.request("GET", "/metrics")
    if status != 200:
        fail(f"GET /metrics: HTTP {status}")
    out = {s: 0.0 for s in STAGES}
    requests = 0.0
    for line in text.decode().splitlines():
        m = re.match(r'simkit_upsert_seconds_total\{stage="(\w+)"\} (\S+)', line)
        if m and m.group(1) in out:
            out[m.group(1)] = float(m.group(2))
        m = re.match(r"simkit_upsert_requests_total (\S+)", line)
        if m:
            requests = float(m.group(1))
    return out, requests


def cpu_seconds(pid):
    """User + system CPU seconds process `pid` has used (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(port, args, bodies, name):
    admin = Client(port, args.request_timeout)
    status, body = admin.request("PUT", f"/collections/{name}", {"vectors": {"size": args.dim, "distance": "Cosine"}})
    if status != 200:
        fail(f"creating {name}: HTTP {status} {body[:300]!r}")
    before, requests0 = stage_seconds(admin)
    next_body = [0]
    lock = threading.Lock()
    errors = []
    path = f"/collections/{name}/points?wait=true"

    def sender():
        try:
            c = Client(port, args.request_timeout)
            while True:
                with lock:
                    k = next_body[0]
                    next_body[0] += 1
                if k >= len(bodies) or errors:
                    break
                status, answer = c.request("PUT", path, bodies[k])
                if status != 200 or b'"completed"' not in answer:
                    errors.append(f"body {k}: HTTP {status} {answer[:300]!r}")
                    break
            c.close()
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=sender) for _ in range(args.connections)]
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    client_cpu = time.process_time() - cpu0
    if errors:
        fail("; ".join(errors[:3]))
    after, requests1 = stage_seconds(admin)
    status, body = admin.request("GET", f"/collections/{name}")
    count = json.loads(body)["result"]["points_count"]
    if count != args.points:
        fail(f"{name} holds {count} points after the run, not {args.points}")
    admin.close()
    n_requests = max(1.0, requests1 - requests0)
    split = {s: 1000 * (after[s] - before[s]) / n_requests for s in STAGES}
    return wall, client_cpu, split, requests1 - requests0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simkit", default=os.path.join(REPO, "build", "apps", "cli", "simkit"),
                    help="the simkit binary (default: build/apps/cli/simkit of this checkout)")
    ap.add_argument("--device", default="cpu", help="serve --device")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more argument for simkit serve, repeatable (e.g. --server-arg=--io-threads=2)")
    ap.add_argument("--points", type=int, default=50_000, help="points upserted per run")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--batch", type=int, default=1000, help="points per request")
    ap.add_argument("--form", choices=["points", "batch"], default="points",
                    help="the body: a list of points, or Qdrant's batch of ids / vectors / payloads")
    ap.add_argument("--floats", choices=["repr", "short"], default="repr",
                    help="vector values as Python's json writes float32 values (repr) or with 9 significant digits")
    ap.add_argument("--payload", choices=["small", "none"], default="small")
    ap.add_argument("--connections", type=int, default=3, help="client threads, one keep-alive connection each")
    ap.add_argument("--repeat", type=int, default=3, help="runs, each into a fresh collection")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--request-timeout", type=float, default=600.0, help="socket timeout of one request, s")
    ap.add_argument("--tmp-dir", help="where the server's data folder is made (default: the system's temporary "
                    "folder); every acknowledged write is an fsync, so its file system matters")
    ap.add_argument("--csv", help="also append one row per run to this CSV file")
    args = ap.parse_args()
    if args.points < 1 or args.batch < 1 or args.connections < 1 or args.repeat < 1:
        ap.error("--points, --batch, --connections and --repeat must be >= 1")
    args.simkit = os.path.abspath(args.simkit)

    t = time.perf_counter()
    bodies = make_bodies(args)
    mb = sum(len(b) for b in bodies) / 1e6
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
          f"{datetime.datetime.now():%Y-%m-%d %H:%M}", flush=True)
    print(f"{len(bodies)} bodies of {args.batch} points x {args.dim} ({args.form}, floats {args.floats}, payload "
          f"{args.payload}): {mb:.1f} MB of JSON, {1e6 * mb / args.points:.0f} bytes a point; built in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    tmp = tempfile.mkdtemp(prefix="simkit-ingest-", dir=args.tmp_dir)
    proc, port, err_path = start_server(args, os.path.join(tmp, "data"))
    rows = []
    try:
        for r in range(args.repeat):
            server_cpu0 = cpu_seconds(proc.pid)
            wall, client_cpu, split, n = run_once(port, args, bodies, f"ingest{r}")
            server_cpu = cpu_seconds(proc.pid) - server_cpu0
            rows.append({"run": r + 1, "points": args.points, "dim": args.dim, "batch": args.batch, "form": args.form,
                         "floats": args.floats, "payload": args.payload, "connections": args.connections,
                         "seconds": round(wall, 4), "points_per_s": round(args.points / wall, 1),
                         "json_mb_per_s": round(mb / wall, 2), "client_cpu_s": round(client_cpu, 3),
                         "server_cpu_s": round(server_cpu, 3),
                         **{f"{s}_ms": round(split[s], 3) for s in STAGES}})
            print(f"run {r + 1}: {args.points / wall:,.0f} points/s, {mb / wall:.1f} MB/s of JSON ({wall:.2f} s; "
                  f"CPU: server {server_cpu:.2f} s, client {client_cpu:.2f} s); per request: " +
                  ", ".join(f"{s} {split[s]:.1f} ms" for s in STAGES), flush=True)
    finally:
        problem = stop_server(proc, err_path)
        shutil.rmtree(tmp, ignore_errors=True)
    if problem:
        fail(problem)
    rates = [row["points_per_s"] for row in rows]
    best = max(rates)
    print(f"best {best:,.0f} points/s of {len(rates)} runs (spread {min(rates):,.0f} .. {best:,.0f}, "
          f"{100 * (best - min(rates)) / best:.0f}%)")
    if args.csv:
        new = not os.path.exists(args.csv)
        with open(args.csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
