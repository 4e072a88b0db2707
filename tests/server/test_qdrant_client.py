"""`simkit serve` driven by the official qdrant-client (PyPI, the version pinned in
python/requirements-dev.txt), as a Qdrant tutorial would drive a Qdrant server: every answer is
checked against an exact NumPy model of the collection (results equal, counts equal).

The model keeps what the server should hold (id -> vector, payload) and answers searches by
brute force in float64: a flat collection must return the same ids in the same order, with
scores equal to float32 precision."""

from __future__ import annotations

import threading
import uuid
import warnings
from typing import Any

import numpy as np
import pytest

qdrant_client = pytest.importorskip("qdrant_client", reason="qdrant-client is missing (scripts/setup.sh installs it)")
from qdrant_client import QdrantClient, models  # noqa: E402
from reference import LARGER_IS_BETTER, scores  # noqa: E402

PointId = Any  # int or canonical UUID string


class Model:
    """What the collection should hold, and the exact answers to queries over it."""

    def __init__(self, distance: str) -> None:
        self.distance = distance
        self.points: dict[PointId, tuple[np.ndarray, dict[str, Any]]] = {}

    def upsert(self, ids: list[PointId], X: np.ndarray, payloads: list[dict[str, Any] | None]) -> None:
        for i, x, p in zip(ids, X, payloads):
            self.points[i] = (np.asarray(x, dtype=np.float32), dict(p or {}))

    def ids(self, where: Any = None) -> list[PointId]:
        return [i for i, (_, p) in self.points.items() if where is None or where(p)]

    def query(self, q: np.ndarray, limit: int, where: Any = None, threshold: float | None = None,
              exclude: tuple[PointId, ...] = (), offset: int = 0) -> list[tuple[PointId, float]]:
        ids = [i for i in self.ids(where) if i not in exclude]
        if not ids:
            return []
        X = np.stack([self.points[i][0] for i in ids])
        s = scores(X, q[None, :].astype(np.float32), self.distance)[0]
        order = np.argsort(-s if LARGER_IS_BETTER[self.distance] else s, kind="stable")
        hits = [(ids[j], float(s[j])) for j in order]
        if threshold is not None:
            hits = [h for h in hits if (h[1] >= threshold if LARGER_IS_BETTER[self.distance] else h[1] <= threshold)]
        return hits[offset:offset + limit]

    def vector(self, i: PointId) -> np.ndarray:
        return self.points[i][0]


def same_hits(got: list[models.ScoredPoint], want: list[tuple[PointId, float]]) -> None:
    assert [p.id for p in got] == [i for i, _ in want], ([p.id for p in got], [i for i, _ in want])
    for p, (_, s) in zip(got, want):
        assert p.score == pytest.approx(s, rel=1e-5, abs=1e-5)


def make_points(rng: np.random.Generator, n: int, d: int, use_uuids: bool) -> tuple[list[PointId], np.ndarray, list[dict[str, Any]]]:
    if use_uuids:
        ids: list[PointId] = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]
    else:
        ids = [int(i) for i in rng.choice(1 << 40, size=n, replace=False)]
    X = rng.standard_normal((n, d)).astype(np.float32)
    colors = ["red", "green", "blue"]
    payloads = [{"color": colors[int(rng.integers(3))], "rank": int(rng.integers(100)), "tags": ["a", "b"][: int(rng.integers(3))]}
                for _ in range(n)]
    return ids, X, payloads


def is_color(c: str) -> Any:
    return lambda p: p.get("color") == c


@pytest.fixture
def client(serve: Any) -> Any:
    s = serve()
    # The client's own check (a background thread at construction, which only warns) must pass:
    # GET / names a version this client accepts.
    from importlib.metadata import version

    from qdrant_client.common.version_check import get_server_version, is_compatible
    server_version = get_server_version(f"http://127.0.0.1:{s.port}", {}, None, 60)
    assert is_compatible(version("qdrant-client"), server_version), server_version
    qc = QdrantClient(url=f"http://127.0.0.1:{s.port}", timeout=60, check_compatibility=False)
    yield s, qc
    qc.close()


def test_a_tutorial_session_equals_numpy(client: Any, rng: np.random.Generator) -> None:
    s, qc = client
    d, distance = 24, "Cosine"
    name = "tutorial"
    # Create, guarded as the tutorials do.
    if not qc.collection_exists(name):
        qc.create_collection(name, vectors_config=models.VectorParams(size=d, distance=models.Distance.COSINE))
    assert qc.collection_exists(name) and not qc.collection_exists("nope")
    info = qc.get_collection(name)
    assert info.status == models.CollectionStatus.GREEN and info.points_count == 0
    assert info.config.params.vectors.size == d and info.config.params.vectors.distance == models.Distance.COSINE

    model = Model(distance)
    # Upsert with integer ids, then with UUIDs, then upload_points and upload_collection in batches.
    ids, X, payloads = make_points(rng, 150, d, use_uuids=False)
    r = qc.upsert(name, points=[models.PointStruct(id=i, vector=x.tolist(), payload=p) for i, x, p in zip(ids, X, payloads)])
    assert r.status == models.UpdateStatus.COMPLETED
    model.upsert(ids, X, payloads)
    uids, UX, upayloads = make_points(rng, 90, d, use_uuids=True)
    qc.upsert(name, points=[models.PointStruct(id=i, vector=x.tolist(), payload=p) for i, x, p in zip(uids, UX, upayloads)])
    model.upsert(uids, UX, upayloads)
    bids, BX, bpayloads = make_points(rng, 173, d, use_uuids=False)
    qc.upload_points(name, points=[models.PointStruct(id=i, vector=x.tolist(), payload=p)
                                   for i, x, p in zip(bids, BX, bpayloads)], batch_size=50, wait=True)
    model.upsert(bids, BX, bpayloads)
    cids, CX, cpayloads = make_points(rng, 61, d, use_uuids=True)
    qc.upload_collection(name, vectors=CX, payload=cpayloads, ids=cids, batch_size=16, wait=True)
    model.upsert(cids, CX, cpayloads)
    n = len(model.points)
    assert qc.get_collection(name).points_count == n
    assert qc.count(name, exact=True).count == n

    # query_points: by vector, with filter, with score_threshold, with offset, by point id.
    Q = rng.standard_normal((6, d)).astype(np.float32)
    for q in Q:
        same_hits(qc.query_points(name, query=q.tolist(), limit=10).points, model.query(q, 10))
        flt = models.Filter(must=[models.FieldCondition(key="color", match=models.MatchValue(value="green"))])
        got = qc.query_points(name, query=q.tolist(), query_filter=flt, limit=7, with_payload=True).points
        same_hits(got, model.query(q, 7, is_color("green")))
        assert all(p.payload["color"] == "green" for p in got)
        t = float(model.query(q, 12)[-1][1])  # the 12th best score: a threshold that keeps 12
        same_hits(qc.query_points(name, query=q.tolist(), score_threshold=t, limit=50).points, model.query(q, 50, threshold=t))
        same_hits(qc.query_points(name, query=q.tolist(), limit=5, offset=4).points, model.query(q, 5, offset=4))
    for target in [ids[3], uids[7]]:
        got = qc.query_points(name, query=target, limit=8).points
        same_hits(got, model.query(model.vector(target), 8, exclude=(target,)))
    # with_vector and a payload selector.
    got = qc.query_points(name, query=Q[0].tolist(), limit=3, with_vectors=True,
                          with_payload=models.PayloadSelectorInclude(include=["rank"])).points
    for p in got:
        assert np.array_equal(np.array(p.vector, dtype=np.float32), model.vector(p.id))
        assert p.payload == {"rank": model.points[p.id][1]["rank"]}

    # query_batch_points answers each request as query_points does.
    reqs = [models.QueryRequest(query=q.tolist(), limit=4 + j, with_payload=False) for j, q in enumerate(Q)]
    for j, res in enumerate(qc.query_batch_points(name, requests=reqs)):
        same_hits(res.points, model.query(Q[j], 4 + j))

    # Recommend by ids: average_vector = 2 avg(positive) - avg(negative), of the normalised examples.
    pos, neg = [ids[0], uids[1]], [bids[2]]
    unit = {i: model.vector(i) / np.linalg.norm(model.vector(i)) for i in pos + neg}
    target = 2 * np.mean([unit[i] for i in pos], axis=0) - np.mean([unit[i] for i in neg], axis=0)
    got = qc.query_points(name, query=models.RecommendQuery(recommend=models.RecommendInput(positive=pos, negative=neg)),
                          limit=9).points
    same_hits(got, model.query(target.astype(np.float32), 9, exclude=tuple(pos + neg)))

    # count, scroll with a filter, retrieve.
    for c in ["red", "green", "blue"]:
        flt = models.Filter(must=[models.FieldCondition(key="color", match=models.MatchValue(value=c))])
        assert qc.count(name, count_filter=flt, exact=True).count == len(model.ids(is_color(c)))
        seen: list[PointId] = []
        offset = None
        while True:
            page, offset = qc.scroll(name, scroll_filter=flt, limit=17, offset=offset, with_payload=True)
            seen += [p.id for p in page]
            assert all(p.payload["color"] == c for p in page)
            if offset is None:
                break
        assert sorted(map(str, seen)) == sorted(map(str, model.ids(is_color(c)))) and len(seen) == len(set(map(str, seen)))
    got = qc.retrieve(name, ids=[ids[5], uids[2], 999], with_vectors=True)
    assert [p.id for p in got] == [ids[5], uids[2]]
    for p in got:
        assert np.array_equal(np.array(p.vector, dtype=np.float32), model.vector(p.id))
        assert p.payload == model.points[p.id][1]

    # Payloads: set (merge), overwrite, delete keys, clear; by ids and by filter.
    qc.set_payload(name, payload={"stock": 3}, points=[ids[0], uids[0]])
    for i in [ids[0], uids[0]]:
        model.points[i][1]["stock"] = 3
    qc.overwrite_payload(name, payload={"color": "violet"}, points=[ids[1]])
    model.points[ids[1]] = (model.vector(ids[1]), {"color": "violet"})
    qc.delete_payload(name, keys=["rank"], points=models.FilterSelector(
        filter=models.Filter(must=[models.FieldCondition(key="color", match=models.MatchValue(value="blue"))])))
    for i in model.ids(is_color("blue")):
        model.points[i][1].pop("rank", None)
    qc.clear_payload(name, points_selector=[bids[0]])
    model.points[bids[0]] = (model.vector(bids[0]), {})
    everything, _ = qc.scroll(name, limit=10000, with_payload=True)
    assert len(everything) == n
    for p in everything:
        assert p.payload == model.points[p.id][1], p.id

    # Payload indexes, then the filter language through the client's models, against the model.
    qc.create_payload_index(name, field_name="color", field_schema=models.PayloadSchemaType.KEYWORD)
    qc.create_payload_index(name, field_name="rank", field_schema=models.PayloadSchemaType.INTEGER)
    schema = qc.get_collection(name).payload_schema
    assert schema["color"].data_type == models.PayloadSchemaType.KEYWORD and schema["color"].points > 0
    assert schema["rank"].data_type == models.PayloadSchemaType.INTEGER
    filters = [
        (models.Filter(must=[models.FieldCondition(key="rank", range=models.Range(gte=20, lt=60))]),
         lambda p: isinstance(p.get("rank"), int) and 20 <= p["rank"] < 60),
        (models.Filter(should=[models.FieldCondition(key="color", match=models.MatchValue(value="red")),
                               models.FieldCondition(key="tags", match=models.MatchAny(any=["b"]))]),
         lambda p: p.get("color") == "red" or "b" in p.get("tags", [])),
        (models.Filter(must_not=[models.FieldCondition(key="color", match=models.MatchValue(value="green"))],
                       must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="tags"))]),
         lambda p: p.get("color") != "green" and not p.get("tags")),
        (models.Filter(must=[models.HasIdCondition(has_id=[ids[7], uids[8], bids[9], cids[10]])]),
         None),
    ]
    for flt, where in filters:
        if where is None:
            chosen = {str(i) for i in [ids[7], uids[8], bids[9], cids[10]]}
            where_id = lambda i: str(i) in chosen  # noqa: E731
            want_ids = [i for i in model.points if where_id(i)]
        else:
            want_ids = model.ids(where)
        assert qc.count(name, count_filter=flt, exact=True).count == len(want_ids)
        got = qc.query_points(name, query=Q[5].tolist(), query_filter=flt, limit=12).points
        keep = set(map(str, want_ids))
        same_hits(got, [h for h in model.query(Q[5], n) if str(h[0]) in keep][:12])

    # Delete by ids and by filter.
    qc.delete(name, points_selector=models.PointIdsList(points=[ids[2], uids[3]]))
    del model.points[ids[2]], model.points[uids[3]]
    qc.delete(name, points_selector=models.FilterSelector(
        filter=models.Filter(must=[models.FieldCondition(key="color", match=models.MatchValue(value="red"))])))
    for i in model.ids(is_color("red")):
        del model.points[i]
    assert qc.count(name, exact=True).count == len(model.points)
    same_hits(qc.query_points(name, query=Q[1].tolist(), limit=20).points, model.query(Q[1], 20))

    # Snapshots: create, list, download, recover into another collection, delete. (A server sharded
    # over MPI ranks refuses them with 501: test_mpi_serve.py.)
    sharded = bool(s.launcher)
    if not sharded:
        snap = qc.create_snapshot(name)
        assert snap is not None and snap.name in [x.name for x in qc.list_snapshots(name)]
        url = f"http://127.0.0.1:{s.port}/collections/{name}/snapshots/{snap.name}"
        import urllib.request
        with urllib.request.urlopen(url, timeout=60) as r:
            blob = r.read()
        assert len(blob) == snap.size and blob[:16] == b"SQLite format 3\x00"
        assert qc.recover_snapshot("copy", location=url)
        assert qc.count("copy", exact=True).count == len(model.points)
        same_hits(qc.query_points("copy", query=Q[2].tolist(), limit=10).points, model.query(Q[2], 10))
        assert qc.delete_snapshot(name, snap.name)
        assert snap.name not in [x.name for x in qc.list_snapshots(name)]

    # Aliases route like the collection's name; deleting a collection drops its aliases.
    qc.update_collection_aliases(change_aliases_operations=[
        models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=name, alias_name="live"))])
    assert [(a.alias_name, a.collection_name) for a in qc.get_aliases().aliases] == [("live", name)]
    same_hits(qc.query_points("live", query=Q[3].tolist(), limit=5).points, model.query(Q[3], 5))
    qc.update_collection_aliases(change_aliases_operations=[
        models.RenameAliasOperation(rename_alias=models.RenameAlias(old_alias_name="live", new_alias_name="prod"))])
    assert [a.alias_name for a in qc.get_collection_aliases(name).aliases] == ["prod"]

    # Restart: everything above is durable.
    s.restart()
    qc2 = QdrantClient(url=f"http://127.0.0.1:{s.port}", timeout=60, check_compatibility=False)
    assert qc2.count(name, exact=True).count == len(model.points)
    same_hits(qc2.query_points("prod", query=Q[4].tolist(), limit=10).points, model.query(Q[4], 10))
    kept = [i for i in model.points if isinstance(i, str)][:5] + [i for i in model.points if isinstance(i, int)][:5]
    got = qc2.retrieve(name, ids=kept, with_payload=True)
    assert [p.id for p in got] == kept and all(p.payload == model.points[p.id][1] for p in got)

    assert qc2.delete_collection(name) and (sharded or qc2.delete_collection("copy"))
    assert not qc2.collection_exists(name) and qc2.get_aliases().aliases == []
    qc2.close()


def test_overload_answers_429_and_the_client_retries(serve: Any, rng: np.random.Generator) -> None:
    # --max-queue 1: writes beyond one waiting get 429 + Retry-After; upload_points waits and retries.
    s = serve("--max-queue", "1")
    qc = QdrantClient(url=f"http://127.0.0.1:{s.port}", timeout=60, check_compatibility=False)
    d = 8
    qc.create_collection("w", vectors_config=models.VectorParams(size=d, distance=models.Distance.EUCLID))
    before = s.metrics()
    n = 4000
    X = rng.standard_normal((n, d)).astype(np.float32)
    errors: list[BaseException] = []

    def upload(lo: int) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the client warns as it waits out each 429
                qc.upload_points("w", points=[models.PointStruct(id=i, vector=X[i].tolist()) for i in range(lo, lo + n // 4)],
                                 batch_size=25, wait=True, max_retries=0)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=upload, args=(k * n // 4,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors[:1]
    after = s.metrics()
    refused = metric_value(after, 'simkit_rejected_total{reason="queue_full"}') - \
        metric_value(before, 'simkit_rejected_total{reason="queue_full"}')
    print(f"4 uploaders x {n // 4} points in batches of 25 against --max-queue 1: {int(refused)} answered 429, all retried")
    assert refused > 0, "no 429: the burst never exceeded the write queue"
    assert qc.count("w", exact=True).count == n
    got = qc.retrieve("w", ids=[0, n - 1], with_vectors=True)
    assert np.array_equal(np.array(got[1].vector, dtype=np.float32), X[n - 1])
    qc.close()


def metric_value(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0
