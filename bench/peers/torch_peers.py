#!/usr/bin/env python3
"""PyTorch peers for `simkit bench pairwise` and `simkit bench knn`.

Runs the same shapes as simkit's suites, written the way a PyTorch user would write them,
in fp32 with TF32 switched off, on inputs already resident on the GPU, and writes a CSV with
the same columns as simkit's so bench/compare.py can join the two:

    suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check

  pairwise (1,000 x 10,000, d = 384, 768, 1024):
    cosine   F.normalize(Q) @ F.normalize(X).T
    l2       torch.cdist(Q, X)
    pearson  rows centred, then as cosine
    error: max |out - ref| (l2: |out - ref| / max(|ref|, 1)) against float64 on 8 query rows
  knn (k = 10, sqeuclidean; 1,000,000 x 128 with 10,000 queries, 1,000,000 x 768 with 1,000):
    per query batch: S = ||x||^2 - 2 Q X^T (one addmm), torch.topk(k, largest=False), then
    ||q||^2 added to the k kept values; the whole search is timed (norms, every batch, topk)
    recall@k against a float64 search on 200 queries (misses that tie the k-th float64
    distance within 1e-5 relative are reported, and do not fail the check)

Timing: CUDA events around each call, after warm-up runs; median of the timed runs.

    python3 bench/peers/torch_peers.py [--csv FILE] [--quick] [--suites pairwise,knn]
                                       [--cases 128,768] [--repeat N] [--warmup W]
"""

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

COLUMNS = ["suite", "case", "metric", "m", "n", "d", "k", "device", "median_ms", "min_ms", "max_ms",
           "gflops", "pct_peak", "error", "check"]
TOLERANCE = 1e-5
PAIRWISE_SAMPLE_ROWS = 8
KNN_SAMPLE_QUERIES = 200
KNN_K = 10


# ---------------------------------------------------------------------------- set-up

def configure_precision():
    """Plain fp32 everywhere: no TF32 in matrix products or convolutions."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def describe(device):
    lines = [f"torch {torch.__version__}, CUDA {torch.version.cuda}"]
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        lines.append(f"device: {p.name}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB")
    else:
        lines.append(f"device: cpu, {torch.get_num_threads()} threads (timings are not a GPU peer)")
    lines.append("precision: fp32; torch.backends.cuda.matmul.allow_tf32 = "
                 f"{torch.backends.cuda.matmul.allow_tf32}, torch.backends.cudnn.allow_tf32 = "
                 f"{torch.backends.cudnn.allow_tf32}, float32_matmul_precision = "
                 f"{torch.get_float32_matmul_precision()}")
    return lines


def time_runs(fn, device, warmup, repeat):
    """Milliseconds of each timed call: CUDA events on the GPU, the host clock on the CPU."""
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def uniform(rows, cols, device, generator):
    """Uniform in [-1, 1), like simkit's generator (not the same numbers)."""
    return torch.rand(rows, cols, device=device, generator=generator) * 2 - 1


def sample_rows(rows, count):
    """`count` row indices spread evenly over [0, rows), first and last included."""
    count = min(count, rows)
    if count <= 1:
        return [0]
    return [i * (rows - 1) // (count - 1) for i in range(count)]


def gflops(m, n, d, ms):
    return 2.0 * m * n * d / (ms * 1e-3) / 1e9 if ms > 0 else 0.0


def make_row(suite, case, metric, m, n, d, k, times, error, check, peak_tflops):
    med = statistics.median(times)
    rate = gflops(m, n, d, med)
    return {
        "suite": suite, "case": case, "metric": metric, "m": m, "n": n, "d": d, "k": k,
        "device": "torch", "median_ms": f"{med:.4f}", "min_ms": f"{min(times):.4f}",
        "max_ms": f"{max(times):.4f}", "gflops": f"{rate:.1f}",
        "pct_peak": f"{100.0 * rate / (peak_tflops * 1e3):.1f}" if peak_tflops else "",
        "error": f"{error:.6g}", "check": check,
    }


# ---------------------------------------------------------------------------- pairwise

def pairwise_fn(metric, Q, X):
    if metric == "cosine":
        return lambda: F.normalize(Q, dim=1) @ F.normalize(X, dim=1).T
    if metric == "l2":
        return lambda: torch.cdist(Q, X)
    if metric == "pearson":
        def pearson():
            Qc = Q - Q.mean(dim=1, keepdim=True)
            Xc = X - X.mean(dim=1, keepdim=True)
            return F.normalize(Qc, dim=1) @ F.normalize(Xc, dim=1).T
        return pearson
    raise ValueError(metric)


def pairwise_reference(metric, Q64, X64):
    """float64, with the l2 distances from differences (no expansion) so the reference is exact."""
    if metric == "l2":
        return torch.cdist(Q64, X64, compute_mode="donot_use_mm_for_euclid_dist")
    if metric == "pearson":
        Q64 = Q64 - Q64.mean(dim=1, keepdim=True)
        X64 = X64 - X64.mean(dim=1, keepdim=True)
    return F.normalize(Q64, dim=1) @ F.normalize(X64, dim=1).T


def pairwise_error(metric, out, Q, X, rows):
    idx = torch.tensor(rows, device=Q.device)
    ref = pairwise_reference(metric, Q[idx].double(), X.double())
    err = (out[idx].double() - ref).abs()
    if metric == "l2":
        err = err / ref.abs().clamp_min(1.0)
    if torch.isnan(err).any():
        return float("nan")
    return err.max().item()


def run_pairwise(args, device, generator, peak_tflops):
    m, n = (100, 1000) if args.quick else (1000, 10000)
    repeat = args.repeat or 20
    warmup = 3 if args.warmup is None else args.warmup
    rows = []
    print(f"\npairwise: {m} x {n}, uniform in [-1, 1); median of {repeat} runs after {warmup} warm-up runs")
    print_header(["case", "metric", "m x n x d", "median ms", "min ms", "max ms", "GFLOP/s", "error", "check"])
    for d in (384, 768, 1024):
        Q = uniform(m, d, device, generator)
        X = uniform(n, d, device, generator)
        for metric in ("cosine", "l2", "pearson"):
            fn = pairwise_fn(metric, Q, X)
            times = time_runs(fn, device, warmup, repeat)
            out = fn()
            if not torch.isfinite(out).all():
                error = float("nan")
            else:
                error = pairwise_error(metric, out, Q, X, sample_rows(m, PAIRWISE_SAMPLE_ROWS))
            check = "PASS" if error <= TOLERANCE else "FAIL"
            row = make_row("pairwise", f"seed0-d{d}", metric, m, n, d, 0, times, error, check, peak_tflops)
            rows.append(row)
            print_row([row["case"], metric, f"{m} x {n} x {d}", f"{float(row['median_ms']):.3f}",
                       f"{float(row['min_ms']):.3f}", f"{float(row['max_ms']):.3f}",
                       f"{float(row['gflops']):.0f}", f"{error:.2e}", check])
            del out
        del Q, X
    return rows


# ---------------------------------------------------------------------------- knn

def knn_search(Q, X, k, batch):
    """Exact k-NN by sqeuclidean, the plain way: one addmm + topk per query batch."""
    m = Q.shape[0]
    x_norm2 = (X * X).sum(dim=1).unsqueeze(0)  # 1 x n
    values = torch.empty(m, k, device=Q.device, dtype=Q.dtype)
    ids = torch.empty(m, k, device=Q.device, dtype=torch.int64)
    for s in range(0, m, batch):
        q = Q[s:s + batch]
        scores = torch.addmm(x_norm2, q, X.T, beta=1.0, alpha=-2.0)  # ||x||^2 - 2 q.x
        v, i = torch.topk(scores, k, dim=1, largest=False, sorted=True)
        values[s:s + batch] = v + (q * q).sum(dim=1, keepdim=True)
        ids[s:s + batch] = i
    return values, ids


def knn_recall(Q, X, ids, k, rows):
    """Recall@k of `ids` against float64 on the sampled rows; misses that tie the k-th
    float64 distance (within TOLERANCE, relative) are counted separately."""
    idx = torch.tensor(rows, device=Q.device)
    X64 = X.double()
    q64 = Q[idx].double()
    dist = (q64 * q64).sum(1, keepdim=True) - 2.0 * (q64 @ X64.T) + (X64 * X64).sum(1).unsqueeze(0)
    del X64
    ref_vals, ref_ids = torch.topk(dist, k, dim=1, largest=False, sorted=True)
    found = ids[idx]
    hit = (found.unsqueeze(2) == ref_ids.unsqueeze(1)).any(dim=2)
    kth = ref_vals[:, -1:]
    tie = dist.gather(1, found) <= kth + TOLERANCE * kth.abs().clamp_min(1.0)
    recall = hit.double().mean().item()
    misses = int((~hit).sum().item())
    ties = int((~hit & tie).sum().item())
    return recall, misses, ties


def run_knn(args, device, generator, peak_tflops):
    cases = [int(c) for c in args.cases.split(",") if c]
    repeat = args.repeat or 10
    warmup = 2 if args.warmup is None else args.warmup
    k = KNN_K
    rows = []
    print(f"\nknn: k = {k}, sqeuclidean, uniform in [-1, 1); median of {repeat} runs after {warmup} warm-up runs")
    for d in cases:
        if d == 128:
            n, m = (20000, 500) if args.quick else (1000000, 10000)
        elif d == 768:
            n, m = (20000, 100) if args.quick else (1000000, 1000)
        else:
            raise SystemExit(f"--cases: no knn case with d = {d} (the cases are 128 and 768)")
        X = uniform(n, d, device, generator)
        Q = uniform(m, d, device, generator)
        batch = max(1, min(m, args.batch_bytes // (4 * n)))
        fn = lambda: knn_search(Q, X, k, batch)  # noqa: E731
        times = time_runs(fn, device, warmup, repeat)
        _, ids = fn()
        recall, misses, ties = knn_recall(Q, X, ids, k, sample_rows(m, KNN_SAMPLE_QUERIES))
        check = "PASS" if misses == ties else "FAIL"
        case = "1M" if n == 1000000 else str(n)
        row = make_row("knn", f"{case}-d{d}", "sqeuclidean", m, n, d, k, times, recall, check, peak_tflops)
        rows.append(row)
        print(f"  d = {d}: {m} x {n}, query batch {batch}: median {float(row['median_ms']):.2f} ms, "
              f"{float(row['gflops']):.0f} GFLOP/s, recall@{k} {recall:.4f} on "
              f"{len(sample_rows(m, KNN_SAMPLE_QUERIES))} queries ({misses} misses, {ties} of them ties) {check}")
        del X, Q, ids
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------------------- output

WIDTHS = [11, 7, 18, 10, 9, 9, 9, 9, 5]


def print_header(titles):
    print_row(titles)
    print("  ".join("-" * w for w in WIDTHS))


def print_row(cells):
    out = []
    for i, (cell, w) in enumerate(zip(cells, WIDTHS)):
        out.append(cell.ljust(w) if i < 3 or i == len(WIDTHS) - 1 else cell.rjust(w))
    print("  ".join(out).rstrip(), flush=True)


def write_csv(path, rows):
    """Atomically: a temporary file beside `path`, renamed over it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torch_peers.", suffix=".csv", dir=folder)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"wrote {path} ({len(rows)} rows)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="write the results to this CSV file")
    ap.add_argument("--quick", action="store_true", help="small sizes (simkit's --quick): a smoke run")
    ap.add_argument("--suites", default="pairwise,knn", help="pairwise, knn or both (default)")
    ap.add_argument("--cases", default="128,768", help="knn cases by dimension (default 128,768)")
    ap.add_argument("--repeat", type=int, default=0, help="timed runs (default 20 pairwise, 10 knn)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 3 pairwise, 2 knn)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed (default 0)")
    ap.add_argument("--batch-bytes", type=int, default=4 << 30,
                    help="knn: bytes of the per-batch score matrix (default 4 GiB)")
    ap.add_argument("--peak-tflops", type=float, default=0.0,
                    help="FP32 peak for the pct_peak column (default: left empty)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (for checking this script)")
    args = ap.parse_args(argv)
    if args.repeat and args.repeat < 10 and args.device != "cpu":
        ap.error("GPU timings are the median of at least 10 runs: --repeat 10 or more")

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_peers.py: no CUDA device visible to PyTorch (use --device cpu to check the script)")
    device = torch.device(args.device)
    configure_precision()
    torch.manual_seed(args.seed)
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    for line in describe(device):
        print(line)
    print("timing: CUDA events around each call, inputs resident on the device; median of the timed runs"
          if device.type == "cuda" else "timing: host clock (CPU run)")

    rows = []
    suites = [s for s in args.suites.split(",") if s]
    for s in suites:
        if s not in ("pairwise", "knn"):
            ap.error(f"--suites: unknown suite '{s}' (pairwise, knn)")
    if "pairwise" in suites:
        rows += run_pairwise(args, device, generator, args.peak_tflops)
    if "knn" in suites:
        rows += run_knn(args, device, generator, args.peak_tflops)
    if args.csv:
        write_csv(args.csv, rows)
    failed = sum(r["check"] != "PASS" for r in rows)
    print(f"\n{len(rows)} cases, {failed} failed their check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
