"""Semantic search over WordNet glosses with their MiniLM embeddings (../shared/data/wordnet).

Builds an ivf_flat index over the 117,659 gloss embeddings (cosine), measures recall@10 of a
few nprobe values against the float64 ground truth shipped with the data, and prints the best
glosses for the stored questions (questions.txt, embedded by the same model).

    python examples/python/wordnet_search.py [DATA_DIR]
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

import simkit

root = pathlib.Path(__file__).resolve().parents[2]
data = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent / "shared" / "data" / "wordnet"
if not (data / "base_minilm_f16.npy").exists():
    sys.exit(f"no WordNet data in {data}; pass its directory")

docs = [line.rstrip("\n").split("\t")[-1] for line in open(data / "docs.tsv", encoding="utf-8")]
X = np.load(data / "base_minilm_f16.npy").astype(np.float32)  # 117,659 x 384
Q = np.load(data / "queries_minilm_f16.npy").astype(np.float32)[:2000]
truth = simkit.read(data / "groundtruth_cosine.ivecs")[:2000, :10]

t0 = time.perf_counter()
index = simkit.Index("ivf_flat,nlist=1024", X.shape[1], metric="cosine")
index.train(X)
index.add(X)
print(f"built {index.description} over {len(index):,} glosses in {time.perf_counter() - t0:.1f} s")

for nprobe in (8, 32, 128):
    t0 = time.perf_counter()
    _, I = index.search(Q, 10, nprobe=nprobe)
    seconds = time.perf_counter() - t0
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I.tolist(), truth.tolist())])
    print(f"nprobe {nprobe:4d}: recall@10 {recall:.3f}, {len(Q) / seconds:,.0f} queries/s")

questions = [q.strip() for q in open(data / "questions.txt", encoding="utf-8") if q.strip()]
E = np.load(data / "questions_minilm_f16.npy").astype(np.float32)
D, I = index.search(E, 3, nprobe=64)
for question, scores, ids in zip(questions[:4], D.tolist(), I.tolist()):
    print(f"\n{question}")
    for score, i in zip(scores, ids):
        print(f"  {score:.3f}  {docs[i][:100]}")
