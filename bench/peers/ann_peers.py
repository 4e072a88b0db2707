#!/usr/bin/env python3
"""ANN peers for `simkit bench ann`, on the files it saved (--save DIR: <case>_base.npy,
<case>_queries.npy, <case>_truth.npy) and with its CSV columns, so scripts/plot-ann.py can draw
them together.

  faiss    faiss-cpu (PyPI): IndexFlat (exact), IndexIVFFlat with the same nlist over an nprobe
           sweep, IndexHNSWFlat (M = 32) over an efSearch sweep, IndexIVFPQ (same nlist, --pq-m
           codes of 8 bits) wrapped in IndexRefineFlat (k_factor = each --refine) over the
           nprobe sweep, and IndexLSH (one table of --lsh-nbits random-rotation signs searched
           exhaustively in Hamming space) alone and with IndexRefineFlat (k_factor 10)
  hnswlib  hnswlib (PyPI): M = 16, ef_construction = 200, over an ef sweep
  torch    on the GPU: the IVF the seed document describes -- the nprobe nearest centroids of
           each query, gather their lists' vectors, distances, topk -- batched over queries by
           padding each batch's candidate lists (k-means in torch on a sample, same nlist)
  torch_lsh  on the GPU: the seed's random-hyperplane LSH (Algorithm 3) for each --lsh
           TABLESxBITS: a query's candidates are the rows sharing its bucket in any table (all rows
           when none do: the seed's full-scan fallback), scored exactly, topk; batched with a
           candidate mask per query

Cosine cases are searched as inner product on unit rows (the saved rows are normalised here);
recall@10 counts the first 10 truth ids found among the 10 returned, as simkit does.

    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems faiss,hnswlib --csv peers.csv
    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems faiss_compressed --csv pq-lsh.csv
    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases synthetic --systems torch --csv torch.csv
    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases seed --systems torch_lsh --lsh 6x2,4x1 --csv lsh.csv
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

K = 10
METRIC = {"wordnet": "cosine", "synthetic": "sqeuclidean", "seed": "cosine"}


def load(dirname, case):
    X = np.load(os.path.join(dirname, case + "_base.npy")).astype(np.float32)
    Q = np.load(os.path.join(dirname, case + "_queries.npy")).astype(np.float32)
    T = np.load(os.path.join(dirname, case + "_truth.npy"))[:, :K]
    if METRIC[case] == "cosine":
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-30)
        Q /= np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-30)
    return X, Q, T


def recall(ids, truth):
    hits = sum(len(set(a[:K].tolist()) & set(t.tolist())) for a, t in zip(ids, truth))
    return hits / truth.size


def measure(search, Q, T, repeat, single):
    """QPS of one batched call (median of `repeat`), recall, and single-query p50/p99 in ms."""
    ids = search(Q)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ids = search(Q)
        times.append(time.perf_counter() - t0)
    qps = len(Q) / float(np.median(times))
    lat = []
    for i in range(min(single, len(Q)) + 3):
        q = Q[i % len(Q) : i % len(Q) + 1]
        t0 = time.perf_counter()
        search(q)
        if i >= 3:
            lat.append(1e3 * (time.perf_counter() - t0))
    return recall(ids, T), qps, float(np.percentile(lat, 50)), float(np.percentile(lat, 99))


def row(system, case, index, nlist, nprobe, r, qps, p50, p99, build_s, memory, device, params=""):
    return (
        f"{system},{case},{index},{nlist},{nprobe},{r:.5f},{qps:.1f},{p50:.4f},{p99:.4f},"
        f'{build_s:.3f},{memory},{device},"{params}"'
    )


def serialized_bytes(index):
    import faiss

    return int(faiss.serialize_index(index).nbytes)


def run_faiss(case, X, Q, T, a, out):
    import faiss

    faiss.omp_set_num_threads(a.threads)
    d = X.shape[1]
    ip = METRIC[case] == "cosine"
    t0 = time.perf_counter()
    flat = faiss.IndexFlatIP(d) if ip else faiss.IndexFlatL2(d)
    flat.add(X)
    build = time.perf_counter() - t0
    r, qps, p50, p99 = measure(lambda q: flat.search(q, K)[1], Q, T, a.repeat, a.single)
    out(row("faiss", case, "IndexFlat", 0, 0, r, qps, p50, p99, build, X.nbytes, "cpu"))

    t0 = time.perf_counter()
    quantizer = faiss.IndexFlatIP(d) if ip else faiss.IndexFlatL2(d)
    ivf = faiss.IndexIVFFlat(quantizer, d, a.nlist, faiss.METRIC_INNER_PRODUCT if ip else faiss.METRIC_L2)
    ivf.train(X)
    ivf.add(X)
    build = time.perf_counter() - t0
    memory = serialized_bytes(ivf)
    for nprobe in a.nprobe:
        if nprobe > a.nlist:
            continue
        ivf.nprobe = nprobe
        r, qps, p50, p99 = measure(lambda q: ivf.search(q, K)[1], Q, T, a.repeat, a.single)
        out(row("faiss", case, "IndexIVFFlat", a.nlist, nprobe, r, qps, p50, p99, build, memory, "cpu"))

    t0 = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT if ip else faiss.METRIC_L2)
    hnsw.hnsw.efConstruction = 200
    hnsw.add(X)
    build = time.perf_counter() - t0
    memory = serialized_bytes(hnsw)
    for ef in a.ef:
        hnsw.hnsw.efSearch = ef
        r, qps, p50, p99 = measure(lambda q: hnsw.search(q, K)[1], Q, T, a.repeat, a.single)
        out(row("faiss", case, "IndexHNSWFlat", 0, ef, r, qps, p50, p99, build, memory, "cpu"))


def run_faiss_compressed(case, X, Q, T, a, out):
    """IndexIVFPQ + IndexRefineFlat and IndexLSH, the peers of simkit's ivf_pq and lsh."""
    import faiss

    faiss.omp_set_num_threads(a.threads)
    d = X.shape[1]
    ip = METRIC[case] == "cosine"
    metric = faiss.METRIC_INNER_PRODUCT if ip else faiss.METRIC_L2
    m = a.pq_m or max(1, d // 8)
    t0 = time.perf_counter()
    quantizer = faiss.IndexFlatIP(d) if ip else faiss.IndexFlatL2(d)
    ivfpq = faiss.IndexIVFPQ(quantizer, d, a.nlist, m, 8, metric)
    ivfpq.train(X)
    refined = faiss.IndexRefineFlat(ivfpq)  # keeps the vectors for the re-rank, as simkit's refine does
    refined.add(X)
    build = time.perf_counter() - t0
    memory = serialized_bytes(refined)
    for k_factor in a.refine:
        for nprobe in a.nprobe:
            if nprobe > a.nlist:
                continue
            ivfpq.nprobe = nprobe
            if k_factor > 0:
                refined.k_factor = float(k_factor)
                search = lambda q: refined.search(q, K)[1]  # noqa: E731
            else:
                search = lambda q: ivfpq.search(q, K)[1]  # noqa: E731
            r, qps, p50, p99 = measure(search, Q, T, a.repeat, a.single)
            params = f"m={m},refine={k_factor}"
            out(row("faiss", case, "IndexIVFPQ", a.nlist, nprobe, r, qps, p50, p99, build, memory, "cpu", params))

    for nbits in a.lsh_nbits:
        t0 = time.perf_counter()
        lsh = faiss.IndexLSH(d, nbits, True, False)  # random rotation, thresholds at 0: sign bits
        lsh.train(X)
        lsh.add(X)
        build = time.perf_counter() - t0
        memory = serialized_bytes(lsh)
        r, qps, p50, p99 = measure(lambda q: lsh.search(q, K)[1], Q, T, a.repeat, a.single)
        out(row("faiss", case, "IndexLSH", 0, nbits, r, qps, p50, p99, build, memory, "cpu"))  # nbits: the sweep
        inner = faiss.IndexLSH(d, nbits, True, False)  # RefineFlat must wrap an empty index
        inner.train(X)
        refined_lsh = faiss.IndexRefineFlat(inner)
        refined_lsh.add(X)
        refined_lsh.k_factor = 10.0
        r, qps, p50, p99 = measure(lambda q: refined_lsh.search(q, K)[1], Q, T, a.repeat, a.single)
        out(
            row(
                "faiss", case, "IndexLSH+Refine", 0, nbits, r, qps, p50, p99, build,
                serialized_bytes(refined_lsh), "cpu", "refine=10",
            )
        )


def run_hnswlib(case, X, Q, T, a, out):
    import hnswlib

    d = X.shape[1]
    space = "ip" if METRIC[case] == "cosine" else "l2"
    t0 = time.perf_counter()
    index = hnswlib.Index(space=space, dim=d)
    index.init_index(max_elements=len(X), ef_construction=200, M=16)
    index.set_num_threads(a.threads)
    index.add_items(X, np.arange(len(X)))
    build = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.bin")
        index.save_index(path)
        memory = os.path.getsize(path)
    for ef in a.ef:
        index.set_ef(max(ef, K))
        r, qps, p50, p99 = measure(lambda q: index.knn_query(q, k=K)[0], Q, T, a.repeat, a.single)
        out(row("hnswlib", case, "hnsw", 0, ef, r, qps, p50, p99, build, memory, "cpu"))


def run_torch(case, X, Q, T, a, out):
    import torch

    dev = torch.device("cuda")
    ip = METRIC[case] == "cosine"
    Xd, Qd = torch.from_numpy(X).to(dev), torch.from_numpy(Q).to(dev)
    n, d = Xd.shape

    def sync():
        torch.cuda.synchronize()

    # Exact: one matrix product and topk per batch of queries.
    def exact(q):
        qd = torch.from_numpy(q).to(dev) if isinstance(q, np.ndarray) else q
        out_ids = []
        for s in range(0, len(qd), 1024):
            b = qd[s : s + 1024]
            score = b @ Xd.T if ip else -(torch.cdist(b, Xd) ** 2)
            out_ids.append(torch.topk(score, K, dim=1).indices)
        res = torch.cat(out_ids).cpu().numpy()
        sync()
        return res

    t0 = time.perf_counter()
    sync()
    r, qps, p50, p99 = measure(exact, Q, T, a.repeat, a.single)
    out(row("torch", case, "exact", 0, 0, r, qps, p50, p99, time.perf_counter() - t0, X.nbytes, "gpu"))

    # k-means (Lloyd, 10 iterations) on a sample, then the lists as a CSR of row ids.
    t0 = time.perf_counter()
    g = torch.Generator(device=dev).manual_seed(0)
    sample = Xd[torch.randperm(n, device=dev, generator=g)[: min(n, 256 * a.nlist)]]
    C = sample[torch.randperm(len(sample), device=dev, generator=g)[: a.nlist]].clone()

    def nearest(v, C):
        if ip:
            return torch.argmax(v @ C.T, dim=1)
        return torch.argmin(torch.cdist(v, C), dim=1)

    for _ in range(10):
        lab = torch.cat([nearest(sample[s : s + 65536], C) for s in range(0, len(sample), 65536)])
        sums = torch.zeros_like(C).index_add_(0, lab, sample)
        cnt = torch.bincount(lab, minlength=a.nlist).clamp(min=1).unsqueeze(1).to(C.dtype)
        C = sums / cnt
        if ip:
            C = C / C.norm(dim=1, keepdim=True).clamp(min=1e-30)
    lab = torch.cat([nearest(Xd[s : s + 65536], C) for s in range(0, n, 65536)])
    order = torch.argsort(lab)
    counts = torch.bincount(lab, minlength=a.nlist)
    starts = torch.cumsum(counts, 0) - counts
    sync()
    build = time.perf_counter() - t0

    def ivf(q, nprobe):
        qd = torch.from_numpy(q).to(dev)
        res = []
        # Queries per batch: the gathered candidates (~ 2 x nprobe x n / nlist rows each) within 1 GiB.
        batch = max(1, min(a.torch_batch, int(2**30 / (8 * d * nprobe * n / a.nlist))))
        for s in range(0, len(qd), batch):
            b = qd[s : s + batch]
            probes = torch.topk(b @ C.T if ip else -torch.cdist(b, C), nprobe, dim=1).indices  # B x nprobe
            lens = counts[probes]  # B x nprobe
            total = lens.sum(1)
            L = int(total.max())
            # Candidate j of query i: which probe it falls in, then its offset in that list.
            j = torch.arange(L, device=dev).expand(len(b), L)
            ends = torch.cumsum(lens, 1)
            which = torch.searchsorted(ends, j, right=True).clamp(max=nprobe - 1)
            off = j - (ends.gather(1, which) - lens.gather(1, which))
            valid = j < total.unsqueeze(1)
            rows = order[(starts[probes.gather(1, which)] + off).clamp(max=n - 1)]
            V = Xd[rows]  # B x L x d
            score = torch.bmm(V, b.unsqueeze(2)).squeeze(2)
            if not ip:
                score = 2 * score - (V * V).sum(2)
            score = score.masked_fill(~valid, float("-inf"))
            top = torch.topk(score, min(K, L), dim=1).indices
            res.append(rows.gather(1, top))
        ids = torch.cat(res).cpu().numpy()
        sync()
        return ids

    for nprobe in a.nprobe:
        if nprobe > a.nlist:
            continue
        r, qps, p50, p99 = measure(lambda q: ivf(q, nprobe), Q, T, a.repeat, a.single)
        out(row("torch", case, "ivf_seed", a.nlist, nprobe, r, qps, p50, p99, build, X.nbytes, "gpu"))


def run_torch_lsh(case, X, Q, T, a, out):
    """The seed's Algorithm 3 in PyTorch: random hyperplanes, bucket match in any table, exact scores."""
    import torch

    dev = torch.device("cuda")
    ip = METRIC[case] == "cosine"
    Xd = torch.from_numpy(X).to(dev)
    n, d = Xd.shape
    sq = (Xd * Xd).sum(1)
    g = torch.Generator(device=dev).manual_seed(0)
    for config in a.lsh:
        tables, bits = (int(v) for v in config.split("x"))
        t0 = time.perf_counter()
        planes = torch.randn(d, tables * bits, device=dev, generator=g)
        weights = (2 ** torch.arange(bits, device=dev)).repeat(tables)

        def codes(V):
            b = ((V @ planes) > 0).to(torch.int64) * weights  # n x (tables * bits)
            return b.view(len(V), tables, bits).sum(2)  # n x tables bucket numbers

        Xc = torch.cat([codes(Xd[s : s + 65536]) for s in range(0, n, 65536)])
        torch.cuda.synchronize()
        build = time.perf_counter() - t0

        def search(q):
            qd = torch.from_numpy(q).to(dev)
            res = []
            batch = max(1, int(2**29 // (n * tables)))  # the B x n x tables match within 512 MiB
            for s in range(0, len(qd), batch):
                b = qd[s : s + batch]
                match = (codes(b)[:, None, :] == Xc[None, :, :]).any(2)  # B x n candidates
                match |= ~match.any(1, keepdim=True)  # the seed's fallback: no candidate, scan all
                score = b @ Xd.T if ip else 2 * (b @ Xd.T) - sq
                score = score.masked_fill(~match, float("-inf"))
                res.append(torch.topk(score, K, dim=1).indices)
            ids = torch.cat(res).cpu().numpy()
            torch.cuda.synchronize()
            return ids

        r, qps, p50, p99 = measure(search, Q, T, a.repeat, a.single)
        params = f"tables={tables},bits={bits}"
        out(row("torch", case, "lsh_seed", 0, 1, r, qps, p50, p99, build, X.nbytes, "gpu", params))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--cases", default="wordnet")
    p.add_argument("--systems", default="faiss,hnswlib")
    p.add_argument("--nlist", type=int, default=1024)
    p.add_argument("--nprobe", default="1,2,4,8,16,32,64,128")
    p.add_argument("--ef", default="16,32,64,128,256")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--single", type=int, default=200)
    p.add_argument("--torch-batch", type=int, default=256, help="most queries per gathered batch")
    p.add_argument("--pq-m", type=int, default=0, help="IndexIVFPQ codes per vector; 0: d / 8")
    p.add_argument("--refine", default="4", help="IndexRefineFlat k_factors over the IVFPQ sweep (0: none)")
    p.add_argument("--lsh-nbits", default="64,128,256,512,1024", help="IndexLSH code lengths")
    p.add_argument("--lsh", default="6x2,16x8,32x12", help="torch_lsh TABLESxBITS configurations")
    p.add_argument("--csv", default="")
    a = p.parse_args()
    a.nprobe = [int(v) for v in a.nprobe.split(",")]
    a.ef = [int(v) for v in a.ef.split(",")]
    a.refine = [int(v) for v in a.refine.split(",")]
    a.lsh_nbits = [int(v) for v in a.lsh_nbits.split(",")]
    a.lsh = a.lsh.split(",")
    lines = ["system,case,index,nlist,nprobe,recall_at_10,qps,p50_ms,p99_ms,build_s,memory_bytes,device,params"]

    def out(line):
        print(line, flush=True)
        lines.append(line)

    print(lines[0])
    runners = {
        "faiss": run_faiss,
        "faiss_compressed": run_faiss_compressed,
        "hnswlib": run_hnswlib,
        "torch": run_torch,
        "torch_lsh": run_torch_lsh,
    }
    for case in a.cases.split(","):
        X, Q, T = load(a.dir, case)
        for system in a.systems.split(","):
            if system not in runners:
                sys.exit(f"--systems: unknown '{system}' ({', '.join(runners)})")
            runners[system](case, X, Q, T, a, out)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
