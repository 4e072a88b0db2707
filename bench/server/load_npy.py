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

from serve_ready import wait_ready


def request(conn, method, path, body, key):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["api-key"] = key
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, json.loads(data) if data else None


def upload(url, collection, X, texts=None, distance="Cosine", batch=1000, api_key="", first_id=0, progress=None):
    """Creates `collection` when missing and upserts the rows of X (n x d) as points first_id,
    first_id + 1, ... (wait=true, `batch` per request), with {"text": texts[i]} payloads when
    texts is given. progress(done, n) is called after each request. Returns the points count the
    server then reports. SystemExit with the server's answer when a request is refused."""
    n = X.shape[0]
    wait_ready(url)
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    base = f"/collections/{collection}"
    status, _ = request(conn, "GET", base, None, api_key)
    if status == 404:
        status, body = request(conn, "PUT", base, {"vectors": {"size": int(X.shape[1]), "distance": distance}},
                               api_key)
        if status != 200:
            sys.exit(f"load_npy: creating {collection}: {status} {body}")
    for start in range(0, n, batch):
        rows = np.asarray(X[start:min(start + batch, n)], dtype=np.float32)
        points = []
        for i, row in enumerate(rows):
            p = {"id": first_id + start + i, "vector": row.tolist()}
            if texts is not None:
                p["payload"] = {"text": texts[start + i]}
            points.append(p)
        status, body = request(conn, "PUT", base + "/points?wait=true", {"points": points}, api_key)
        if status != 200:
            sys.exit(f"load_npy: upsert at row {start}: {status} {body}")
        if progress:
            progress(min(start + batch, n), n)
    status, body = request(conn, "GET", base, None, api_key)
    return body["result"]["points_count"]


def read_texts(path, n):
    """The last column of each line of a TSV (docs.tsv: row, synset, text), n lines at least."""
    with open(path, encoding="utf-8") as f:
        texts = [line.rstrip("\n").split("\t")[-1] for line in f]
    if len(texts) < n:
        sys.exit(f"load_npy: {path} has {len(texts)} rows, the vectors {n}")
    return texts


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
    texts = read_texts(args.texts, n) if args.texts else None
    t0 = time.time()

    def progress(done, total):
        if sys.stderr.isatty():
            print(f"\rload_npy: {done}/{total} points, {time.time() - t0:.1f} s", end="", file=sys.stderr, flush=True)

    count = upload(args.url, args.collection, X[:n], texts, args.distance, args.batch, args.api_key, progress=progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"load_npy: {args.collection} holds {count} points ({n} loaded in {time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
