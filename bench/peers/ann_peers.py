#!/usr/bin/env python3
"""ANN peers for `simkit bench ann`, on the files it saved (--save DIR: <case>_base.npy,
<case>_queries.npy, <case>_truth.npy) and with its CSV columns, so scripts/plot-ann.py can draw
them together.

  faiss    faiss-cpu (PyPI): IndexFlat (exact), IndexIVFFlat with the same nlist over an nprobe
           sweep, then what faiss_hnsw runs
  faiss_hnsw  faiss-cpu: IndexHNSWFlat with M = 16 and M = 32 (efConstruction 200) over the --ef
           sweep (efSearch)
  faiss_compressed  faiss-cpu: IndexIVFPQ (same nlist, --pq-m codes of 8 bits) wrapped in
           IndexRefineFlat (k_factor = each --refine) over the nprobe sweep, and IndexLSH (one
           table of --lsh-nbits random-rotation signs searched exhaustively in Hamming space) alone
           and with IndexRefineFlat (k_factor 10)
  hnswlib  hnswlib (PyPI, 0.8): M = 16, ef_construction = 200, over the --ef sweep (set_ef)
  usearch  usearch (PyPI): Index with connectivity (M) = 16, expansion_add = 200, over the --ef
           sweep (expansion_search), once per --usearch-dtype (default f32: the vectors as given;
           usearch's own default would be bf16, a quantized index)
  torch    on the GPU: the IVF the seed document describes -- the nprobe nearest centroids of
           each query, gather their lists' vectors, distances, topk -- batched over queries by
           padding each batch's candidate lists (k-means in torch on a sample, same nlist)
  torch_lsh  on the GPU: the seed's random-hyperplane LSH (Algorithm 3) for each --lsh
           TABLESxBITS: a query's candidates are the rows sharing its bucket in any table (all rows
           when none do: the seed's full-scan fallback), scored exactly, topk; batched with a
           candidate mask per query

Cosine cases are searched as inner product on unit rows (the saved rows are normalised here;
hnswlib space "ip", usearch metric "ip", faiss METRIC_INNER_PRODUCT), sqeuclidean ones as squared
L2 ("l2", "l2sq", METRIC_L2); recall@10 counts the first 10 truth ids found among the 10 returned,
as simkit does. Every CPU peer builds and searches on --threads threads (faiss: omp_set_num_threads;
hnswlib: set_num_threads; usearch: the threads argument of add and search), and QPS is every query
in one batched call (median of --repeat). An ef below k = 10 is raised to 10 (the nprobe column
keeps the ef asked for). build_s is the wall time of building the index; memory_bytes is the
index's serialized size (faiss.serialize_index, the file hnswlib's save_index writes, usearch's
serialized_length), not an RSS delta. The params column names the configuration (M, construction
ef, dtype, filter).

Filtered search (--filters FRACTIONS, --filter-kind random,clustered): for each kind and fraction an
allow-list of round(fraction x n) base ids -- random: a prefix of a permutation seeded by
--filter-seed; clustered: each base row goes to its nearest of 64 seeded random base rows (the
case's metric), the groups are taken whole in a seeded random order and the last one by its rows
nearest its centre, so the list is a contiguous region of the space; either way a smaller
fraction's list lies inside a larger one's -- and the exact filtered top-10 of every query over the
allowed rows: float32 scores pick 64 candidates per query (blocked over queries so that a block's
scores, partition indices and float64 candidates stay within about 256 MiB), re-scored in float64
(cosine re-normalised), ties to the lower id (unfiltered, this gives the WordNet truth file exactly).
Both go to --dir for simkit's own bench to read:

  <case>_allow_<kind>_<fraction>.npy        int64, ascending base ids (fraction as %g: 0.01, 0.1, 0.5)
  <case>_allow_<kind>_<fraction>_truth.npy  int64, queries x 10 base ids, nearest first

hnswlib then searches with its filter functor (knn_query(..., filter=callable); the callable is the
allowed ids' set.__contains__) over the --ef sweep, index "hnsw_filter", recall against the filtered
truth. The callable is Python, so every call takes the GIL: hnswlib's own example searches with a
filter on one thread, and more threads are slower here (two threads about half the QPS of one), so
these rows use --filter-threads (default 1) search threads; the index is the one built on --threads.
--queries N measures the first N queries only (the truth files still cover all of them).

    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems faiss,hnswlib,usearch --csv peers.csv
    python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems "" --filters 0.01,0.1,0.5 \\
        --filter-kind random,clustered --csv filtered.csv
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
METRIC = {"wordnet": "cosine", "synthetic": "sqeuclidean", "seed": "cosine", "large": "sqeuclidean"}
HNSW_BUILD = "m=16,ef_construction=200"  # hnswlib's and usearch's graph, and one of FAISS's


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


def exact_top(X, Q, ip, k=K, block_bytes=256 << 20):
    """The k nearest rows of X to each query, as row numbers: float32 scores pick 64 candidates,
    re-scored in float64 (cosine re-normalised), ties to the lower row; blocked over queries."""
    c = min(len(X), max(64, k))
    sq = None if ip else np.einsum("ij,ij->i", X, X)
    out = np.empty((len(Q), k), dtype=np.int64)
    # Per query: a float32 score and an int64 partition index per row, c x d float64 candidates (x 2).
    step = max(1, min(block_bytes // (12 * len(X)), block_bytes // (16 * c * X.shape[1])))
    for s in range(0, len(Q), step):
        q = Q[s : s + step]
        score = q @ X.T  # then smaller is nearer:
        if ip:
            np.negative(score, out=score)
        else:
            score *= -2
            score += sq
        cand = np.argpartition(score, c - 1, axis=1)[:, :c] if c < len(X) else np.tile(np.arange(len(X)), (len(q), 1))
        del score
        V = X[cand].astype(np.float64)  # block x c x d
        q64 = q.astype(np.float64)
        if ip:
            V /= np.maximum(np.linalg.norm(V, axis=2, keepdims=True), 1e-300)
            q64 /= np.maximum(np.linalg.norm(q64, axis=1, keepdims=True), 1e-300)
            dist = -np.einsum("bcd,bd->bc", V, q64)
        else:
            dist = ((V - q64[:, None, :]) ** 2).sum(2)
        order = np.lexsort((cand, dist), axis=1)[:, :k]  # by distance, then by row
        out[s : s + len(q)] = np.take_along_axis(cand, order, 1)
    return out


def allow_list(case, X, kind, frac, seed):
    """round(frac x n) base ids, ascending: a seeded random subset, or a contiguous region of the space
    (whole groups of the rows nearest each of 64 seeded random base rows, the last group by its rows
    nearest its centre). The same seed gives nested lists over the fractions."""
    n = len(X)
    m = max(1, int(round(frac * n)))
    rng = np.random.default_rng(seed)
    if kind == "random":
        return np.sort(rng.permutation(n)[:m]).astype(np.int64)
    centres = X[rng.choice(n, size=min(64, n), replace=False)]
    group = np.empty(n, dtype=np.int64)
    dist = np.empty(n, dtype=np.float32)
    for s in range(0, n, 65536):
        b = X[s : s + 65536]
        score = b @ centres.T if METRIC[case] == "cosine" else 2 * (b @ centres.T) - (centres * centres).sum(1)
        group[s : s + len(b)] = np.argmax(score, axis=1)
        dist[s : s + len(b)] = -score[np.arange(len(b)), group[s : s + len(b)]]
    rank = np.empty(len(centres), dtype=np.int64)
    rank[rng.permutation(len(centres))] = np.arange(len(centres))
    order = np.lexsort((np.arange(n), dist, rank[group]))  # group order, then nearest its centre
    return np.sort(order[:m]).astype(np.int64)


def measure(search, Q, T, repeat, single):
    """QPS of one batched call (median of `repeat`), recall, and single-query p50/p99 in ms."""
    ids = search(Q)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ids = search(Q)
        times.append(time.perf_counter() - t0)
    qps = len(Q) / float(np.median(times))
    if single <= 0:  # --single 0: no latency run (nan, as simkit's bench writes)
        return recall(ids, T), qps, float("nan"), float("nan")
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

    run_faiss_hnsw(case, X, Q, T, a, out)


def run_faiss_hnsw(case, X, Q, T, a, out):
    """IndexHNSWFlat at hnswlib's M (16) and at 32, both with efConstruction 200."""
    import faiss

    faiss.omp_set_num_threads(a.threads)
    d = X.shape[1]
    ip = METRIC[case] == "cosine"
    for m in (16, 32):
        t0 = time.perf_counter()
        hnsw = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT if ip else faiss.METRIC_L2)
        hnsw.hnsw.efConstruction = 200
        hnsw.add(X)
        build = time.perf_counter() - t0
        memory = serialized_bytes(hnsw)
        params = f"m={m},ef_construction=200"
        for ef in a.ef:
            hnsw.hnsw.efSearch = max(ef, K)
            r, qps, p50, p99 = measure(lambda q: hnsw.search(q, K)[1], Q, T, a.repeat, a.single)
            out(row("faiss", case, "IndexHNSWFlat", 0, ef, r, qps, p50, p99, build, memory, "cpu", params))


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


_HNSWLIB = {}  # case -> (index, build seconds, bytes): built once for the plain and the filtered runs


def hnswlib_index(case, X, a):
    import hnswlib

    if case not in _HNSWLIB:
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
        _HNSWLIB[case] = (index, build, memory)
    return _HNSWLIB[case]


def run_hnswlib(case, X, Q, T, a, out):
    index, build, memory = hnswlib_index(case, X, a)
    for ef in a.ef:
        index.set_ef(max(ef, K))
        r, qps, p50, p99 = measure(lambda q: index.knn_query(q, k=K)[0], Q, T, a.repeat, a.single)
        out(row("hnswlib", case, "hnsw", 0, ef, r, qps, p50, p99, build, memory, "cpu", HNSW_BUILD))


def run_filtered(case, X, Q, a, out):
    """For each --filter-kind and --filters fraction: the allow-list and its exact truth (written to
    --dir, over all queries), then hnswlib's filter functor over the ef sweep on the measured queries."""
    ip = METRIC[case] == "cosine"
    index, build, memory = hnswlib_index(case, X, a)
    for kind in a.filter_kind:
        for frac in a.filters:
            t0 = time.perf_counter()
            allowed = allow_list(case, X, kind, frac, a.filter_seed)
            truth = allowed[exact_top(X[allowed], Q, ip)]
            stem = os.path.join(a.dir, f"{case}_allow_{kind}_{frac:g}")
            np.save(stem + ".npy", allowed)
            np.save(stem + "_truth.npy", truth)
            took = time.perf_counter() - t0
            print(f"# {stem}.npy: {len(allowed)} of {len(X)} ids, truth in {took:.1f} s", file=sys.stderr, flush=True)
            ok = set(allowed.tolist()).__contains__  # a C-level callable: the cheapest Python filter
            Qm, Tm = Q[: a.measured], truth[: a.measured]
            params = f"{HNSW_BUILD},filter={kind},allowed={frac:g},threads={a.filter_threads}"
            for ef in a.ef:
                index.set_ef(max(ef, K))
                search = lambda q: index.knn_query(q, k=K, num_threads=a.filter_threads, filter=ok)[0]  # noqa: E731
                r, qps, p50, p99 = measure(search, Qm, Tm, a.repeat, a.single)
                out(row("hnswlib", case, "hnsw_filter", 0, ef, r, qps, p50, p99, build, memory, "cpu", params))


def run_usearch(case, X, Q, T, a, out):
    from usearch.index import Index

    metric = "ip" if METRIC[case] == "cosine" else "l2sq"
    keys = np.arange(len(X), dtype=np.uint64)
    for dtype in a.usearch_dtype:
        t0 = time.perf_counter()
        index = Index(ndim=X.shape[1], metric=metric, dtype=dtype, connectivity=16, expansion_add=200)
        index.add(keys, X, threads=a.threads)
        build = time.perf_counter() - t0
        memory = int(index.serialized_length)

        def search(q):
            found = np.asarray(index.search(q, K, threads=a.threads).keys)  # one query: a 1-d Matches
            return found.reshape(len(q), -1).astype(np.int64)  # missing results (uint64 max) become -1

        params = f"{HNSW_BUILD},dtype={dtype},isa={index.hardware_acceleration}"
        for ef in a.ef:
            index.expansion_search = max(ef, K)
            r, qps, p50, p99 = measure(search, Q, T, a.repeat, a.single)
            out(row("usearch", case, "hnsw", 0, ef, r, qps, p50, p99, build, memory, "cpu", params))


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
    p.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256,384,512", help="the HNSW ef sweep")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="build and search threads of every peer")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--single", type=int, default=200)
    p.add_argument("--torch-batch", type=int, default=256, help="most queries per gathered batch")
    p.add_argument("--pq-m", type=int, default=0, help="IndexIVFPQ codes per vector; 0: d / 8")
    p.add_argument("--refine", default="4", help="IndexRefineFlat k_factors over the IVFPQ sweep (0: none)")
    p.add_argument("--lsh-nbits", default="64,128,256,512,1024", help="IndexLSH code lengths")
    p.add_argument("--lsh", default="6x2,16x8,32x12", help="torch_lsh TABLESxBITS configurations")
    p.add_argument("--usearch-dtype", default="f32", help="usearch vector types, one index each (f32, bf16, f16, i8)")
    p.add_argument(
        "--metric", default="", choices=["", "cosine", "sqeuclidean"], help="for a case not among " + ", ".join(METRIC)
    )
    p.add_argument("--filters", default="", help="allowed fractions of the base ids, e.g. 0.01,0.1,0.5")
    p.add_argument("--filter-kind", default="random", help="random, clustered or both (comma-separated)")
    p.add_argument("--filter-seed", type=int, default=0)
    p.add_argument("--filter-threads", type=int, default=1, help="hnswlib search threads with the filter")
    p.add_argument("--queries", type=int, default=0, help="measure the first N queries only (0: all)")
    p.add_argument("--csv", default="")
    a = p.parse_args()
    a.nprobe = [int(v) for v in a.nprobe.split(",")]
    a.ef = [int(v) for v in a.ef.split(",")]
    a.refine = [int(v) for v in a.refine.split(",")]
    a.lsh_nbits = [int(v) for v in a.lsh_nbits.split(",")]
    a.lsh = a.lsh.split(",")
    a.usearch_dtype = a.usearch_dtype.split(",")
    a.filters = [float(v) for v in a.filters.split(",") if v]
    a.filter_kind = a.filter_kind.split(",")
    if any(k not in ("random", "clustered") for k in a.filter_kind):
        sys.exit(f"--filter-kind: random or clustered, not '{a.filter_kind}'")
    if any(not 0 < f <= 1 for f in a.filters):
        sys.exit("--filters: fractions in (0, 1]")
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
        "faiss_hnsw": run_faiss_hnsw,
        "usearch": run_usearch,
    }
    systems = [s for s in a.systems.split(",") if s]
    for system in systems:
        if system not in runners:
            sys.exit(f"--systems: unknown '{system}' ({', '.join(runners)})")
    for case in a.cases.split(","):
        if a.metric:
            METRIC[case] = a.metric
        elif case not in METRIC:
            sys.exit(f"--cases: no metric known for '{case}': pass --metric cosine or sqeuclidean")
        X, Q, T = load(a.dir, case)
        a.measured = a.queries if a.queries > 0 else len(Q)
        for system in systems:
            runners[system](case, X, Q[: a.measured], T[: a.measured], a, out)
        if a.filters:
            run_filtered(case, X, Q, a, out)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
