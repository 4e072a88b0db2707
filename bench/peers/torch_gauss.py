#!/usr/bin/env python3
"""PyTorch peer for `simkit bench gauss`: the discrete Gauss transform

    G(y_j) = sum_i q_i exp(-||y_j - x_i||^2 / h^2)

written the way a PyTorch user would: per tile of targets, torch.exp(-torch.cdist(Y_t, X)**2 / h**2) @ q,
in fp32 (TF32 off) on inputs already resident on the GPU. Same cases and CSV columns as simkit's suite:

    suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check

  seed   N = M = 65,536, d = 1..8, h = 0.3 d
  large  N = M = 2^20, d = 3, h = 0.5
  ifgt   N = M = 1,000,000, d = 3, h = 0.5 (the IFGT case of simkit, computed directly here)

Data uniform in [0, 1)^d, weights uniform in [0, 1) (torch's generator: not simkit's numbers).
error = max over 4,096 sampled targets of |G - ref| / |ref|, ref in float64; PASS at 1e-5.
gflops counts 3d + 3 FLOPs per pair (as simkit does); pct_peak = pairs/s (one exp each) over the
chip's exp rate 16 x FP32 peak / 256 (SMs x 16 SFU ex2 per clock x clock), when --peak-tflops is given.
Timing: CUDA events around each whole call (every tile); median of the timed runs. The large cases
(over 2^38 pairs) default to 3 timed runs after 1 warm-up: each takes seconds.

    python3 bench/peers/torch_gauss.py [--csv FILE] [--quick] [--cases seed,large,ifgt] [--repeat N]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import configure_precision, describe, sample_rows, time_runs, write_csv  # noqa: E402

TOLERANCE = 1e-5
SAMPLE_TARGETS = 4096
LARGE_PAIRS = 1 << 38


def cases_for(names, quick):
    out = []
    for name in names:
        if name == "seed":
            n = 4096 if quick else 65536
            out += [(f"seed-d{d}", n, n, d, 0.3 * d) for d in range(1, 9)]
        elif name == "large":
            n = (1 << 14) if quick else (1 << 20)
            out.append((f"2^{14 if quick else 20}-d3", n, n, 3, 0.5))
        elif name == "ifgt":
            n = 20000 if quick else 1000000
            out.append((f"ifgt-{'20k' if quick else '1M'}-d3", n, n, 3, 0.5))
        else:
            raise SystemExit(f"--cases: unknown case '{name}' (seed, large, ifgt)")
    return out


def gauss_tiled(Y, X, q, h, tile):
    out = torch.empty(Y.shape[0], device=Y.device, dtype=Y.dtype)
    inv_h2 = 1.0 / (h * h)
    for s in range(0, Y.shape[0], tile):
        out[s:s + tile] = torch.exp(-torch.cdist(Y[s:s + tile], X) ** 2 * inv_h2) @ q
    return out


def reference(Y, X, q, h, rows):
    """float64 G at the sampled rows: explicit differences (no ||y||^2 - 2 y.x + ||x||^2
    cancellation), in chunks of targets that keep each chunk's n x d differences near 256 MiB."""
    X64, q64 = X.double(), q.double()
    Ys = Y[torch.tensor(rows, device=Y.device)].double()
    chunk = max(1, (1 << 28) // (8 * X.shape[0] * X.shape[1]))
    ref = torch.empty(len(rows), dtype=torch.float64, device=Y.device)
    for s in range(0, len(rows), chunk):
        d2 = ((Ys[s:s + chunk, None, :] - X64[None, :, :]) ** 2).sum(-1)
        ref[s:s + chunk] = torch.exp(-d2 / (h * h)) @ q64
    return ref


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="write the results to this CSV file")
    ap.add_argument("--quick", action="store_true", help="small sizes (simkit's --quick): a smoke run")
    ap.add_argument("--cases", default="seed,large,ifgt", help="seed, large, ifgt (default: all)")
    ap.add_argument("--repeat", type=int, default=0, help="timed runs (default 10; 3 for the large cases)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 2; 1 for the large cases)")
    ap.add_argument("--seed", type=int, default=0, help="torch generator seed (default 0)")
    ap.add_argument("--batch-bytes", type=int, default=2 << 30,
                    help="bytes of one tile's fp32 target x source matrix (default 2 GiB)")
    ap.add_argument("--peak-tflops", type=float, default=0.0,
                    help="FP32 peak of the GPU, for pct_peak (default: left empty)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (for checking this script)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_gauss.py: no CUDA device visible to PyTorch (use --device cpu to check the script)")
    device = torch.device(args.device)
    configure_precision()
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    for line in describe(device):
        print(line)
    exp_rate = 16.0 * args.peak_tflops * 1e12 / 256.0
    if exp_rate:
        print(f"exp peak: {exp_rate / 1e12:.2f} Texp/s (16 x FP32 peak / 256)")

    rows = []
    for case, n, m, d, h in cases_for([c for c in args.cases.split(",") if c], args.quick):
        X = torch.rand(n, d, device=device, generator=generator)
        Y = torch.rand(m, d, device=device, generator=generator)
        q = torch.rand(n, device=device, generator=generator)
        tile = max(1, min(m, args.batch_bytes // (4 * n)))
        large = m * n > LARGE_PAIRS
        repeat = args.repeat or (3 if large else 10)
        warmup = args.warmup if args.warmup is not None else (1 if large else 2)
        times = time_runs(lambda: gauss_tiled(Y, X, q, h, tile), device, warmup, repeat)
        G = gauss_tiled(Y, X, q, h, tile)
        rows_s = sample_rows(m, SAMPLE_TARGETS)
        ref = reference(Y, X, q, h, rows_s)
        got = G[torch.tensor(rows_s, device=device)].double()
        err = ((got - ref).abs() / ref.abs()).max().item()
        check = "PASS" if err <= TOLERANCE else "FAIL"
        times.sort()
        med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
        pairs_s = m * n / (med * 1e-3)
        rows.append({
            "suite": "gauss", "case": case, "metric": "direct", "m": m, "n": n, "d": d, "k": 0, "device": "torch",
            "median_ms": f"{med:.4f}", "min_ms": f"{times[0]:.4f}", "max_ms": f"{times[-1]:.4f}",
            "gflops": f"{pairs_s * (3 * d + 3) / 1e9:.1f}",
            "pct_peak": f"{100.0 * pairs_s / exp_rate:.1f}" if exp_rate else "",
            "error": f"{err:.6g}", "check": check,
        })
        print(f"  {case}: {m} x {n} x {d}, h = {h:g}, tile {tile} targets: median {med:.2f} ms over {repeat} runs, "
              f"{pairs_s / 1e9:.2f} Gpairs/s, error {err:.2e} {check}", flush=True)
        del X, Y, q, G
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if args.csv:
        write_csv(args.csv, rows)
    failed = sum(r["check"] != "PASS" for r in rows)
    print(f"\n{len(rows)} cases, {failed} failed their check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
