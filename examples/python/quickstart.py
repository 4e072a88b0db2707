"""simkit in a few lines: exact k-NN, an IVF index, files.

    python examples/python/quickstart.py
"""

from __future__ import annotations

import tempfile

import numpy as np

import simkit

rng = np.random.default_rng(0)
centers = rng.standard_normal((200, 96), dtype=np.float32)
X = centers[rng.integers(0, 200, 50_000)] + 0.3 * rng.standard_normal((50_000, 96), dtype=np.float32)  # the base
Q = X[:5] + 0.01 * rng.standard_normal((5, 96), dtype=np.float32)  # queries near rows 0..4

# Exact search, FAISS's result shapes: D (5 x 10 float32), I (5 x 10 int64).
D, I = simkit.knn(Q, X, k=10, metric="cosine")
print("exact:    ", I[:, 0])

# An inverted-file index: k-means cells, a few of them scanned per query.
index = simkit.Index("ivf_flat,nlist=256", 96, metric="cosine")
index.train(X)
index.add(X)
D2, I2 = index.search(Q, 10, nprobe=16)
recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I2.tolist(), I.tolist())])
print(f"ivf_flat: {I2[:, 0]}  recall@10 vs exact = {recall:.2f}, {len(index)} vectors, "
      f"{index.memory_bytes / 2**20:.1f} MiB")

with tempfile.TemporaryDirectory() as tmp:
    index.save(f"{tmp}/x.simkit")  # atomic, checksummed
    same = simkit.Index.load(f"{tmp}/x.simkit")
    assert np.array_equal(same.search(Q, 10, nprobe=16)[1], I2)
    simkit.write(f"{tmp}/base.fvecs", X[:100])
    print("read back:", simkit.read(f"{tmp}/base.fvecs").shape)

r = simkit.kmeans(X, 64, metric="cosine", seed=1)
print(f"k-means: inertia {r.inertia:.1f} after {r.iterations} iterations")
