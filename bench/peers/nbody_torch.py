#!/usr/bin/env python3
"""PyTorch peer for `simkit bench nbody` (the GPU direct sum): the softened gravitational
acceleration of each of N bodies due to all the others, written the way a PyTorch user would
write it, in plain fp32 (TF32 off), on inputs already resident on the device:

  direct_torch          for each chunk of targets T (c x 3) against all bodies X (N x 3):
                          diff = X[None] - T[:, None]                  (c x N x 3, x_j - x_i)
                          d2   = (diff * diff).sum(-1)
                          w    = m_j / (d2 + eps^2)^(3/2), 0 where d2 == 0
                          a    = einsum("cn,cnk->ck", w, diff)
                        the chunk c is the largest power of two with c * N * 3 * 4 bytes
                        <= --chunk-mib (default 1 GiB)
  direct_torch_compile  the same chunk function through torch.compile (skipped, with the reason
                        printed, if compilation fails; --no-compile leaves it out)

Workload (as apps/cli/bench_nbody.cpp): N = 2^s for each s of --sizes, positions uniform in
[-1, 1)^3, masses uniform in [0.5, 1.5), G = 1, softening 1e-3, drawn with numpy
default_rng(seed + s) (not bit-identical to simkit's generator). Interactions = N^2 per call;
TFLOP/s counts 20 flops per interaction (GPU Gems 3 ch. 31); % peak is against --peak-tflops,
by default simkit's figure for a known card (H100 / H200: 66.9) and blank otherwise.
error = max over 64 evenly spaced bodies of |a - a_ref| / sum_j m_j / (r_ij^2 + eps^2), with
a_ref in float64 on the device; check PASS when error <= 1e-5.

Timing: one warm-up call (the compilation, for torch_compile), then up to --runs calls, each
timed with CUDA events (host clock on the CPU); a further run is skipped once it would take the
size past --max-seconds. Median, minimum and maximum of those.

CSV columns (the same as `simkit bench --csv`, bench_harness.hpp csv_line):
  suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check
with suite nbody, metric gravity, m = n = N, d = 3, k = 0, device gpu or cpu.

    python3 bench/peers/nbody_torch.py --device cuda --sizes 14,16,18,20 --runs 10 --seed 0 \\
        --csv bench/results/h100-nbody-torch.csv
    python3 bench/peers/nbody_torch.py --device cpu --sizes 8,10 --runs 2 --csv /tmp/t.csv
                                                 # smoke test without a GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

try:
    import numpy as np
    import torch
except ImportError as e:
    sys.exit(f"{e}: pip install torch numpy")

COLUMNS = "suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check"
SOFTENING = 1e-3
FLOPS_PER_INTERACTION = 20.0
TOLERANCE = 1e-5
SAMPLE_BODIES = 64
# The FP32 peak simkit prints for these cards (SMs x 128 lanes x 2 x boost clock: 132 x 256 x
# 1.98 GHz), e.g. bench/results/2026-11-24-h100-kmeans.md and 2026-11-26-nbody.md, so that the
# two benches' % peak share a denominator.
KNOWN_PEAKS = {"H200": 66.9, "H100 80GB HBM3": 66.9, "H100 SXM": 66.9}


# ---------------------------------------------------------------------------- the computation

def accel_chunk(targets: torch.Tensor, pos: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
    """Accelerations at `targets` (c x 3) due to all bodies (pos N x 3, mass N)."""
    diff = pos[None, :, :] - targets[:, None, :]                    # c x N x 3
    d2 = (diff * diff).sum(-1)                                      # c x N
    inv3 = (d2 + SOFTENING * SOFTENING).rsqrt() ** 3
    # A pair at distance zero (a body and itself) contributes nothing, as in simkit/nbody.hpp;
    # with eps > 0 its diff is already 0, but the mask keeps eps = 0 from giving 0 * inf.
    w = torch.where(d2 > 0, inv3 * mass, 0.0)
    return torch.einsum("cn,cnk->ck", w, diff)                      # a batched GEMV


def chunk_rows(n: int, chunk_mib: int) -> int:
    """The largest power of two c <= n with c * n * 3 floats <= chunk_mib: bounds the temporaries."""
    c = 1
    while 2 * c <= n and 2 * c * n * 3 * 4 <= chunk_mib << 20:
        c *= 2
    return c


def direct_accel(step: Callable, pos: torch.Tensor, mass: torch.Tensor, chunk: int) -> torch.Tensor:
    out = torch.empty_like(pos)
    for start in range(0, pos.shape[0], chunk):
        out[start:start + chunk] = step(pos[start:start + chunk], pos, mass)
    return out


def max_error(accel: torch.Tensor, pos: torch.Tensor, mass: torch.Tensor, rows: torch.Tensor) -> float:
    """As bench_nbody.cpp max_error: |a - a_ref| / sum_j m_j / r2_ij at `rows`, float64."""
    p, m = pos.double(), mass.double()
    worst = torch.zeros((), dtype=torch.float64, device=pos.device)
    for part in rows.split(8):  # 8 targets at a time: 8 x N x 3 doubles stays small at N = 2^20
        diff = p[None, :, :] - p[part][:, None, :]
        d2 = (diff * diff).sum(-1)
        r2 = d2 + SOFTENING * SOFTENING
        ref = torch.einsum("cn,cnk->ck", torch.where(d2 > 0, m / (r2 * r2.sqrt()), 0.0), diff)
        scale = torch.where(d2 > 0, m / r2, 0.0).sum(-1)
        err = (accel[part].double() - ref).norm(dim=1) / scale
        worst = torch.maximum(worst, err.max())  # maximum propagates NaN
    return worst.item()


# ---------------------------------------------------------------------------- timing and inputs

def time_runs(fn: Callable[[], torch.Tensor], device: torch.device, runs: int, budget_s: float
              ) -> tuple[list[float], torch.Tensor]:
    """One warm-up call, then up to `runs` timed calls while the next fits in `budget_s`."""
    out = fn()
    times: list[float] = []
    while len(times) < runs:
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
        if (sum(times) + statistics.median(times)) * 1e-3 > budget_s:
            break
    return times, out


def bodies(log_n: int, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    n = 1 << log_n
    rng = np.random.default_rng(seed + log_n)
    pos = 2 * rng.random((n, 3), dtype=np.float32) - 1  # exact in float32, so inside [-1, 1)
    # 0.5 + r can round up to 1.5 in float32: keep the interval half-open.
    mass = np.minimum(0.5 + rng.random(n, dtype=np.float32), np.nextafter(np.float32(1.5), np.float32(0)))
    return torch.from_numpy(pos).to(device), torch.from_numpy(mass).to(device)


def default_peak(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((tflops for key, tflops in KNOWN_PEAKS.items() if key in name), None)


# ---------------------------------------------------------------------------- driver

def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="14,16,18,20", help="log2 N, comma-separated")
    p.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up (at most)")
    p.add_argument("--max-seconds", type=float, default=60.0, help="per size and case: caps the runs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    p.add_argument("--peak-tflops", type=float, default=None, help="FP32 peak (default: known cards)")
    p.add_argument("--chunk-mib", type=int, default=1024, help="bound on a chunk's c x N x 3 floats")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                   help="also time the torch.compile row")
    p.add_argument("--csv", default="", help="output CSV (none written if empty)")
    a = p.parse_args()
    try:
        a.size_list = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes: not a list of integers: {a.sizes}")
    if not a.size_list or not all(1 <= s <= 26 for s in a.size_list):
        p.error("--sizes: log2 N in 1 .. 26")
    if a.runs < 1 or a.max_seconds <= 0 or a.chunk_mib < 1:
        p.error("--runs, --max-seconds and --chunk-mib must be positive")
    return a


def main() -> None:
    args = parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --device cuda, but torch sees no CUDA device (use --device cpu)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    peak = args.peak_tflops if args.peak_tflops is not None else default_peak(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "host CPU"
    print(f"torch {torch.__version__} on {name}; FP32 peak "
          f"{f'{peak:.1f} TFLOP/s' if peak else 'unknown (% peak blank)'}; fp32, TF32 off")
    print(f"workload: N uniform in [-1, 1)^3, masses in [0.5, 1.5), softening {SOFTENING:g}; "
          f"{FLOPS_PER_INTERACTION:g} flops per interaction; error at {SAMPLE_BODIES} bodies vs float64\n")
    print(f"{'case':<21} {'N':>9} {'chunk':>6} {'runs':>4} {'median ms':>11} {'interactions/s':>14} "
          f"{'TFLOP/s':>8} {'% peak':>7} {'error':>9}", flush=True)

    cases: list[tuple[str, Callable]] = [("direct_torch", accel_chunk)]
    if args.compile:
        if hasattr(torch, "compile"):
            # dynamic=False: one specialised kernel per N (each size compiles once, in its warm-up).
            cases.append(("direct_torch_compile", torch.compile(accel_chunk, dynamic=False)))
        else:
            print(f"direct_torch_compile skipped: torch {torch.__version__} has no torch.compile")

    rows: list[str] = []
    for log_n in args.size_list:
        n = 1 << log_n
        pos, mass = bodies(log_n, args.seed, device)
        rows_checked = torch.tensor([i * (n - 1) // max(min(SAMPLE_BODIES, n) - 1, 1)
                                     for i in range(min(SAMPLE_BODIES, n))], device=device)
        chunk = chunk_rows(n, args.chunk_mib)
        for case, step in list(cases):
            try:
                times, accel = time_runs(lambda: direct_accel(step, pos, mass, chunk), device, args.runs,
                                         args.max_seconds)
            except Exception as e:  # a compiler failure: report it and drop the row from here on
                if case == "direct_torch":
                    raise
                print(f"{case} skipped from N = {n}: {type(e).__name__}: {str(e).strip().splitlines()[0]}")
                cases.remove((case, step))
                continue
            err = max_error(accel, pos, mass, rows_checked)
            del accel
            median, lo, hi = statistics.median(times), min(times), max(times)
            interactions = n * n / (median * 1e-3)
            gflops = interactions * FLOPS_PER_INTERACTION / 1e9
            pct = 100.0 * gflops / (peak * 1e3) if peak else None
            check = "PASS" if err <= TOLERANCE else "FAIL"  # NaN fails
            rows.append(f"nbody,{case},gravity,{n},{n},3,0,{'gpu' if device.type == 'cuda' else 'cpu'},"
                        f"{median:.4f},{lo:.4f},{hi:.4f},{gflops:.1f},{'' if pct is None else f'{pct:.1f}'},"
                        f"{err:.6g},{check}")
            print(f"{case:<21} {n:>9} {chunk:>6} {len(times):>4} {median:>11.3f} {interactions:>14.3e} "
                  f"{gflops / 1e3:>8.2f} {'-' if pct is None else f'{pct:.1f}':>7} {err:>9.2e} {check}",
                  flush=True)
        del pos, mass
        if device.type == "cuda":
            torch.cuda.empty_cache()

    if args.csv:
        tmp = args.csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            f.write(COLUMNS + "\n" + "".join(r + "\n" for r in rows))
        os.replace(tmp, args.csv)  # atomically, as bench.cpp write_csv
        print(f"wrote {args.csv} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
