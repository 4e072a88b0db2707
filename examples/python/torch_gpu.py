"""simkit on PyTorch CUDA tensors: read in place, results are CUDA tensors on torch's stream.

    python examples/python/torch_gpu.py          (needs torch with CUDA and a CUDA simkit)
"""

from __future__ import annotations

import sys
import time

import simkit

try:
    import torch  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    sys.exit("this example needs PyTorch")
if not (torch.cuda.is_available() and simkit.built_with_cuda()):
    sys.exit("this example needs a GPU, torch with CUDA and a simkit built with CUDA")

X = torch.randn(1_000_000, 128, device="cuda")
Q = torch.randn(10_000, 128, device="cuda")

D, I = simkit.knn(Q, X, k=10)  # no host copy: D, I are CUDA tensors
torch.cuda.synchronize()
t0 = time.perf_counter()
D, I = simkit.knn(Q, X, k=10)
torch.cuda.synchronize()
print(f"exact k-NN, 10,000 x 1,000,000 x 128: {1e3 * (time.perf_counter() - t0):.1f} ms; "
      f"I on {I.device}, dtype {I.dtype}")

# The same rows, ranked by torch in float32, agree on nearly every id (simkit ranks in float64).
ref = torch.cdist(Q[:100], X).topk(10, largest=False).indices
print(f"ids equal to torch.cdist + topk on 100 queries: {(ref == I[:100]).float().mean().item():.4f}")
