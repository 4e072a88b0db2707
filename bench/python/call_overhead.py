"""What the Python binding adds to a simkit::knn call: the same call timed from C++
(knn_call) and from Python, in one run, on the same machine.

    python bench/python/call_overhead.py KNN_CALL_BINARY [--device cpu|gpu] [--csv out.csv]

Cases: the single-query case of the issue (1 x 128 against 1,000 rows, k = 10; median of
20,000 calls) and, on the GPU, 10,000 x 128 against 1,000,000 rows with torch CUDA tensors
(median of 20 calls). Prints medians and the difference (Python - C++).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, List

import numpy as np

import simkit


def cpp_median(binary: str, n: int, d: int, m: int, k: int, repeats: int, device: str, threads: int) -> float:
    # The same OpenBLAS kernels as this process (simkit's import may have chosen them).
    env = dict(os.environ, OPENBLAS_CORETYPE=simkit.blas_kernels())
    out = subprocess.run([binary, str(n), str(d), str(m), str(k), str(repeats), device, str(threads)], check=True,
                         capture_output=True, text=True, env=env).stdout
    print(f"  C++: {out.strip()}")
    return float(out.split("median_us=")[1].split()[0])


def py_median(call: Callable[[], Any], repeats: int, sync: Callable[[], None] = lambda: None) -> float:
    for _ in range(3):
        call()
    sync()
    times: List[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        sync()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--threads", type=int, default=0, help="CPU threads on both sides (0 = all)")
    ap.add_argument("--csv")
    a = ap.parse_args()
    rows = []
    rng = np.random.default_rng(1)

    # 1 x 128 against 1,000 rows: the binding's fixed cost dominates.
    X = rng.standard_normal((1000, 128), dtype=np.float32)
    q = rng.standard_normal((1, 128), dtype=np.float32)
    ctx = simkit.Context(device=a.device, threads=a.threads)
    print(f"simkit {simkit.__version__}, BLAS kernels {simkit.blas_kernels()}, threads {a.threads or 'all'}")
    if a.device == "gpu":
        import torch

        Xt, qt = torch.from_numpy(X).cuda(), torch.from_numpy(q).cuda()
        py = py_median(lambda: simkit.knn(qt, Xt, 10, context=ctx), 5000, torch.cuda.synchronize)
        cpp = cpp_median(a.binary, 1000, 128, 1, 10, 5000, "gpu", a.threads)
        rows.append(("1 x 1,000 x 128, k=10, torch CUDA", cpp, py))
    else:
        py = py_median(lambda: simkit.knn(q, X, 10, context=ctx), 20000)
        cpp = cpp_median(a.binary, 1000, 128, 1, 10, 20000, "cpu", a.threads)
        rows.append(("1 x 1,000 x 128, k=10, numpy", cpp, py))

    if a.device == "gpu":
        import torch

        X = torch.randn(1_000_000, 128, device="cuda")
        Q = torch.randn(10_000, 128, device="cuda")
        py = py_median(lambda: simkit.knn(Q, X, 10, context=ctx), 20, torch.cuda.synchronize)
        cpp = cpp_median(a.binary, 1_000_000, 128, 10_000, 10, 20, "gpu", a.threads)
        rows.append(("10,000 x 1,000,000 x 128, k=10, torch CUDA", cpp, py))

    print(f"{'case':45s} {'C++ us':>12s} {'Python us':>12s} {'diff us':>10s} {'ratio':>7s}")
    for name, cpp, py in rows:
        print(f"{name:45s} {cpp:12.1f} {py:12.1f} {py - cpp:10.1f} {py / cpp:7.3f}")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["case", "cpp_median_us", "python_median_us", "diff_us", "ratio"])
            for name, cpp, py in rows:
                w.writerow([name, f"{cpp:.2f}", f"{py:.2f}", f"{py - cpp:.2f}", f"{py / cpp:.4f}"])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
