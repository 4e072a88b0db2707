"""simkit on 1, 2, 4, ... GPUs of one host (Context::gpu_ids): exact k-NN, the flat index and
ivf_flat batched search, each split over the GPUs and merged, against the same call on one GPU
and against PyTorch on one GPU, in one run.

    python bench/multi_gpu/bench_multi_gpu.py [--rows 1000000] [--dim 128] [--queries 10000]
        [--gpus 1,2,4] [--ivf-rows 10000000] [--nlist 4096] [--nprobe 64] [--repeat 5]
        [--csv out.csv] [--md out.md]
        [--workloads knn,flat,ivf_flat,ivf_pq,kmeans,beyond]

Workloads (k = 10, sqeuclidean, base and queries standard normal from --seed):
  knn       simkit.knn on host arrays: each call uploads each GPU's slice of the base (PCIe
            included, as a one-shot k-NN pays it), searches the slices concurrently, merges.
  flat      a flat index searched with the device naming the GPUs: each GPU keeps its slice
            resident after the first search; the timed searches move only the queries and the
            per-GPU top-k.
  ivf_flat  an ivf_flat index (nlist, nprobe) over --ivf-rows rows (the 10M rows kmeans uses)
            searched on P GPUs both ways the index splits (ivf_core.hpp's gpu_split): as
            replicas answering a slice of the queries each (the default while the index fits
            every GPU), and by rows (SIMKIT_GPU_SPLIT=rows, the way for an index larger than one
            GPU): a slice of every list per GPU, every GPU probing every query -- a fixed cost
            per GPU that does not shrink with P.
  ivf_pq    an ivf_pq index (nlist, --pq-m, --pq-refine) searched the same two ways; by rows,
            round 1 merges the GPUs' best code estimates and round 2 re-ranks the whole index's
            best on the host (src/index/ivf/ivf_pq_shards.hpp).
  beyond    a flat index of --beyond-factor x GPU 0's memory (2.5: it cannot be resident on one
            GPU), filled in batches after Index.reserve, searched for --beyond-queries queries
            on GPU 0 alone (the rows stream from host memory at each search: PCIe bounds it)
            and on the largest GPU count asked (each GPU's slice resident after the first
            search). Needs that much host memory; skipped with a note otherwise.
  kmeans    simkit.kmeans on --kmeans-rows x dim points, K = --kmeans-k, started from the first K
            rows: the time per Lloyd iteration (one assignment and one update; the difference of
            the median 1-iteration and 1 + --kmeans-iters runs of --repeat each, so without the
            points' upload), each GPU holding its shard of the points. The check: the labels equal the
            one-GPU labels (the centroids may differ by float64 rounding: kmeans_shards.hpp).
Each is timed as the median of --repeat calls after one warm-up call; throughput is queries per
second, and its ratio to P x the one-GPU figure is the scaling efficiency. Every P's ids and
values must equal the one-GPU ones bit for bit (CHECK FAIL otherwise). GPU counts above the
visible ones are skipped with a note. The PyTorch peer: the base resident on GPU 0, torch.cdist
on query chunks and torch.topk (float32, TF32 off).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import simkit


def median_seconds(call: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    out = call()  # warm-up: uploads, resident copies, kernel selection
    times: List[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def device_for(p: int) -> str:
    return "gpu:0" if p == 1 else "gpu:" + ",".join(str(g) for g in range(p))


def torch_knn(X: np.ndarray, Q: np.ndarray, k: int, repeat: int) -> Optional[float]:
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    Xt, Qt = torch.from_numpy(X).to(dev), torch.from_numpy(Q).to(dev)

    def run() -> Any:
        out = []
        for q0 in range(0, Qt.shape[0], 1024):
            d = torch.cdist(Qt[q0 : q0 + 1024], Xt)
            out.append(torch.topk(d, k, dim=1, largest=False).indices)
        torch.cuda.synchronize()
        return out

    seconds, _ = median_seconds(run, repeat)
    return seconds


def host_memory_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def fill_flat(index: "simkit.Index", rows: int, dim: int, seed: int) -> None:
    """rows x dim standard normal rows added in batches of 2^22, drawn on GPU 0 with PyTorch
    when it is there (host generation of hundreds of GB would dominate the run), else numpy."""
    try:
        import torch

        gen = torch.Generator(device="cuda:0").manual_seed(seed)
        draw = lambda n: torch.randn(n, dim, device="cuda:0", generator=gen).cpu().numpy()
    except Exception:
        rng = np.random.default_rng(seed)
        draw = lambda n: rng.standard_normal((n, dim), dtype=np.float32)
    index.reserve(rows)
    t0, batch = time.perf_counter(), 1 << 22
    for r in range(0, rows, batch):
        index.add(draw(min(batch, rows - r)))
        if (r // batch) % 16 == 15:
            print(f"  beyond: {r + batch:,} of {rows:,} rows added ({time.perf_counter() - t0:.0f} s)", flush=True)


def beyond_one_gpu(a: argparse.Namespace, g: Dict[str, Any], p: int, rng: np.random.Generator) -> Optional[List[Dict[str, Any]]]:
    """Exact search of a base --beyond-factor x GPU 0's memory: GPU 0 streaming against p GPUs
    with their slices resident. Returns the two table rows, or None with a note."""
    rows = int(a.beyond_factor * g["total_memory"] / (4 * a.dim))
    need = rows * (4 * a.dim + 8 + 48)  # rows, row ids, the id map's nodes and buckets
    if p < 2:
        print("note: beyond needs --gpus with 2 or more: skipped")
        return None
    if need > 0.9 * host_memory_available():
        print(f"note: beyond needs {need / 2**30:.0f} GiB of host memory, {host_memory_available() / 2**30:.0f} GiB "
              "available: skipped")
        return None
    base_gib = rows * a.dim * 4 / 2**30
    print(f"beyond: {rows:,} x {a.dim} rows = {base_gib:.0f} GiB, {a.beyond_factor} x GPU 0's "
          f"{g['total_memory'] / 2**30:.0f} GiB", flush=True)
    index = simkit.Index("flat", a.dim, "sqeuclidean")
    t0 = time.perf_counter()
    fill_flat(index, rows, a.dim, a.seed + 7)
    print(f"  beyond: built in {time.perf_counter() - t0:.0f} s", flush=True)
    Q = rng.standard_normal((a.beyond_queries, a.dim), dtype=np.float32)
    t0 = time.perf_counter()
    D1, I1 = index.search(Q, a.k, device="gpu:0")  # streamed: nothing to warm up, each call the same
    t1 = time.perf_counter() - t0
    print(f"  beyond: 1 GPU streaming {t1:.1f} s ({rows * a.dim * 4 / t1 / 1e9:.1f} GB/s of rows)", flush=True)
    tp, (Dp, Ip) = median_seconds(lambda: index.search(Q, a.k, device=device_for(p)), max(1, a.repeat // 2))
    same = bool(np.array_equal(I1, Ip) and np.array_equal(D1.view(np.uint32), Dp.view(np.uint32)))
    print(f"  beyond: {p} GPUs resident {tp:.2f} s: {t1 / tp:.1f}x the streaming GPU, "
          f"{'identical' if same else 'CHECK FAIL: differs from one GPU'}", flush=True)
    flops = 2.0 * rows * a.beyond_queries * a.dim
    label = f"flat beyond one GPU: {rows:,} x {a.dim} ({base_gib:.0f} GiB), {a.beyond_queries:,} queries"
    return [{"workload": label + ", 1 GPU streaming", "gpus": 1, "seconds": t1, "qps": a.beyond_queries / t1,
             "scaling": float("nan"), "tflops": flops / t1 / 1e12,
             "pct_peak": 100 * flops / t1 / 1e12 / g["fp32_tflops"], "same_as_one_gpu": True},
            {"workload": label + f", {p} GPUs resident ({t1 / tp:.1f}x)", "gpus": p, "seconds": tp,
             "qps": a.beyond_queries / tp, "scaling": float("nan"), "tflops": flops / tp / 1e12,
             "pct_peak": 100 * flops / tp / 1e12 / (p * g["fp32_tflops"]), "same_as_one_gpu": same}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--gpus", default="1,2,4", help="GPU counts, comma-separated")
    ap.add_argument("--ivf-rows", type=int, default=10_000_000)
    ap.add_argument("--nlist", type=int, default=4096)
    ap.add_argument("--nprobe", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workloads", default="knn,flat,ivf_flat,ivf_pq,kmeans")
    ap.add_argument("--pq-m", type=int, default=32)
    ap.add_argument("--pq-refine", type=int, default=4)
    ap.add_argument("--beyond-factor", type=float, default=2.5)
    ap.add_argument("--beyond-queries", type=int, default=1000)
    ap.add_argument("--kmeans-rows", type=int, default=10_000_000)
    ap.add_argument("--kmeans-k", type=int, default=4096)
    ap.add_argument("--kmeans-iters", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv")
    ap.add_argument("--md")
    a = ap.parse_args()

    visible = simkit.gpus()
    if not visible:
        print("no GPU visible: nothing to measure", file=sys.stderr)
        return 1
    counts = [int(c) for c in a.gpus.split(",")]
    for c in counts:
        if c > len(visible):
            print(f"note: {c} GPUs asked, {len(visible)} visible: skipped")
    counts = [c for c in counts if c <= len(visible)]
    g = visible[0]
    print(f"simkit multi-GPU: {len(visible)} x {g['name']}; FP32 peak {g['fp32_tflops']:.1f} TFLOP/s per GPU")
    rng = np.random.default_rng(a.seed)
    X = rng.standard_normal((a.rows, a.dim), dtype=np.float32)
    Q = rng.standard_normal((a.queries, a.dim), dtype=np.float32)
    flops = 2.0 * a.rows * a.queries * a.dim
    workloads = a.workloads.split(",")
    # One larger base for the inverted files and k-means (drawn once: 5 GB at 10M x 128).
    big_rows = max(a.ivf_rows if any(w.startswith("ivf") for w in workloads) else 0,
                   a.kmeans_rows if "kmeans" in workloads else 0)
    B = rng.standard_normal((big_rows, a.dim), dtype=np.float32) if big_rows else X

    indexes: Dict[str, simkit.Index] = {}
    if "flat" in workloads:
        indexes["flat"] = simkit.Index("flat", a.dim, "sqeuclidean")
        indexes["flat"].add(X, device="cpu")
    inverted = {"ivf_flat": f"ivf_flat,nlist={a.nlist}",
                "ivf_pq": f"ivf_pq,nlist={a.nlist},m={a.pq_m},refine={a.pq_refine}"}
    for w, description in inverted.items():
        if w in workloads:
            index = simkit.Index(description, a.dim, "sqeuclidean")
            t0 = time.perf_counter()
            index.train(B[: a.ivf_rows], device="gpu:0")
            index.add(B[: a.ivf_rows], device="gpu:0")
            print(f"{description}: built in {time.perf_counter() - t0:.1f} s")
            indexes[w] = index

    rows: List[Dict[str, Any]] = []
    failed = False
    # The inverted files split the queries while the index fits every GPU (replicas), their rows
    # otherwise (ivf_core.hpp's gpu_split): both are timed, the second forced by SIMKIT_GPU_SPLIT.
    runs: List[Tuple[str, int, Optional[str]]] = []
    for w in [w for w in workloads if w not in ("kmeans", "beyond")]:
        for p in counts:
            runs.append((w, p, None))
            if w.startswith("ivf") and p > 1:
                runs.append((w, p, "rows"))
    one: Optional[Tuple[np.ndarray, np.ndarray]] = None
    qps1 = 0.0
    for w, p, forced in runs:
        if p == 1:
            one, qps1 = None, 0.0
        if forced:
            os.environ["SIMKIT_GPU_SPLIT"] = forced
        try:
            dev = device_for(p)
            if w == "knn":
                call: Callable[[], Any] = lambda: simkit.knn(Q, X, a.k, "sqeuclidean", device=dev)
            elif w == "flat":
                call = lambda: indexes["flat"].search(Q, a.k, device=dev)
            else:
                call = lambda: indexes[w].search(Q, a.k, nprobe=a.nprobe, device=dev)
            seconds, (D, I) = median_seconds(call, a.repeat)
        finally:
            os.environ.pop("SIMKIT_GPU_SPLIT", None)
        qps = a.queries / seconds
        if p == 1:
            one, qps1 = (D, I), qps
        same = one is not None and np.array_equal(one[1], I) and np.array_equal(one[0].view(np.uint32), D.view(np.uint32))
        failed |= not same
        eff = qps / (p * qps1) if qps1 > 0 else float("nan")
        label = w if p == 1 or not w.startswith("ivf") else f"{w}, {'rows' if forced else 'queries'} split"
        row = {"workload": label, "gpus": p, "seconds": seconds, "qps": qps, "scaling": eff,
               "tflops": flops / seconds / 1e12 if not w.startswith("ivf") else float("nan"),
               "pct_peak": 100 * flops / seconds / 1e12 / (p * g["fp32_tflops"]) if not w.startswith("ivf") else float("nan"),
               "same_as_one_gpu": same}
        rows.append(row)
        print(f"{label:24s} {p} GPU: {seconds * 1e3:9.1f} ms  {qps:12,.0f} q/s  scaling {eff:5.2f}  "
              f"{'identical' if same else 'CHECK FAIL: differs from one GPU'}", flush=True)
    if "kmeans" in workloads:
        P = B[: a.kmeans_rows]
        first: Optional[np.ndarray] = None
        t1 = 0.0
        for p in counts:
            # Runs of 1 iteration and of 1 + --kmeans-iters: their difference is the iterations
            # alone, without the upload of the points and the set-up both pay.
            def run(iters: int) -> Tuple[float, Any]:
                t0 = time.perf_counter()
                r = simkit.kmeans(P, a.kmeans_k, init=P[: a.kmeans_k], iterations=iters, tol=0.0, device=device_for(p))
                return time.perf_counter() - t0, r
            # Medians of --repeat runs each: the set-up alone varies by a few hundred ms.
            short = statistics.median(run(1)[0] for _ in range(a.repeat))
            longs = [run(1 + a.kmeans_iters) for _ in range(a.repeat)]
            long, r = statistics.median(t for t, _ in longs), longs[-1][1]
            per_iter = (long - short) / a.kmeans_iters
            print(f"kmeans    {p} GPU: set-up and 1 iteration {short:.2f} s", flush=True)
            if p == 1:
                first, t1 = r.labels, per_iter
            agree = float(np.mean(first == r.labels)) if first is not None else float("nan")
            eff = t1 / (p * per_iter) if t1 > 0 else float("nan")
            rows.append({"workload": f"kmeans {a.kmeans_rows:,} x {a.dim}, K={a.kmeans_k} (per iteration)",
                         "gpus": p, "seconds": per_iter, "qps": a.kmeans_rows / per_iter, "scaling": eff,
                         "tflops": float("nan"), "pct_peak": float("nan"), "same_as_one_gpu": agree == 1.0})
            print(f"kmeans    {p} GPU: {per_iter * 1e3:9.1f} ms per iteration  scaling {eff:5.2f}  "
                  f"labels agree with one GPU: {100 * agree:.4f}%", flush=True)
    if "beyond" in workloads:
        r = beyond_one_gpu(a, g, max(counts), rng)
        if r is not None:
            rows.extend(r)
            failed |= not all(x["same_as_one_gpu"] for x in r)
    if "knn" in workloads:
        t = torch_knn(X, Q, a.k, a.repeat)
        if t is not None:
            rows.append({"workload": "torch cdist+topk (1 GPU, resident)", "gpus": 1, "seconds": t,
                         "qps": a.queries / t, "scaling": float("nan"), "tflops": flops / t / 1e12,
                         "pct_peak": 100 * flops / t / 1e12 / g["fp32_tflops"], "same_as_one_gpu": True})
            print(f"torch     1 GPU: {t * 1e3:9.1f} ms  {a.queries / t:12,.0f} q/s")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
    if a.md:
        with open(a.md, "w") as f:
            f.write(f"{len(visible)} x {g['name']}; knn and flat: {a.rows:,} x {a.dim} base; ivf_flat and ivf_pq: "
                    f"{a.ivf_rows:,} x {a.dim}, nlist={a.nlist}, nprobe={a.nprobe} (ivf_pq m={a.pq_m}, "
                    f"refine={a.pq_refine}); {a.queries:,} queries, k = {a.k}, sqeuclidean; median of {a.repeat}\n\n")
            f.write("| workload | GPUs | ms | queries/s | vs P x one GPU | TFLOP/s | % of P x FP32 peak | same as 1 GPU |\n")
            f.write("|---|---:|---:|---:|---:|---:|---:|---|\n")
            for r in rows:
                f.write(f"| {r['workload']} | {r['gpus']} | {r['seconds'] * 1e3:.1f} | {r['qps']:,.0f} | "
                        f"{r['scaling']:.2f} | {r['tflops']:.1f} | {r['pct_peak']:.0f} | {r['same_as_one_gpu']} |\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
