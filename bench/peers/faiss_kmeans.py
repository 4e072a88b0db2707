#!/usr/bin/env python3
"""FAISS peer for k-means on the CPU (faiss-cpu from PyPI), beside the simkit command in the
same run.

  --timing DIR   time per iteration of faiss.Kmeans from the same points and initial centroids
                 as `simkit bench kmeans --save DIR` (<case>_X.npy, <case>_C0.npy), 25
                 iterations, no subsampling (max_points_per_centroid large); total / iterations
  --quality      final inertia on digits and a clustered set: FAISS with nredo = R (its own
                 random init, the best of R) against `simkit kmeans` with seeds 0..R-1 (best of
                 R), both 25 iterations; each inertia recomputed here in float64 at the final
                 centroids, so both are measured the same way

    python3 bench/peers/faiss_kmeans.py --timing DIR [--cases small] [--threads 2]
    python3 bench/peers/faiss_kmeans.py --quality --simkit build/apps/cli/simkit [--restarts 3]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import faiss
import numpy as np


def read_fvecs(path):
    a = np.fromfile(path, dtype=np.int32)
    d = a[0]
    return a.reshape(-1, d + 1)[:, 1:].view(np.float32).copy()


def inertia(X, C, spherical=False):
    """Sum over points of the cost to the nearest centroid, float64, in blocks."""
    X64, C64 = X.astype(np.float64), C.astype(np.float64)
    total = 0.0
    if spherical:
        Cn = C64 / np.maximum(np.linalg.norm(C64, axis=1, keepdims=True), 1e-300)
    for i in range(0, len(X64), 4096):
        x = X64[i:i + 4096]
        if spherical:
            s = (x @ Cn.T).max(1) / np.maximum(np.linalg.norm(x, axis=1), 1e-300)
            total += float((1.0 - s).sum())
        else:
            d2 = (x * x).sum(1)[:, None] - 2 * x @ C64.T + (C64 * C64).sum(1)[None, :]
            total += float(np.maximum(d2.min(1), 0).sum())
    return total


def timing(a):
    faiss.omp_set_num_threads(a.threads)
    print(f"faiss {faiss.__version__}, {a.threads} threads; time per iteration = total / iterations")
    for case in a.cases.split(","):
        X = np.load(f"{a.timing}/{case}_X.npy").astype(np.float32)
        C0 = np.load(f"{a.timing}/{case}_C0.npy").astype(np.float32)
        spherical = case == "wordnet"
        km = faiss.Kmeans(X.shape[1], C0.shape[0], niter=a.iters, spherical=spherical,
                          max_points_per_centroid=10**9, seed=1)
        t = time.perf_counter()
        km.train(X, init_centroids=C0)
        el = time.perf_counter() - t
        print(f"{case:10} {X.shape[0]} x {X.shape[1]}, K = {C0.shape[0]}: {el:.2f} s, "
              f"{el / a.iters * 1e3:.1f} ms per iteration, inertia {inertia(X, km.centroids, spherical):.7g}")


def simkit_best(cli, path, k, restarts, tmp):
    best = None
    out = os.path.join(tmp, "C.npy")
    for seed in range(restarts):
        r = subprocess.run([cli, "kmeans", "--data", path, "-k", str(k), "--iters", "25", "--tol", "0",
                            "--seed", str(seed), "--centroids", out, "--device", "cpu"],
                           capture_output=True, text=True, check=True)
        value = float(re.search(r"inertia = (\S+)", r.stdout).group(1))
        C = np.load(out)
        best = (value, C) if best is None or value < best[0] else best
    return best[1]


def quality(a):
    faiss.omp_set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(11)
        centres = rng.uniform(-1, 1, (300, 64)).astype(np.float32)
        clustered = (centres[rng.integers(0, 300, 60000)] + rng.normal(0, 0.25, (60000, 64))).astype(np.float32)
        cpath = os.path.join(tmp, "clustered.npy")
        np.save(cpath, clustered)
        dpath = os.path.join(a.data, "digits/digits_base.fvecs")
        for name, path, X, k in [("digits", dpath, read_fvecs(dpath), 10), ("clustered", cpath, clustered, 256)]:
            km = faiss.Kmeans(X.shape[1], k, niter=25, nredo=a.restarts, seed=1, max_points_per_centroid=10**9)
            km.train(X)
            f = inertia(X, km.centroids)
            s = inertia(X, simkit_best(a.simkit, path, k, a.restarts, tmp))
            print(f"{name:10} {X.shape[0]} x {X.shape[1]}, K = {k}, best of {a.restarts}: faiss {f:.7g}, "
                  f"simkit {s:.7g}, simkit / faiss = {s / f:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timing", metavar="DIR")
    ap.add_argument("--cases", default="small")
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--simkit", default="build/apps/cli/simkit")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if not a.timing and not a.quality:
        ap.error("give --timing DIR and/or --quality")
    if a.timing:
        timing(a)
    if a.quality:
        quality(a)


if __name__ == "__main__":
    sys.exit(main())
