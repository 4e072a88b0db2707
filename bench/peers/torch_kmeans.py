#!/usr/bin/env python3
"""PyTorch peer for `simkit bench kmeans`: Lloyd's iteration as a PyTorch user writes it, on the
GPU, from the same points and initial centroids (`simkit bench kmeans --save DIR` writes
DIR/<case>_X.npy and DIR/<case>_C0.npy).

One iteration, fp32 with TF32 off, everything resident on the GPU:
    assignment  per batch of 262,144 points: ||c||^2 - 2 X C^T (one addmm), argmin
                (cosine, spherical: X C^T with unit centroids, argmax)
    update      index_add_ of the points by label, bincount, divide (cosine: normalise);
                empty clusters keep their centroid
Timing: CUDA events around each iteration; the median of `--iters` iterations after 2 warm-up
iterations. The final inertia is taken after the last update (one more assignment), summed in
float64: sum of squared distances, or of 1 - cosine.

    python3 bench/peers/torch_kmeans.py --dir DIR [--cases synthetic,wordnet] [--iters 25] [--csv F]
"""

import argparse
import csv
import statistics
import sys

import numpy as np
import torch

BATCH = 262_144
COLUMNS = ["suite", "case", "metric", "m", "n", "d", "k", "device", "median_ms", "min_ms", "max_ms",
           "gflops", "pct_peak", "error", "check"]


def assign(X, C, spherical):
    """Labels and per-point costs (float32) of every row of X against C."""
    labels = torch.empty(X.shape[0], dtype=torch.int64, device=X.device)
    costs = torch.empty(X.shape[0], dtype=torch.float32, device=X.device)
    c_sq = (C * C).sum(1)
    for i in range(0, X.shape[0], BATCH):
        x = X[i:i + BATCH]
        if spherical:
            s = x @ C.T
            best, labels[i:i + BATCH] = s.max(1)
            costs[i:i + BATCH] = 1.0 - best / x.norm(dim=1).clamp_min(1e-30)
        else:
            s = torch.addmm(c_sq.unsqueeze(0), x, C.T, alpha=-2.0)
            best, labels[i:i + BATCH] = s.min(1)
            costs[i:i + BATCH] = (best + (x * x).sum(1)).clamp_min(0)
    return labels, costs


def update(X, C, labels, spherical):
    k = C.shape[0]
    sums = torch.zeros_like(C).index_add_(0, labels, X)
    counts = torch.bincount(labels, minlength=k)
    keep = counts > 0
    if spherical:
        new = sums / sums.norm(dim=1, keepdim=True).clamp_min(1e-30)
    else:
        new = sums / counts.clamp_min(1).unsqueeze(1).to(X.dtype)
    return torch.where(keep.unsqueeze(1), new, C)


def lloyd(X, C, spherical):
    labels, _ = assign(X, C, spherical)
    return update(X, C, labels, spherical)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cases", default="synthetic,wordnet")
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    print(f"torch {torch.__version__}, {props.name}; fp32, TF32 off; median of {a.iters} iterations")
    print(f"{'case':10} {'n x d, K':22} {'ms/iter':>9} {'min':>8} {'max':>8} {'GFLOP/s':>9} {'inertia':>14}")
    rows = []
    for case in a.cases.split(","):
        X = torch.from_numpy(np.load(f"{a.dir}/{case}_X.npy").astype(np.float32)).to(dev)
        C0 = torch.from_numpy(np.load(f"{a.dir}/{case}_C0.npy").astype(np.float32)).to(dev)
        spherical = case == "wordnet"
        n, d = X.shape
        k = C0.shape[0]
        C = C0.clone()
        for _ in range(2):
            C = lloyd(X, C, spherical)
        torch.cuda.synchronize()
        C = C0.clone()
        times = []
        for _ in range(a.iters):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            C = lloyd(X, C, spherical)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        _, costs = assign(X, C, spherical)
        inertia = float(costs.double().sum())
        med = statistics.median(times)
        gf = 2.0 * n * k * d / (med * 1e-3) / 1e9
        print(f"{case:10} {f'{n} x {d}, {k}':22} {med:9.2f} {min(times):8.2f} {max(times):8.2f} {gf:9.0f} "
              f"{inertia:14.7g}")
        rows.append(["kmeans", case, "cosine" if spherical else "sqeuclidean", n, k, d, a.iters, "torch",
                     f"{med:.4f}", f"{min(times):.4f}", f"{max(times):.4f}", f"{gf:.1f}", "", f"{inertia:.9g}", ""])
        del X, C0, C
        torch.cuda.empty_cache()
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            w.writerows(rows)
        print(f"wrote {a.csv}")


if __name__ == "__main__":
    sys.exit(main())
