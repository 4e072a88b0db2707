#!/usr/bin/env python3
"""hnsw after deletes against a fresh build (issue 33's delete rule), on a real base.

The base's rows are split once, by a seeded permutation, into a start set of n / 1.2 rows and a
held-out 20% of that size. Each storage builds an index over the start set, removes a random 30%
of it (the index repairs itself inside that call: the removed nodes' neighbours re-linked, their
memory returned), then adds the held-out rows. A second index of the same description is built
fresh over the rows that are then live, in the same order (survivors, then the added rows).
Both are searched over an ef sweep and scored by recall@10 against the exact answer over the
live rows (simkit's flat index: float64 re-score, ties to the lower id); every result is
checked for removed ids.

    PYTHONPATH=build/python python3 bench/hnsw_deletes.py --threads 2 --csv deletes.csv

Prints one row per (storage, ef): recall and QPS of both indexes, and the repair's time and
memory. --base / --queries take any .npy pair (float16 or float32); the default is WordNet.
"""
import argparse
import csv
import sys
import time

import numpy as np

import simkit


def recall_at(found, truth, k):
    hits = sum(len(set(f[:k]) & set(t[:k])) for f, t in zip(found, truth))
    return hits / (k * len(truth))


def timed_search(index, Q, k, ef, threads):
    index.search(Q[:200], k, ef=ef, threads=threads)  # warm-up
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        _, ids = index.search(Q, k, ef=ef, threads=threads)
        t = time.perf_counter() - t0
        best = t if best is None or t < best else best
    return ids, len(Q) / best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="../shared/data/wordnet/base_minilm_f16.npy")
    ap.add_argument("--queries", default="../shared/data/wordnet/queries_minilm_f16.npy")
    ap.add_argument("--metric", default="cosine")
    ap.add_argument("--hnsw", default="hnsw,m=16,ef_construction=200", help="the index description, storage added")
    ap.add_argument("--storage", default="sq8,float32")
    ap.add_argument("--ef", default="16,32,48,64,128")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--csv")
    args = ap.parse_args()

    X = np.ascontiguousarray(np.load(args.base).astype(np.float32))
    Q = np.ascontiguousarray(np.load(args.queries).astype(np.float32))
    n, d, k = X.shape[0], X.shape[1], 10
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(n)
    n0 = int(n / 1.2)
    start = np.sort(perm[:n0])
    held = np.sort(perm[n0:n0 + n0 // 5])
    gone = rng.choice(start, size=n0 * 3 // 10, replace=False)
    survivors = np.setdiff1d(start, gone)  # ascending: the repaired index's node order
    live = np.concatenate([survivors, held])
    print(f"base {n} x {d}, start {n0} rows, remove {len(gone)} (30%), add {len(held)} (20%), live {len(live)}; "
          f"{len(Q)} queries, {args.threads} threads", flush=True)

    flat = simkit.Index("flat", d, args.metric)
    flat.add(X[live], live)
    _, truth = flat.search(Q, k, threads=args.threads)
    removed = set(gone.tolist())

    rows = []
    for storage in args.storage.split(","):
        desc = f"{args.hnsw},storage={storage}"
        index = simkit.Index(desc, d, args.metric)
        t0 = time.perf_counter()
        index.add(X[start], start, threads=args.threads)
        build = time.perf_counter() - t0
        before = index.memory_bytes
        t0 = time.perf_counter()
        assert index.remove(gone) == len(gone)
        repair = time.perf_counter() - t0
        after = index.memory_bytes
        t0 = time.perf_counter()
        index.add(X[held], held, threads=args.threads)
        add = time.perf_counter() - t0
        fresh = simkit.Index(desc, d, args.metric)
        t0 = time.perf_counter()
        fresh.add(X[live], live, threads=args.threads)
        fresh_build = time.perf_counter() - t0
        print(f"{storage}: build {build:.1f} s; remove + repair {repair:.2f} s, memory {before / 1e6:.1f} -> "
              f"{after / 1e6:.1f} MB; add {add:.1f} s; fresh build {fresh_build:.1f} s", flush=True)
        for ef in (int(e) for e in args.ef.split(",")):
            ids_r, qps_r = timed_search(index, Q, k, ef, args.threads)
            ids_f, qps_f = timed_search(fresh, Q, k, ef, args.threads)
            bad = int(np.isin(ids_r, list(removed)).sum())
            if bad:
                sys.exit(f"{storage} ef {ef}: {bad} removed ids returned")
            r_r, r_f = recall_at(ids_r, truth, k), recall_at(ids_f, truth, k)
            print(f"  ef {ef:4d}: repaired recall@10 {r_r:.4f} at {qps_r:8.0f} q/s | fresh {r_f:.4f} at "
                  f"{qps_f:8.0f} q/s | difference {r_r - r_f:+.4f}", flush=True)
            rows.append(dict(storage=storage, ef=ef, repaired_recall=round(r_r, 4), fresh_recall=round(r_f, 4),
                             repaired_qps=round(qps_r), fresh_qps=round(qps_f), removed_returned=bad,
                             build_s=round(build, 2), repair_s=round(repair, 3), add_s=round(add, 2),
                             fresh_build_s=round(fresh_build, 2), memory_before=before, memory_after=after))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
