#!/usr/bin/env python3
"""Loads an .npy matrix (float16 or float32) into a running `simkit serve` collection.

    python3 bench/server/load_npy.py --url http://127.0.0.1:6333 --collection wordnet \
        --vectors ../shared/data/wordnet/base_minilm_f16.npy --distance Cosine [--texts docs.tsv]

Creates the collection when it is missing, then upserts the rows as points 0..n-1 (wait=true,
`--batch` points per request), with {"text": ...} payloads from the last column of a TSV when
--texts is given. Standard library + NumPy only, so it runs wherever the server's tests run.
"""
import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse

import numpy as np


def request(conn, method, path, body, key):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["api-key"] = key
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, json.loads(data) if data else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--vectors", required=True, help=".npy, n x d, float16 or float32")
    ap.add_argument("--distance", default="Cosine", choices=["Cosine", "Dot", "Euclid", "Manhattan"])
    ap.add_argument("--texts", help="TSV whose last column becomes payload {'text': ...}, row for row "
                    "(docs.tsv: row, synset, text)")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=0, help="load only the first N rows (0: all)")
    ap.add_argument("--api-key", default=os.environ.get("SIMKIT_API_KEY", ""))
    args = ap.parse_args()

    X = np.load(args.vectors, mmap_mode="r")
    n = X.shape[0] if args.limit <= 0 else min(args.limit, X.shape[0])
    texts = None
    if args.texts:
        with open(args.texts, encoding="utf-8") as f:
            texts = [line.rstrip("\n").split("\t")[-1] for line in f]
        if len(texts) < n:
            sys.exit(f"load_npy: {args.texts} has {len(texts)} rows, the vectors {n}")
    u = urllib.parse.urlparse(args.url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    base = f"/collections/{args.collection}"
    status, _ = request(conn, "GET", base, None, args.api_key)
    if status == 404:
        status, body = request(conn, "PUT", base, {"vectors": {"size": int(X.shape[1]), "distance": args.distance}},
                               args.api_key)
        if status != 200:
            sys.exit(f"load_npy: creating {args.collection}: {status} {body}")
    t0 = time.time()
    for start in range(0, n, args.batch):
        rows = np.asarray(X[start:min(start + args.batch, n)], dtype=np.float32)
        points = []
        for i, row in enumerate(rows):
            p = {"id": start + i, "vector": row.tolist()}
            if texts is not None:
                p["payload"] = {"text": texts[start + i]}
            points.append(p)
        status, body = request(conn, "PUT", base + "/points?wait=true", {"points": points}, args.api_key)
        if status != 200:
            sys.exit(f"load_npy: upsert at row {start}: {status} {body}")
        done = min(start + args.batch, n)
        if sys.stderr.isatty():
            print(f"\rload_npy: {done}/{n} points, {time.time() - t0:.1f} s", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    status, body = request(conn, "GET", base, None, args.api_key)
    print(f"load_npy: {args.collection} holds {body['result']['points_count']} points "
          f"({n} loaded in {time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
