#!/usr/bin/env python3
"""PyTorch peer for `simkit bench strategies`: the full m x n similarity matrix between Q (queries)
and X (base), written the way a PyTorch user would write it, in plain fp32 (TF32 off), on inputs
already resident on the device. One row per metric and dimension, strategy `torch`, block 0:

  euclidean    torch.cdist(Q, X, compute_mode='use_mm_for_euclid_dist'), i.e. the expansion
               sqrt(max(|q|^2 + |x|^2 - 2 q.x, 0)) through one matrix product (less accurate than
               summed squared differences when two rows almost coincide)
  cosine       F.normalize(Q) @ F.normalize(X).T
  pearson      rows centred on their means, then as cosine
  pearson_opt  the same computation as pearson (PyTorch has no separate one-pass form); the row
               is only labelled so, to sit beside simkit's one-pass strategies

CSV columns (the same as the C++ bench):
  device,strategy,metric,dim,block,mean_ms,std_ms,mops,gbps,max_rel_err
mops = m*n pairs / time / 1e6; gbps = (bytes of Q and X read once + m*n*4 bytes written) / time;
max_rel_err = max |value - ref| / max(|ref|, 1) against float64 on the device, over at most 64
evenly spaced query rows and all base columns.

Timing: one warm-up call, then --runs calls each timed with CUDA events (host clock on the CPU);
mean and sample standard deviation of those.

Inputs: standard-normal float32 made with torch on the device (generator seeded with --seed for
each dimension), or with --data DIR the arrays DIR/q_d{dim}.npy and DIR/x_d{dim}.npy (2-D float32;
their row counts replace --queries and --base).

    python3 bench/peers/strategies_torch.py --dims 384,768,1024 --queries 1000 --base 10000 \\
        --metrics euclidean,cosine,pearson,pearson_opt --runs 10 --seed 0 --device cuda \\
        --csv bench/results/strategies-torch.csv
    python3 bench/peers/strategies_torch.py --device cpu --dims 16 --queries 20 --base 50 \\
        --runs 2 --csv /tmp/t.csv        # smoke test without a GPU
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("PyTorch is not installed: pip install torch")

COLUMNS = ["device", "strategy", "metric", "dim", "block", "mean_ms", "std_ms", "mops", "gbps",
           "max_rel_err"]
METRICS = ("euclidean", "cosine", "pearson", "pearson_opt")
SAMPLE_ROWS = 64


# ---------------------------------------------------------------------------- the computations

def centred(a: torch.Tensor) -> torch.Tensor:
    return a - a.mean(dim=1, keepdim=True)


def torch_matrix(metric: str, q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes for the full similarity matrix."""
    if metric == "euclidean":
        return torch.cdist(q, x, compute_mode="use_mm_for_euclid_dist")
    if metric == "cosine":
        return F.normalize(q, dim=1) @ F.normalize(x, dim=1).T
    # pearson and pearson_opt: one computation, two labels
    return F.normalize(centred(q), dim=1) @ F.normalize(centred(x), dim=1).T


def reference(metric: str, q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """float64 values for the rows q: summed squared differences for euclidean, explicit
    dot / (norm * norm) otherwise (a zero norm gives 0, as F.normalize does)."""
    q, x = q.double(), x.double()
    if metric == "euclidean":
        return torch.stack([(x - row).pow(2).sum(dim=1).sqrt() for row in q])
    if metric != "cosine":
        q, x = centred(q), centred(x)
    denom = q.norm(dim=1, keepdim=True) * x.norm(dim=1).unsqueeze(0)
    dots = q @ x.T
    return torch.where(denom > 0, dots / denom.clamp(min=1e-300), torch.zeros_like(dots))


def max_rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).abs() / ref.abs().clamp(min=1.0)).max().item()


# ---------------------------------------------------------------------------- timing and inputs

def time_runs(fn: Callable[[], torch.Tensor], device: torch.device, runs: int
              ) -> tuple[list[float], torch.Tensor]:
    """One warm-up call, then `runs` timed calls; returns the times in ms and the last result."""
    out = fn()
    times = []
    for _ in range(runs):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            out = fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            out = fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times, out


def load_npy(path: str, dim: int, device: torch.device) -> torch.Tensor:
    try:
        import numpy as np
    except ImportError:
        sys.exit("--data needs numpy: pip install numpy")
    if not os.path.isfile(path):
        sys.exit(f"error: --data: {path} is missing")
    a = np.load(path, allow_pickle=False)
    if a.ndim != 2 or a.shape[1] != dim or a.shape[0] == 0:
        sys.exit(f"error: {path}: shape {a.shape}, expected (rows, {dim}) with rows > 0")
    if a.dtype != np.float32:
        sys.exit(f"error: {path}: dtype {a.dtype}, expected float32")
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def inputs(args: argparse.Namespace, dim: int, device: torch.device
           ) -> tuple[torch.Tensor, torch.Tensor]:
    if args.data:
        return (load_npy(os.path.join(args.data, f"q_d{dim}.npy"), dim, device),
                load_npy(os.path.join(args.data, f"x_d{dim}.npy"), dim, device))
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    q = torch.randn(args.queries, dim, device=device, dtype=torch.float32, generator=gen)
    x = torch.randn(args.base, dim, device=device, dtype=torch.float32, generator=gen)
    return q, x


# ---------------------------------------------------------------------------- driver

def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dims", default="384,768,1024", help="comma-separated dimensions")
    p.add_argument("--queries", type=int, default=1000, help="rows of Q")
    p.add_argument("--base", type=int, default=10000, help="rows of X")
    p.add_argument("--metrics", default=",".join(METRICS), help="comma-separated, of: " + ", ".join(METRICS))
    p.add_argument("--runs", type=int, default=10, help="timed runs after one warm-up")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    p.add_argument("--data", default="", help="directory holding q_d{dim}.npy and x_d{dim}.npy")
    p.add_argument("--csv", default="", help="output CSV (none written if empty)")
    a = p.parse_args()
    try:
        a.dim_list = [int(s) for s in a.dims.split(",") if s.strip()]
    except ValueError:
        p.error(f"--dims: not a list of integers: {a.dims}")
    a.metric_list = [s.strip() for s in a.metrics.split(",") if s.strip()]
    bad = [m for m in a.metric_list if m not in METRICS]
    if bad:
        p.error(f"--metrics: unknown {', '.join(bad)} (known: {', '.join(METRICS)})")
    if not a.dim_list or min(a.dim_list) < 1 or a.queries < 1 or a.base < 1 or a.runs < 1:
        p.error("--dims, --queries, --base and --runs must be positive")
    return a


def main() -> None:
    args = parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --device cuda, but torch sees no CUDA device (use --device cpu)")
    if args.data:  # every file up front, so a long run does not stop at its last dimension
        missing = [path for dim in args.dim_list for path in
                   (os.path.join(args.data, f"q_d{dim}.npy"), os.path.join(args.data, f"x_d{dim}.npy"))
                   if not os.path.isfile(path)]
        if missing:
            sys.exit("error: --data: missing " + ", ".join(missing))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    label = "gpu" if device.type == "cuda" else "cpu"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "host CPU"
    print(f"torch {torch.__version__} on {name}; fp32, TF32 off; euclidean via "
          f"torch.cdist(compute_mode='use_mm_for_euclid_dist')", flush=True)
    print(f"{'metric':<12} {'dim':>5} {'m x n':>13} {'mean_ms':>10} {'std_ms':>9} {'Mops/s':>10} "
          f"{'GB/s':>8} {'max_rel_err':>11}", flush=True)

    rows = []
    for dim in args.dim_list:
        q, x = inputs(args, dim, device)
        m, n = q.shape[0], x.shape[0]
        sample = torch.arange(min(SAMPLE_ROWS, m), device=device) * m // min(SAMPLE_ROWS, m)
        for metric in args.metric_list:
            times, out = time_runs(functools.partial(torch_matrix, metric, q, x), device, args.runs)
            err = max_rel_err(out[sample], reference(metric, q[sample], x))
            del out
            mean = statistics.fmean(times)
            std = statistics.stdev(times) if len(times) > 1 else 0.0
            seconds = mean * 1e-3
            nbytes = 4.0 * (m * dim + n * dim + m * n)
            r = {"device": label, "strategy": "torch", "metric": metric, "dim": dim, "block": 0,
                 "mean_ms": f"{mean:.4f}", "std_ms": f"{std:.4f}", "mops": f"{m * n / seconds / 1e6:.2f}",
                 "gbps": f"{nbytes / seconds / 1e9:.2f}", "max_rel_err": f"{err:.3e}"}
            rows.append(r)
            print(f"{metric:<12} {dim:>5} {f'{m}x{n}':>13} {r['mean_ms']:>10} {r['std_ms']:>9} "
                  f"{r['mops']:>10} {r['gbps']:>8} {r['max_rel_err']:>11}", flush=True)
        del q, x
        if device.type == "cuda":
            torch.cuda.empty_cache()

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {len(rows)} rows to {args.csv}")


if __name__ == "__main__":
    main()
