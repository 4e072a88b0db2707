"""simkit.Index: the contract of index.hpp seen from Python."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import simkit


def _data(rng: np.random.Generator, n: int = 3001, d: int = 24) -> np.ndarray:
    centers = rng.standard_normal((40, d)) * 3
    return (centers[rng.integers(0, 40, n)] + rng.standard_normal((n, d))).astype(np.float32)


@pytest.mark.parametrize("metric", simkit.METRICS)
def test_flat_equals_knn(rng: np.random.Generator, metric: str) -> None:
    X = _data(rng)
    Q = _data(rng, 57)
    index = simkit.Index("flat", 24, metric=metric)
    index.add(X)
    assert len(index) == index.ntotal == 3001 and index.d == 24 and index.metric == metric
    D, I = index.search(Q, 10)
    Dk, Ik = simkit.knn(Q, X, 10, metric)
    np.testing.assert_array_equal(I, Ik)
    np.testing.assert_array_equal(D, Dk)


def test_reserve_then_batches_is_one_add(rng: np.random.Generator) -> None:
    X = _data(rng, 2003)
    Q = _data(rng, 31)
    whole, batched = simkit.Index("flat", 24, "l2"), simkit.Index("flat", 24, "l2")
    with pytest.raises(ValueError, match="reserve: rows"):
        batched.reserve(-5)
    whole.add(X)
    batched.reserve(len(X))
    for r in range(0, len(X), 500):
        batched.add(X[r : r + 500])
    D, I = whole.search(Q, 10)
    Db, Ib = batched.search(Q, 10)
    np.testing.assert_array_equal(I, Ib)
    np.testing.assert_array_equal(D, Db)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine", "dot"])
def test_ivf_flat_all_probes_is_exact_and_fewer_probes_recall(rng: np.random.Generator, metric: str) -> None:
    X = _data(rng)
    Q = _data(rng, 100)
    index = simkit.Index("ivf_flat,nlist=32", 24, metric)
    assert not index.is_trained
    index.train(X)
    index.add(X)
    _, Ik = simkit.knn(Q, X, 10, metric)
    np.testing.assert_array_equal(index.search(Q, 10, nprobe=32)[1], Ik)
    _, I4 = index.search(Q, 10, nprobe=4)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I4, Ik)])
    assert 0.5 < recall <= 1.0
    _, Iseed = index.search(Q, 10, nprobe="seed")  # ceil(0.8 * 32) lists
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(Iseed, Ik)]) >= recall


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(found, truth)]))


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine", "dot", "l1"])
def test_ivf_pq_refine_everything_is_exact_and_codes_are_smaller(rng: np.random.Generator, metric: str) -> None:
    X = _data(rng)
    Q = _data(rng, 60)
    index = simkit.Index("ivf_pq,nlist=16,m=8,refine=4,iterations=8", 24, metric)
    index.train(X)
    index.add(X)
    Dk, Ik = simkit.knn(Q, X, 10, metric)
    stats: dict = {}
    D, I = index.search(Q, 10, nprobe=16, refine=1 << 20, stats=stats)
    np.testing.assert_array_equal(I, Ik)
    np.testing.assert_array_equal(D, Dk)
    assert stats == {"short_rows": 0, "candidates": 60 * 3001, "gathered": 0}  # every row of every list
    assert _recall(index.search(Q, 10, nprobe=4)[1], Ik) > 0.5
    codes_only = simkit.Index("ivf_pq,nlist=16,m=8,refine=0,iterations=8", 24, metric)
    codes_only.train(X)
    codes_only.add(X)
    # The kept vectors: 24 floats for each of the lists' rows and their room to grow (at most half
    # a list's length, or 16 rows, per list).
    kept = index.memory_bytes - codes_only.memory_bytes
    assert 3001 * 24 * 4 <= kept <= (3001 * 3 // 2 + 16 * 16) * 24 * 4
    with pytest.raises(ValueError, match="refine"):
        codes_only.search(Q, 10, refine=2)
    with pytest.raises(ValueError, match="refine"):
        index.search(Q, 10, refine=-1)


@pytest.mark.parametrize("metric", ["cosine", "dot", "pearson", "l2"])
def test_lsh_every_bucket_is_exact_and_short_rows_are_counted(rng: np.random.Generator, metric: str) -> None:
    X = _data(rng)
    Q = _data(rng, 50)
    index = simkit.Index("lsh,tables=4,bits=3", 24, metric)
    index.train(X)
    index.add(X)
    Dk, Ik = simkit.knn(Q, X, 10, metric)
    D, I = index.search(Q, 10, probes=1 << 30)  # every bucket of every table: every row
    np.testing.assert_array_equal(I, Ik)
    np.testing.assert_array_equal(D, Dk)
    assert simkit.Index("lsh", 24, metric).description.startswith("lsh,tables=6,bits=2,probes=1")
    # One table of 24 bits splits 3,001 rows into tiny buckets: most queries find fewer than 10
    # candidates; their rows are padded and counted, never filled by a full scan.
    sparse = simkit.Index("lsh,tables=1,bits=24", 24, metric)
    sparse.train(X)
    sparse.add(X)
    stats: dict = {}
    D, I = sparse.search(Q, 10, stats=stats)
    padded = int(np.sum(I[:, -1] == -1))
    assert stats["short_rows"] == padded > 0
    assert stats["candidates"] >= int(np.sum(I >= 0))
    with pytest.raises(ValueError, match="probes"):
        index.search(Q, 10, probes=-3)


@pytest.mark.parametrize("metric", ["l2", "sqeuclidean"])
def test_tree_equals_flat_through_writes(rng: np.random.Generator, metric: str, tmp_path: object) -> None:
    # 3-d clusters; enough rows that the tree is built, then tails past its limit (1,024 rows here:
    # rebuilt), then removals past a quarter of the rows (rebuilt again).
    X = _data(rng, 20000, 3)
    Q = _data(rng, 40, 3)
    ids = rng.permutation(10**6)[:20000].astype(np.int64)
    tree, flat = simkit.Index("tree", 3, metric), simkit.Index("flat", 3, metric)
    assert tree.type == "tree" and tree.description == "tree" and tree.is_trained

    def same(label: str, k: int = 10, **kw: object) -> None:
        Dt, It = tree.search(Q, k, **kw)
        Df, If = flat.search(Q, k, **kw)
        np.testing.assert_array_equal(It, If, err_msg=label)
        np.testing.assert_array_equal(Dt, Df, err_msg=label)

    for index in (tree, flat):
        index.add(X[:10000], ids=ids[:10000])
    same("built", 100)
    for lo in range(10000, 16000, 1500):
        for index in (tree, flat):
            index.add(X[lo:lo + 1500], ids=ids[lo:lo + 1500])
            index.remove(ids[lo - 700:lo - 400])
        same(f"tail at {lo}")
    for index in (tree, flat):
        assert index.remove(ids[:4000]) == 4000
    same("removals", 1)
    allowed = np.sort(rng.choice(ids[4000:16000], 3000, replace=False))
    for a in (allowed, allowed[:20], allowed[:3]):
        stats: dict = {}
        Dt, It = tree.search(Q, 10, allowed=a, stats=stats)
        Df, If = flat.search(Q, 10, allowed=a)
        np.testing.assert_array_equal(It, If)
        np.testing.assert_array_equal(Dt, Df)
        assert stats["short_rows"] == (len(Q) if len(a) < 10 else 0)
    same("k beyond the size", len(tree) + 5)
    path = f"{tmp_path}/tree.simkit"
    tree.save(path)
    for other in (simkit.Index.load(path), pickle.loads(pickle.dumps(tree))):
        assert other.type == "tree" and len(other) == len(tree) and other.next_id == tree.next_id
        np.testing.assert_array_equal(other.search(Q, 10)[1], flat.search(Q, 10)[1])


@pytest.mark.parametrize("metric", ["sqeuclidean", "cosine", "dot", "l1"])
def test_hnsw_recall_rises_with_ef_and_ef_at_size_is_exact(rng: np.random.Generator, metric: str,
                                                          tmp_path: object) -> None:
    X = _data(rng, 2001)
    Q = _data(rng, 83)
    index = simkit.Index("hnsw,m=8,ef_construction=64", 24, metric=metric)
    index.add(X)
    _, truth = simkit.knn(Q, X, 10, metric)

    def recall(ef: int) -> float:
        _, I = index.search(Q, 10, ef=ef)
        return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I, truth)]))

    low, high = recall(10), recall(200)
    # dot walks by the raw inner product, a heuristic (index.hpp): long vectors crowd the links.
    assert low <= high and high >= (0.85 if metric == "dot" else 0.95), (low, high)
    # Every candidate kept: the graph search reaches every row of this small set.
    D, I = index.search(Q, 10, ef=2001)
    Dk, Ik = simkit.knn(Q, X, 10, metric)
    np.testing.assert_array_equal(I, Ik)
    np.testing.assert_array_equal(D, Dk)
    # The knob survives a save / load round trip, and so do the answers.
    path = f"{tmp_path}/g.simkit"
    index.save(path)
    again = simkit.Index.load(path)
    np.testing.assert_array_equal(again.search(Q, 10, ef=64)[1], index.search(Q, 10, ef=64)[1])


def test_tree_refuses_what_it_does_not_serve() -> None:
    for metric in ("cosine", "dot", "pearson", "l1"):
        with pytest.raises(ValueError, match="l2 and sqeuclidean.*'flat'"):
            simkit.Index("tree", 3, metric)
    with pytest.raises(ValueError, match="d <= 8"):
        simkit.Index("tree", 9, "l2")
    with pytest.raises(ValueError, match="nprobe applies to ivf_flat and ivf_pq; this index is tree"):
        simkit.Index("tree", 2, "l2").search(np.zeros((1, 2), np.float32), 1, nprobe=2)


def test_ids_remove_and_padding(rng: np.random.Generator) -> None:
    X = _data(rng, 200)
    ids = rng.permutation(10**6)[:200].astype(np.int64)
    index = simkit.Index("flat", 24)
    index.add(X, ids=ids)
    assert index.next_id == ids.max() + 1
    D, I = index.search(X[:3], 1)
    np.testing.assert_array_equal(I[:, 0], ids[:3])
    assert index.remove(ids[:100]) == 100 and index.remove(ids[:100]) == 0
    _, I = index.search(X, 5)
    assert not np.isin(I, ids[:100]).any()
    D, I = index.search(X[:2], 150)  # k > size: padded
    assert (I[:, 100:] == -1).all() and np.isinf(D[:, 100:]).all() and (D[:, 100:] > 0).all()
    sim = simkit.Index("flat", 24, "cosine")
    sim.add(X[:3])
    D, I = sim.search(X[:1], 5)
    assert I[0, 3:].tolist() == [-1, -1] and (D[0, 3:] == -np.inf).all()


def test_a_knob_the_type_does_not_read_is_refused(rng: np.random.Generator) -> None:
    X = _data(rng, 500)
    ivf = simkit.Index("ivf_flat,nlist=8", 24)
    ivf.train(X)
    ivf.add(X)
    flat = simkit.Index("flat", 24)
    flat.add(X)
    with pytest.raises(ValueError, match="refine applies to ivf_pq; this index is ivf_flat"):
        ivf.search(X[:2], 3, refine=4)
    with pytest.raises(ValueError, match="probes applies to lsh; this index is ivf_flat"):
        ivf.search(X[:2], 3, probes=2)
    with pytest.raises(ValueError, match="nprobe applies to ivf_flat and ivf_pq; this index is flat"):
        flat.search(X[:2], 3, nprobe=4)
    with pytest.raises(ValueError, match="ef applies to hnsw; this index is flat"):
        flat.search(X[:2], 3, ef=32)
    # The knobs it does read, and none at all, still work.
    _, I = ivf.search(X[:2], 3, nprobe=8)
    np.testing.assert_array_equal(I, flat.search(X[:2], 3)[1])


def test_save_load_pickle_round_trips(rng: np.random.Generator, tmp_path: object) -> None:
    X = _data(rng)
    index = simkit.Index("ivf_flat,nlist=16,nprobe=4", 24, "l2")
    index.train(X)
    index.add(X[:2000])
    path = f"{tmp_path}/a.simkit"
    index.save(path)
    loaded = simkit.Index.load(path)
    assert loaded.description == index.description and len(loaded) == 2000
    for other in (loaded, pickle.loads(pickle.dumps(index))):
        np.testing.assert_array_equal(other.search(X[:50], 7)[1], index.search(X[:50], 7)[1])
    loaded.add(X[2000:])
    index.add(X[2000:])
    np.testing.assert_array_equal(loaded.search(X[:50], 7)[1], index.search(X[:50], 7)[1])


def test_closed_index_refuses_everything(rng: np.random.Generator) -> None:
    index = simkit.Index("flat", 4)
    index.add(rng.standard_normal((10, 4)))
    with index:
        pass
    assert repr(index) == "simkit.Index(<closed>)"
    for call in (lambda: len(index), lambda: index.search(np.zeros((1, 4), np.float32), 1),
                 lambda: index.add(np.zeros((1, 4))), lambda: index.save("/tmp/x.simkit"), lambda: index.remove([1])):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_concurrent_searches_from_threads(rng: np.random.Generator) -> None:
    X = _data(rng, 20000, 32)
    index = simkit.Index("ivf_flat,nlist=64", 32)
    index.train(X)
    index.add(X)
    queries = [_data(rng, 64, 32) for _ in range(8)]
    expected = [index.search(q, 10, nprobe=8)[1] for q in queries]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for _ in range(5):  # bounded: 8 threads x 5 searches
                results[t] = index.search(queries[t], 10, nprobe=8)[1]
                assert np.array_equal(results[t], expected[t])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(results) == 8
