#!/usr/bin/env python3
"""PyTorch peer for `simkit bench primitives`, on the same GPU: what a PyTorch user calls for the
same jobs. Same CSV columns and row keys as simkit's suite, so bench/compare.py pairs them:

  select     torch.topk(X, k, dim=1, largest=False, sorted=True) on a rows x cols uniform float
             matrix (10,000 x 1,000,000 by default, 40 GB), k = 10 and 100: simkit's select_k case
  scan       torch.cumsum(x, 0, dtype=torch.int32), x int32 in [0, 7], 2^s elements
  sortpairs  torch.sort(x, stable=True) of random int32: keys sorted with their positions (int64),
             which is what simkit's sortpairs case does with int32 positions

Timing: CUDA events around each call, median of the timed runs (simkit times with the host clock
around a synchronous call, which counts its launch overhead too). Rates as simkit's: GB/s =
bytes read once + written once / time; sorts in Gkeys/s. Each result is checked: top-k values
against a full sort of 16 rows, cumsum exactly, sort as non-decreasing with a valid permutation.

    python3 bench/peers/torch_primitives.py [--csv FILE] [--cases select,scan,sortpairs]
        [--sizes 20,24,27] [--rows 10000] [--cols 1000000] [--quick]
"""

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import describe, sample_rows, time_runs, write_csv  # noqa: E402


def row(op, dtype, inputs, m, n, k, times, rate, error, ok, peak_gbs=None):
    med = statistics.median(times)
    return {
        "suite": "primitives", "case": op, "metric": f"{op}-{dtype}-{inputs}", "m": m, "n": n, "d": 0,
        "k": k, "device": "torch", "median_ms": f"{med:.4f}", "min_ms": f"{min(times):.4f}",
        "max_ms": f"{max(times):.4f}", "gflops": f"{rate(med):.1f}",
        "pct_peak": f"{100.0 * rate(med) / peak_gbs:.1f}" if peak_gbs else "",
        "error": f"{error:.6g}", "check": "PASS" if ok else "FAIL",
    }


def gbs(nbytes):
    return lambda ms: nbytes / (ms * 1e-3) / 1e9


def run_select(args, device, gen):
    rows, cols = args.rows, args.cols
    X = torch.rand(rows, cols, device=device, generator=gen)
    checked = sample_rows(rows, 16)
    reference = torch.sort(X[checked], dim=1).values
    out = []
    for k in (10, 100):
        result = {}

        def call():
            result["v"] = torch.topk(X, k, dim=1, largest=False, sorted=True)

        times = time_runs(call, device, args.warmup, args.repeat)
        bad = int((result["v"].values[checked] != reference[:, :k]).sum().item())
        r = row("select", "float32", "uniform", rows, cols, k, times, gbs(4.0 * rows * cols), bad, bad == 0)
        print(f"select k={k:<4} {rows}x{cols}  torch.topk  {r['median_ms']:>9} ms  {r['gflops']:>8} GB/s  "
              f"mismatches {bad}  {r['check']}", flush=True)
        out.append(r)
    del X
    torch.cuda.empty_cache()
    return out


def run_scan(args, device, gen, log_size):
    n = 1 << log_size
    x = torch.randint(0, 8, (n,), device=device, dtype=torch.int32, generator=gen)
    result = {}

    def call():
        result["y"] = torch.cumsum(x, 0, dtype=torch.int32)

    times = time_runs(call, device, args.warmup, args.repeat)
    ref = torch.cumsum(x.to(torch.int64), 0)  # no wrap: the sum stays below 2^31 at 2^28
    bad = int((result["y"].to(torch.int64) != ref).sum().item())
    r = row("scan", "int32", "small", 1, n, 0, times, gbs(8.0 * n), bad, bad == 0)
    print(f"scan int32 2^{log_size:<3} torch.cumsum {r['median_ms']:>9} ms  {r['gflops']:>8} GB/s  "
          f"mismatches {bad}  {r['check']}", flush=True)
    return r


def run_sort(args, device, gen, log_size):
    n = 1 << log_size
    x = torch.randint(-2**31, 2**31 - 1, (n,), device=device, dtype=torch.int32, generator=gen)
    result = {}

    def call():
        result["s"] = torch.sort(x, stable=True)

    times = time_runs(call, device, args.warmup, args.repeat)
    keys, pos = result["s"].values, result["s"].indices
    bad = int((keys[1:] < keys[:-1]).sum().item()) + int((x[pos] != keys).sum().item())
    r = row("sortpairs", "int32", "random", 1, n, 0, times, lambda ms: n / (ms * 1e-3) / 1e9, bad, bad == 0)
    print(f"sortpairs int32 2^{log_size:<3} torch.sort(stable) {r['median_ms']:>9} ms  {r['gflops']:>8} Gkeys/s  "
          f"errors {bad}  {r['check']}", flush=True)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="write the results to this CSV file (atomically)")
    ap.add_argument("--cases", default="select,scan,sortpairs", help="select, scan, sortpairs (comma-separated)")
    ap.add_argument("--sizes", default="20,24,27", help="2^s elements for scan and sortpairs")
    ap.add_argument("--rows", type=int, default=10000, help="select: rows of the matrix")
    ap.add_argument("--cols", type=int, default=1000000, help="select: columns of the matrix")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in ("select", "scan", "sortpairs"):
            raise SystemExit(f"--cases: unknown case '{c}' (select, scan, sortpairs)")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.quick:
        args.rows, args.cols, sizes = 64, 4096, [16]
    if not torch.cuda.is_available():
        raise SystemExit("torch_primitives.py: no CUDA device (this peer is a GPU peer)")
    device = torch.device("cuda")
    for line in describe(device):
        print(line)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    rows = []
    if "select" in cases:
        rows += run_select(args, device, gen)
    for s in sizes:
        if "scan" in cases:
            rows.append(run_scan(args, device, gen, s))
        if "sortpairs" in cases:
            rows.append(run_sort(args, device, gen, s))
    if args.csv:
        write_csv(args.csv, rows)
    return 0 if all(r["check"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
