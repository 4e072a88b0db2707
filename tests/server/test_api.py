"""The REST contract of `simkit serve`: collections, points, searches (equal to exact search),
filters (equal to a float64 brute force over the matching points), linearizable writes, the
background index build, snapshots, health and metrics."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import threading
import time
from typing import Any

import numpy as np
import pytest
from conftest import (
    Client,
    create_collection,
    metric,
    points_count,
    raw_exchange,
    scroll_all,
    upsert,
)
from reference import KNN_METRIC, compare_ranking, scores, top_k

DISTANCES = ["Cosine", "Dot", "Euclid", "Manhattan"]


def random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    """n distinct ids spread up to 2^53 (exact in JSON doubles too), not 0..n-1: the server must
    map rows back to the ids it was given."""
    ids = rng.choice(1 << 40, size=n, replace=False).astype(np.int64)
    ids[0] = 0  # the smallest valid id
    ids[1] = (1 << 53) - 1
    return ids


# ---------------------------------------------------------------- collections


def test_collection_lifecycle(serve: Any) -> None:
    s = serve()
    c = s.client()
    assert c.ok("GET", "/collections") == {"collections": []}
    assert c.ok("GET", "/collections/c0-Cosine/exists") == {"exists": False}
    for i, distance in enumerate(DISTANCES):
        create_collection(c, f"c{i}-{distance}", 3 + i, distance)
    create_collection(c, "with_ivf", 8, "Dot", index="ivf_flat,nlist=4")
    names = sorted(x["name"] for x in c.ok("GET", "/collections")["collections"])
    assert names == sorted([f"c{i}-{d}" for i, d in enumerate(DISTANCES)] + ["with_ivf"])
    for i, distance in enumerate(DISTANCES):
        info = c.ok("GET", f"/collections/c{i}-{distance}")
        assert info["config"]["params"]["vectors"] == {"size": 3 + i, "distance": distance}
        assert info["config"]["index"] == "flat"
        assert info["points_count"] == 0
        assert info["index"]["type"] == "flat" and info["index"]["build"] == "ready"
        assert (s.data_dir / "collections" / f"c{i}-{distance}").is_dir()
    assert c.ok("GET", "/collections/with_ivf")["config"]["index"] == "ivf_flat,nlist=4"

    status, _, body = c.put("/collections/c0-Cosine", {"vectors": {"size": 3, "distance": "Cosine"}})
    assert status == 409 and "already exists" in body["status"]["error"], body

    assert c.ok("DELETE", "/collections/c1-Dot") is True
    assert not (s.data_dir / "collections" / "c1-Dot").exists()
    status, _, body = c.get("/collections/c1-Dot")
    assert status == 404 and "does not exist" in body["status"]["error"]
    assert c.ok("GET", "/collections/c1-Dot/exists") == {"exists": False}
    assert c.ok("GET", "/collections/c0-Cosine/exists") == {"exists": True}
    status, _, body = c.delete("/collections/c1-Dot")
    assert status == 404
    assert "c1-Dot" not in [x["name"] for x in c.ok("GET", "/collections")["collections"]]
    # A name can be used again, with another shape.
    create_collection(c, "c1-Dot", 5, "Euclid")
    assert c.ok("GET", "/collections/c1-Dot")["config"]["params"]["vectors"] == {"size": 5, "distance": "Euclid"}
    # Collections survive a restart as they are; leftovers of a create or delete that a crash
    # interrupted (.tmp-*, .deleted-*) are removed at start and never listed.
    s.stop()
    for leftover in [".tmp-half-1-2-3", ".deleted-c2-Euclid-4-5-6"]:
        (s.data_dir / "collections" / leftover).mkdir()
        (s.data_dir / "collections" / leftover / "points.sqlite").write_bytes(b"partial")
    s.start()
    c = s.client()
    names2 = sorted(x["name"] for x in c.ok("GET", "/collections")["collections"])
    assert names2 == names
    assert c.ok("GET", "/collections/c1-Dot")["config"]["params"]["vectors"] == {"size": 5, "distance": "Euclid"}
    assert not [p.name for p in (s.data_dir / "collections").iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------- points


def test_points_upsert_get_retrieve_delete_scroll(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    n, d = 257, 11
    create_collection(c, "pts", d, "Euclid")
    ids = random_ids(rng, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    payloads: list[dict[str, Any] | None] = [
        None if i % 7 == 0 else {"i": int(i), "name": f"p{i}", "nested": {"a": [1, 2, {"b": None}]}, "f": 0.5}
        for i in range(n)
    ]
    upsert(c, "pts", ids, X, payloads, chunk=100)
    assert points_count(c, "pts") == n

    # GET one point: its exact float32 vector and payload ({} when it has none).
    for j in [0, 1, 7, n - 1]:
        p = c.ok("GET", f"/collections/pts/points/{ids[j]}")
        assert p["id"] == ids[j]
        assert np.array_equal(np.array(p["vector"], dtype=np.float32), X[j])
        assert p["payload"] == (payloads[j] or {})
    status, _, body = c.get(f"/collections/pts/points/{(1 << 53)}")
    assert status == 404 and "is not in collection" in body["status"]["error"], body

    # Retrieve by ids: present ones in request order, absent ones left out.
    want = [int(ids[5]), 123456789012345, int(ids[3]), int(ids[0])]
    got = c.ok("POST", "/collections/pts/points", {"ids": want})
    assert [p["id"] for p in got] == [int(ids[5]), int(ids[3]), int(ids[0])]
    assert got[0]["payload"] == payloads[5] and "vector" not in got[0]
    got = c.ok("POST", "/collections/pts/points", {"ids": [int(ids[4])], "with_vector": True, "with_payload": False})
    assert got == [{"id": int(ids[4]), "vector": X[4].tolist()}]

    # Scroll: every point once, in id order, across pages of an awkward size.
    seen: list[int] = []
    offset = None
    for _ in range(100):
        body = {"limit": 37} if offset is None else {"limit": 37, "offset": offset}
        r = c.ok("POST", "/collections/pts/points/scroll", body)
        seen += [p["id"] for p in r["points"]]
        assert len(r["points"]) <= 37
        offset = r["next_page_offset"]
        if offset is None:
            break
    assert seen == sorted(int(i) for i in ids)
    # An offset that is not an id starts at the next id up.
    ordered = sorted(int(i) for i in ids)
    between = ordered[10] + 1
    assert between not in ordered
    r = c.ok("POST", "/collections/pts/points/scroll", {"offset": between, "limit": 3, "with_payload": False})
    assert [p["id"] for p in r["points"]] == ordered[11:14] and r["next_page_offset"] == ordered[14]
    assert all("payload" not in p and "vector" not in p for p in r["points"])
    everything = scroll_all(c, "pts")
    for j in range(n):
        assert np.array_equal(np.array(everything[int(ids[j])]["vector"], dtype=np.float32), X[j])

    # Upsert over existing ids replaces vector and payload (a point sent without payload loses its payload).
    Y = rng.standard_normal((3, d)).astype(np.float32)
    upsert(c, "pts", ids[[2, 3, 4]], Y, [{"v": 2}, None, {"v": 4}])
    assert points_count(c, "pts") == n
    assert c.ok("GET", f"/collections/pts/points/{ids[3]}")["payload"] == {}
    assert c.ok("GET", f"/collections/pts/points/{ids[4]}")["payload"] == {"v": 4}
    hit = c.ok("POST", "/collections/pts/points/search", {"vector": Y[1].tolist(), "limit": 1})
    assert hit[0]["id"] == ids[3] and hit[0]["score"] == pytest.approx(0, abs=1e-3)

    # Delete: absent ids are ignored and not counted.
    r = c.ok("POST", "/collections/pts/points/delete?wait=true", {"points": [int(ids[10]), int(ids[11]), 99]})
    assert r["status"] == "completed" and r["deleted"] == 2 and r["operation_id"] > 0
    assert points_count(c, "pts") == n - 2
    status, _, _ = c.get(f"/collections/pts/points/{ids[10]}")
    assert status == 404
    hit = c.ok("POST", "/collections/pts/points/search", {"vector": X[10].tolist(), "limit": 3})
    assert int(ids[10]) not in [h["id"] for h in hit]
    # Delete the same again: nothing left to delete.
    r = c.ok("POST", "/collections/pts/points/delete", {"points": [int(ids[10])]})
    assert r["deleted"] == 0
    # wait=false is acknowledged as durably as wait=true.
    r = c.ok("PUT", "/collections/pts/points?wait=false", {"points": [{"id": 5, "vector": [0.0] * d}]})
    assert r["status"] == "acknowledged" and isinstance(r["operation_id"], int)
    assert c.ok("GET", "/collections/pts/points/5")["vector"] == [0.0] * d


def test_uuid_and_integer_ids_live_side_by_side(serve: Any, rng: np.random.Generator) -> None:
    import uuid as uuidlib

    s = serve()
    c = s.client()
    n, d = 60, 5
    create_collection(c, "mixed", d, "Euclid")
    uuids = [str(uuidlib.UUID(bytes=rng.bytes(16))) for _ in range(n // 2)]
    ids: list[Any] = uuids + [int(i) for i in random_ids(rng, n - n // 2)]
    X = rng.standard_normal((n, d)).astype(np.float32)
    # Every accepted spelling of a UUID names the same point; answers use the canonical one.
    spelled = [u.upper() if j % 3 == 0 else (u.replace("-", "") if j % 3 == 1 else "{" + u + "}") for j, u in enumerate(uuids)]
    points = [{"id": spelled[j] if j < len(uuids) else ids[j], "vector": X[j].tolist(), "payload": {"j": j}} for j in range(n)]
    c.ok("PUT", "/collections/mixed/points", {"points": points})
    assert points_count(c, "mixed") == n
    for j in [0, 1, 2, n - 1]:
        p = c.ok("GET", f"/collections/mixed/points/{ids[j]}")
        assert p["id"] == ids[j] and p["payload"] == {"j": j}
    for j in range(n):
        hit = c.ok("POST", "/collections/mixed/points/search", {"vector": X[j].tolist(), "limit": 1})
        assert hit[0]["id"] == ids[j] and hit[0]["version"] == 0
    got = c.ok("POST", "/collections/mixed/points", {"ids": [ids[3], str(uuidlib.UUID(int=7)), ids[n - 2]]})
    assert [p["id"] for p in got] == [ids[3], ids[n - 2]]
    # Re-upserting a UUID replaces its point; scroll pages through both kinds (integers first).
    c.ok("PUT", "/collections/mixed/points", {"points": [{"id": uuids[4], "vector": [9.0] * d}]})
    assert points_count(c, "mixed") == n
    seen: list[Any] = []
    offset = None
    while True:
        r = c.ok("POST", "/collections/mixed/points/scroll", {"limit": 7} | ({} if offset is None else {"offset": offset}))
        seen += [p["id"] for p in r["points"]]
        offset = r["next_page_offset"]
        if offset is None:
            break
    assert sorted(map(str, seen)) == sorted(map(str, ids)) and len(seen) == n
    # Deleting a UUID forgets it; its spelling in another case deletes the same point.
    r = c.ok("POST", "/collections/mixed/points/delete", {"points": [uuids[5].upper(), ids[n - 1]]})
    assert r["deleted"] == 2
    assert c.get(f"/collections/mixed/points/{uuids[5]}")[0] == 404
    # Everything survives a restart, and new UUIDs never take an old point's id.
    s.restart()
    c = s.client()
    c.ok("PUT", "/collections/mixed/points", {"points": [{"id": str(uuidlib.UUID(int=1)), "vector": [5.0] * d}]})
    assert points_count(c, "mixed") == n - 1
    for j in [0, 4, 6, n // 2]:
        p = c.ok("GET", f"/collections/mixed/points/{ids[j]}", )
        assert p["id"] == ids[j]
        assert p["vector"] == ([9.0] * d if j == 4 else X[j].tolist())
    assert c.ok("GET", f"/collections/mixed/points/{uuidlib.UUID(int=1)}")["vector"] == [5.0] * d


# ---------------------------------------------------------------- exact search


def knn_cli(cli: str, tmp: pathlib.Path, X: np.ndarray, Q: np.ndarray, k: int, distance: str) -> np.ndarray:
    np.save(tmp / "base.npy", X.astype(np.float32))
    np.save(tmp / "queries.npy", Q.astype(np.float32))
    subprocess.run(
        [cli, "knn", "--base", str(tmp / "base.npy"), "--queries", str(tmp / "queries.npy"), "-k", str(k),
         "--metric", KNN_METRIC[distance], "--ids", str(tmp / "ids.npy"), "--device", "cpu"],
        check=True, capture_output=True, timeout=120,
    )
    return np.load(tmp / "ids.npy")


@pytest.mark.parametrize("distance,workers", [(d, 1) for d in DISTANCES] + [("Dot", 3)],
                         ids=[d for d in DISTANCES] + ["Dot-3-batch-workers"])
def test_search_equals_exact_knn(serve: Any, rng: np.random.Generator, cli: str, tmp_path: pathlib.Path,
                                 distance: str, workers: int) -> None:
    n, d, m, k = 1037, 37, 29, 13
    X = rng.standard_normal((n, d)).astype(np.float32)
    if distance == "Dot":
        X *= rng.uniform(0.5, 2.0, size=(n, 1)).astype(np.float32)  # norms matter for dot
    Q = rng.standard_normal((m, d)).astype(np.float32)
    ids = random_ids(rng, n)
    payloads = [{"row": i} for i in range(n)]
    s = serve("--batch-workers", str(workers))
    c = s.client()
    create_collection(c, "exact", d, distance)
    upsert(c, "exact", ids, X, payloads, chunk=400)

    rows = knn_cli(cli, tmp_path, X, Q, k, distance)
    want = ids[rows]  # knn answers row numbers; the server, the ids it was given
    S = scores(X, Q, distance)
    ref_ids, ref_s = top_k(S, ids, k, distance)
    score_of = [{int(ids[j]): float(S[r, j]) for j in range(n)} for r in range(m)]
    swaps = 0
    for r in range(m):
        swaps += compare_ranking(list(want[r]), list(ref_ids[r]), score_of[r])

    def check(r: int, hits: list[dict[str, Any]], offset: int = 0, limit: int = k) -> None:
        nonlocal swaps
        got = [h["id"] for h in hits]
        swaps += compare_ranking(got, [int(x) for x in want[r, offset:offset + limit]], score_of[r])
        for h in hits:
            assert h["score"] == pytest.approx(score_of[r][h["id"]], rel=1e-4, abs=1e-4), (r, h)

    # Concurrent single searches, so that the batcher runs several as one call.
    before = s.metrics()
    results: dict[int, Any] = {}
    errors: list[str] = []
    start = threading.Barrier(8)

    def worker(w: int) -> None:
        cc = Client(s.port)
        try:
            start.wait(timeout=30)
            for rnd in range(3):  # bounded: 3 rounds of the worker's share of queries
                for r in range(w, m, 8):
                    status, _, body = cc.post("/collections/exact/points/search",
                                              {"vector": Q[r].tolist(), "limit": k, "with_payload": rnd == 0})
                    if status != 200:
                        errors.append(f"{status} {body}")
                        return
                    results[(r, rnd)] = body["result"]
        finally:
            cc.close()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert len(results) == 3 * m
    for (r, rnd), hits in results.items():
        check(r, hits)
        if rnd == 0:
            assert all(h["payload"] == {"row": int(np.where(ids == h["id"])[0][0])} for h in hits)
        else:
            assert all("payload" not in h for h in hits)
    after = s.metrics()
    batches = metric(after, "simkit_batch_size_count") - metric(before, "simkit_batch_size_count")
    searches = metric(after, "simkit_batch_size_sum") - metric(before, "simkit_batch_size_sum")
    print(f"{distance}: {int(searches)} concurrent searches ran in {int(batches)} batches")
    assert searches == 3 * m
    assert 0 < batches < searches, "no batch of the concurrent single searches held more than one search"

    # The batch route: one request, answers in request order; offsets page through the ranking.
    searches_body = [{"vector": Q[r].tolist(), "limit": k} for r in range(m)]
    searches_body += [{"vector": Q[r].tolist(), "limit": 5, "offset": 4} for r in range(m)]
    batch = c.ok("POST", "/collections/exact/points/search/batch", {"searches": searches_body})
    assert len(batch) == 2 * m
    for r in range(m):
        check(r, batch[r])
        check(r, batch[m + r], offset=4, limit=5)
    # Asking for more than there are: every point, ranked.
    every = c.ok("POST", "/collections/exact/points/search", {"vector": Q[0].tolist(), "limit": 10000})
    assert len(every) == n
    assert sorted(h["id"] for h in every) == sorted(int(i) for i in ids)
    print(f"{distance}: {swaps} near-tie swaps tolerated")
    assert swaps <= 0.01 * m * k * 4


# ---------------------------------------------------------------- filters


def matches(payload: dict[str, Any] | None, must: list[tuple[str, Any]]) -> bool:
    """The filter semantics, written independently: equality of keyword / integer / bool (a bool
    never equals an integer, a float never equals an integer); an array field matches when any
    element does."""
    if payload is None:
        return not must

    def eq(field: Any, value: Any) -> bool:
        if isinstance(value, bool) or isinstance(field, bool):
            return isinstance(value, bool) and isinstance(field, bool) and field == value
        if isinstance(value, str):
            return isinstance(field, str) and field == value
        return isinstance(field, int) and field == value

    for key, value in must:
        if key not in payload:
            return False
        f = payload[key]
        if isinstance(f, list):
            if not any(eq(e, value) for e in f):
                return False
        elif not eq(f, value):
            return False
    return True


def test_filters_equal_brute_force(serve: Any, rng: np.random.Generator) -> None:
    n, d, k = 1531, 24, 10
    colors = ["red", "green", "blue", "cyan", "magenta"]
    tags = list("abcdefgh")
    ids = random_ids(rng, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    payloads: list[dict[str, Any] | None] = []
    for i in range(n):
        if i % 53 == 0:
            payloads.append(None)
            continue
        p: dict[str, Any] = {"color": colors[int(rng.integers(5))], "n": int(rng.integers(50)),
                             "flag": bool(rng.integers(2)), "uid": int(ids[i]),
                             "tags": [t for t in tags if rng.random() < 0.25]}
        if i % 11 == 0:
            del p["color"]
        if i % 13 == 0:
            p["n"] = float(p["n"])  # a float field never matches an integer value
        if i % 17 == 0:
            p["flag"] = int(p["flag"])  # 0/1, not a bool
        payloads.append(p)
    s = serve()
    c = s.client()
    create_collection(c, "f", d, "Cosine")
    upsert(c, "f", ids, X, payloads, chunk=600)

    target = int(ids[int(rng.integers(1, n))])
    while payloads[int(np.where(ids == target)[0][0])] is None:
        target = int(ids[int(rng.integers(1, n))])
    filters: list[list[tuple[str, Any]]] = [
        [("color", "red")],                                   # ~ 1/5
        [("flag", True), ("color", "blue")],                  # ~ 1/10
        [("tags", "c")],                                      # ~ 1/4, an array field
        [("tags", "a"), ("tags", "h"), ("flag", False)],      # ~ 1/32
        [("n", 7)],                                           # ~ 1/50: fewer than 40 match
        [("n", 7), ("color", "green")],                       # a handful, maybe fewer than k
        [("uid", target)],                                    # exactly one point
        [("color", "nope")],                                  # none
        [("n", -1)],                                          # none
        [("flag", 1)],                                        # the integer 1: only the 0/1 fields
        [("missing_field", "x")],                             # none
    ]
    Q = rng.standard_normal((7, d)).astype(np.float32)
    S = scores(X, Q, "Cosine")
    checked = 0
    searches: list[dict[str, Any]] = []
    expected: list[tuple[int, np.ndarray]] = []
    for must in filters:
        allowed = np.array([matches(payloads[i], must) for i in range(n)])
        cols = np.where(allowed)[0]
        body_filter = {"must": [{"key": key, "match": {"value": v}} for key, v in must]}
        for r in range(len(Q)):
            want_ids, _ = top_k(S[r:r + 1, cols], ids[cols], k, "Cosine")
            want = [int(x) for x in want_ids[0]]
            hits = c.ok("POST", "/collections/f/points/search",
                        {"vector": Q[r].tolist(), "limit": k, "filter": body_filter, "with_payload": True})
            got = [h["id"] for h in hits]
            score_of = {int(ids[j]): float(S[r, j]) for j in cols}
            assert len(got) == min(k, len(cols)), (must, len(got), len(cols))
            compare_ranking(got, want, score_of)
            for h in hits:
                assert h["score"] == pytest.approx(score_of[h["id"]], abs=1e-5)
                assert matches(h["payload"], must), (must, h)
            searches.append({"vector": Q[r].tolist(), "limit": k, "filter": body_filter})
            expected.append((r, cols))
            checked += 1
        print(f"filter {must}: {len(cols)} of {n} points match")
    assert sum(1 for must in filters if sum(matches(p, must) for p in payloads) == 0) >= 3
    assert sum(matches(p, [("uid", target)]) for p in payloads) == 1
    # The same filters mixed in one batch (one allow-list per distinct filter), plus unfiltered ones.
    searches.append({"vector": Q[0].tolist(), "limit": k})
    batch = c.ok("POST", "/collections/f/points/search/batch", {"searches": searches})
    for (r, cols), hits in zip(expected, batch):
        want_ids, _ = top_k(S[r:r + 1, cols], ids[cols], k, "Cosine")
        compare_ranking([h["id"] for h in hits], [int(x) for x in want_ids[0]],
                        {int(ids[j]): float(S[r, j]) for j in cols})
    want_ids, _ = top_k(S[0:1], ids, k, "Cosine")
    compare_ranking([h["id"] for h in batch[-1]], [int(x) for x in want_ids[0]],
                    {int(ids[j]): float(S[0, j]) for j in range(n)})
    # An empty filter, or {"must": []}, is every point.
    for f in [{}, {"must": []}]:
        hits = c.ok("POST", "/collections/f/points/search", {"vector": Q[0].tolist(), "limit": k, "filter": f})
        assert [h["id"] for h in hits] == [h["id"] for h in batch[-1]]
    # A filter follows writes: a point's new payload is matched at once, its old one no more.
    j = int(np.where(ids == target)[0][0])
    upsert(c, "f", [target], X[j:j + 1], [{"color": "unique-color"}])
    hits = c.ok("POST", "/collections/f/points/search",
                {"vector": Q[0].tolist(), "limit": k, "filter": {"must": [{"key": "color", "match": {"value": "unique-color"}}]}})
    assert [h["id"] for h in hits] == [target]
    hits = c.ok("POST", "/collections/f/points/search",
                {"vector": Q[0].tolist(), "limit": k, "filter": {"must": [{"key": "uid", "match": {"value": target}}]}})
    assert hits == []
    print(f"{checked} filtered searches checked")


def test_filters_read_payload_text_as_a_parser_would(serve: Any, rng: np.random.Generator) -> None:
    # Payloads are held as compact JSON text and filters read fields out of it (payload.hpp):
    # escaped and non-ASCII keys and strings, integers at int64/uint64's ends, -0, floats that
    # look like integers, nested arrays and repeated keys must match as a parsed tree does.
    keys = ["k", r"l\u00e4ng", "läng", r"q\"uote", r"back\\slash", r"tab\t", r"\ud83d\ude00", "a.b", ""]
    values = ['"x"', r'"\u00e4"', '"ä"', r'"\""', r'"\\"', r'"\n"', r'"\ud83d\ude00"', "0", "-0", "-1",
              "9223372036854775807", "-9223372036854775808", "18446744073709551615", "1.0", "1e2", "true",
              "false", "null", "[]", '["x",[1],{"k":1},1]', "[-1,18446744073709551615]", '{"k":"x"}']
    raw_payloads: list[str] = []
    for i in range(80):
        members = [f'"{keys[int(rng.integers(len(keys)))]}":{values[int(rng.integers(len(values)))]}'
                   for _ in range(int(rng.integers(0, 5)))]
        raw_payloads.append("{" + ",".join(members) + "}")
    s = serve()
    c = s.client()
    d = 4
    create_collection(c, "t", d, "Dot")
    X = rng.standard_normal((len(raw_payloads), d)).astype(np.float32)
    points = ",".join(f'{{"id":{i},"vector":{json.dumps(X[i].tolist())},"payload":{p}}}'
                      for i, p in enumerate(raw_payloads))
    status, _, b = c.request("PUT", "/collections/t/points?wait=true", raw=('{"points":[' + points + "]}").encode())
    assert status == 200, b
    parsed = [json.loads(p) for p in raw_payloads]
    targets = [json.loads(v) for v in values if json.loads(v) is None or not isinstance(json.loads(v), (list, dict, float))]
    checked = 0
    for key_text in keys[:-1]:  # a filter's key is never empty; payloads may have one
        key = json.loads(f'"{key_text}"')
        path = f'"{key}"' if "." in key else key  # a filter's key is a path: a key holding dots is quoted
        for value in targets:
            if value is None:
                continue
            body = {"vector": [1.0] * d, "limit": 100, "filter": {"must": [{"key": path, "match": {"value": value}}]}}
            if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
                # Integers in filters are int64, as in Qdrant; a payload's larger integer equals none.
                status, _, b = c.post("/collections/t/points/search", body)
                assert status == 400 and "int64" in b["status"]["error"], b
                continue
            want = sorted(i for i, p in enumerate(parsed) if matches(p, [(key, value)]))
            hits = c.ok("POST", "/collections/t/points/search", body)
            assert sorted(h["id"] for h in hits) == want, (key, value)
            checked += 1
    got = c.ok("POST", "/collections/t/points", {"ids": list(range(len(parsed)))})
    assert {p["id"]: p["payload"] for p in got} == dict(enumerate(parsed))
    print(f"{checked} key/value filters checked over {len(parsed)} payloads")


# ---------------------------------------------------------------- linearizability


@pytest.mark.parametrize("workers", [1, 3])
def test_acknowledged_writes_are_visible_at_once(serve: Any, rng: np.random.Generator, workers: int) -> None:
    d = 16
    s = serve("--batch-workers", str(workers))
    writer, reader = s.client(), s.client()
    create_collection(writer, "lin", d, "Euclid")
    upsert(writer, "lin", range(1000, 1300), rng.standard_normal((300, d)).astype(np.float32))

    # Background searches keep the batcher busy, so the reader's searches share batches.
    stop = threading.Event()
    background_errors: list[str] = []

    def background() -> None:
        cc = Client(s.port)
        q = rng.standard_normal(d).astype(np.float32).tolist()
        try:
            for _ in range(20000):  # bounded
                if stop.is_set():
                    return
                status, _, body = cc.post("/collections/lin/points/search", {"vector": q, "limit": 5})
                if status != 200:
                    background_errors.append(f"{status} {body}")
                    return
        except Exception as e:  # noqa: BLE001 - reported by the test
            background_errors.append(repr(e))
        finally:
            cc.close()

    bg = [threading.Thread(target=background) for _ in range(2)]
    for t in bg:
        t.start()
    inserted: list[tuple[int, list[float]]] = []
    deleted = 0
    deadline = time.monotonic() + 60
    rounds = 0
    try:
        for rnd in range(300):
            if time.monotonic() > deadline:
                break
            rounds += 1
            pid = 5000 + rnd
            v = rng.standard_normal(d).astype(np.float32).tolist()
            r = writer.ok("PUT", "/collections/lin/points?wait=true", {"points": [{"id": pid, "vector": v}]})
            assert r["status"] == "completed"
            hits = reader.ok("POST", "/collections/lin/points/search", {"vector": v, "limit": 1})
            assert hits and hits[0]["id"] == pid and hits[0]["score"] == pytest.approx(0, abs=1e-3), (rnd, hits)
            inserted.append((pid, v))
            if rnd % 3 == 2:
                gone_id, gone_v = inserted.pop(int(rng.integers(len(inserted))))
                r = writer.ok("POST", "/collections/lin/points/delete?wait=true", {"points": [gone_id]})
                assert r["deleted"] == 1
                hits = reader.ok("POST", "/collections/lin/points/search", {"vector": gone_v, "limit": 1})
                assert hits and hits[0]["id"] != gone_id, (rnd, gone_id, hits)
                deleted += 1
    finally:
        stop.set()
        for t in bg:
            t.join(timeout=60)
    assert not background_errors, background_errors[:3]
    print(f"linearizability: {rounds} rounds, {deleted} deletes, all visible at once")
    assert rounds >= 50
    assert points_count(writer, "lin") == 300 + rounds - deleted


# ---------------------------------------------------------------- the background index build


class Live:
    """The points a collection should hold, for a float64 reference as it changes."""

    def __init__(self, ids: np.ndarray, X: np.ndarray) -> None:
        self.vec = {int(i): X[j] for j, i in enumerate(ids)}

    def reference(self, q: np.ndarray, k: int, distance: str) -> tuple[list[int], dict[int, float]]:
        ids = np.array(list(self.vec), dtype=np.int64)
        S = scores(np.stack(list(self.vec.values())), q[None, :], distance)
        want, _ = top_k(S, ids, k, distance)
        return [int(x) for x in want[0]], {int(i): float(v) for i, v in zip(ids, S[0])}


def wait_build(c: Client, name: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        info = c.ok("GET", f"/collections/{name}")
        if not info["index"]["build"].startswith("building"):
            return info
        assert time.monotonic() < deadline, f"the build did not finish in {timeout} s: {info}"
        time.sleep(0.01)


def test_index_build_in_background_then_restart_loads_it(serve: Any, rng: np.random.Generator,
                                                          shared_data: pathlib.Path) -> None:
    base = np.load(shared_data / "wordnet" / "base_minilm_f16.npy", mmap_mode="r")
    queries = np.load(shared_data / "wordnet" / "queries_minilm_f16.npy", mmap_mode="r")
    n, k, d = 9973, 10, base.shape[1]
    rows = np.sort(rng.choice(base.shape[0], size=n, replace=False))
    X = np.asarray(base[rows], dtype=np.float32)
    Q = np.asarray(queries[rng.choice(queries.shape[0], size=37, replace=False)], dtype=np.float32)
    ids = random_ids(rng, n)
    live = Live(ids, X)

    s = serve()
    c, watcher = s.client(), s.client()
    create_collection(c, "w", d, "Cosine")
    upsert(c, "w", ids, X, chunk=2500)

    def check_all() -> float:
        body = {"searches": [{"vector": q.tolist(), "limit": k} for q in Q]}
        found = 0
        for q, hits in zip(Q, c.ok("POST", "/collections/w/points/search/batch", body)):
            want, score_of = live.reference(q, k, "Cosine")
            got = [h["id"] for h in hits]
            compare_ranking(got, want, score_of)
            found += len(set(got) & set(want))
        return found / (len(Q) * k)

    check_all()
    description = "ivf_flat,nlist=16,nprobe=16"
    r = c.ok("PUT", "/collections/w/vector_index", {"index": description}, expect=202)
    assert r == {"status": "building", "index": description}
    status, _, body = c.put("/collections/w/vector_index", {"index": description})
    assert status == 409 and "already running" in body["status"]["error"] or status == 202, body
    # While it builds: searches stay exact (on the flat index), writes are visible at once, and
    # the new index catches up with them before it is swapped in.
    during = 0
    new_id = 1 << 50
    deadline = time.monotonic() + 120
    info = watcher.ok("GET", "/collections/w")
    while info["index"]["build"] != "ready":
        assert info["index"]["build"].startswith("building ivf_flat"), info
        assert time.monotonic() < deadline, f"the build did not finish in 120 s: {info}"
        v = rng.standard_normal(d).astype(np.float32)
        upsert(c, "w", [new_id], v[None, :])
        live.vec[new_id] = v
        gone = int(rng.choice(list(live.vec)[:n // 2]))
        assert c.ok("POST", "/collections/w/points/delete", {"points": [gone]})["deleted"] == 1
        del live.vec[gone]
        hits = c.ok("POST", "/collections/w/points/search", {"vector": v.tolist(), "limit": 1})
        assert hits[0]["id"] == new_id
        q = Q[int(rng.integers(len(Q)))]
        hits = c.ok("POST", "/collections/w/points/search", {"vector": q.tolist(), "limit": k})
        want, score_of = live.reference(q, k, "Cosine")
        compare_ranking([h["id"] for h in hits], want, score_of)
        new_id += 1
        after = watcher.ok("GET", "/collections/w")
        if after["index"]["build"] != "ready":
            during += 1
        info = after
    print(f"{during} rounds of writes and searches while the index was building")
    assert during >= 1
    assert info["index"]["type"] == "ivf_flat"
    assert info["index"]["description"].startswith("ivf_flat,nlist=16,nprobe=16")
    assert info["config"]["index"] == description
    assert info["points_count"] == len(live.vec) and info["status"] == "green"
    # nprobe = nlist scans every list: the same neighbours as exact search, writes included.
    recall = check_all()
    print(f"ivf_flat nprobe=nlist recall@{k} = {recall:.4f}")
    assert recall >= 0.999
    for i in range(1 << 50, new_id):
        hits = c.ok("POST", "/collections/w/points/search", {"vector": live.vec[i].tolist(), "limit": 1})
        assert hits[0]["id"] == i

    def loaded() -> re.Match[str]:
        m = re.search(r"collection w: (\d+) points, index (\S+) \((index-\d+\.simkit) \+ (\d+) replayed\)", s.stderr())
        assert m, s.stderr()
        return m

    # Saved when built: a restart after SIGTERM loads it and replays nothing...
    files = sorted(p.name for p in (s.data_dir / "collections" / "w").glob("index-*.simkit"))
    assert len(files) == 1, files
    assert "draining" in s.stop()
    s.start()
    m = loaded()
    assert int(m.group(1)) == len(live.vec) and m.group(2).startswith("ivf_flat,nlist=16") and m.group(4) == "0", m.group(0)
    # ... and after a crash, the saved index plus the writes since.
    c = s.client()
    extra = rng.standard_normal((5, d)).astype(np.float32)
    upsert(c, "w", [7, 8, 9, 10, 11], extra)
    live.vec.update({7 + j: extra[j] for j in range(5)})
    gone2 = [i for i in list(live.vec)[:2]]
    assert c.ok("POST", "/collections/w/points/delete", {"points": gone2})["deleted"] == 2
    for i in gone2:
        del live.vec[i]
    s.kill()
    s.start()
    m = loaded()
    assert int(m.group(1)) == len(live.vec) and m.group(2).startswith("ivf_flat") and m.group(4) == "7", m.group(0)
    c = s.client()
    info = c.ok("GET", "/collections/w")
    assert info["index"]["type"] == "ivf_flat" and info["index"]["build"] == "ready"
    assert check_all() >= 0.999
    hits = c.ok("POST", "/collections/w/points/search", {"vector": extra[2].tolist(), "limit": 1})
    assert hits[0]["id"] == 9

    # A damaged index file: start-up says so, serves from a flat index built from the points, and
    # rebuilds the configured ivf_flat in the background.
    s.stop()
    files = list((s.data_dir / "collections" / "w").glob("index-*.simkit"))
    assert len(files) == 1, files
    data = files[0].read_bytes()
    files[0].write_bytes(data[: len(data) // 3])
    s.start()
    assert "unusable" in s.stderr() and "rebuilding from the points" in s.stderr(), s.stderr()
    c = s.client()
    assert check_all() >= 0.999  # exact meanwhile (flat) or after (ivf, nprobe = nlist)
    info = wait_build(c, "w")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "ivf_flat", info
    assert check_all() >= 0.999
    assert info["points_count"] == len(live.vec)


def test_index_build_failure_is_reported(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "few", 6, "Euclid")
    X = rng.standard_normal((5, 6)).astype(np.float32)
    upsert(c, "few", range(5), X)
    # Too few points to train 16 lists: accepted (202), then reported failed; the flat index serves on.
    c.ok("PUT", "/collections/few/vector_index", {"index": "ivf_flat,nlist=16"}, expect=202)
    info = wait_build(c, "few")
    assert info["index"]["build"].startswith("failed: "), info
    assert info["index"]["type"] == "flat" and info["points_count"] == 5
    hits = c.ok("POST", "/collections/few/points/search", {"vector": X[3].tolist(), "limit": 1})
    assert hits[0]["id"] == 3
    # Enough points now: an empty body rebuilds the configured description.
    upsert(c, "few", range(5, 69), rng.standard_normal((64, 6)).astype(np.float32))
    c.ok("PUT", "/collections/few/vector_index", {}, expect=202)
    info = wait_build(c, "few")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "ivf_flat", info
    assert info["points_count"] == 69
    # And back to flat.
    c.ok("PUT", "/collections/few/vector_index", {"index": "flat"}, expect=202)
    info = wait_build(c, "few")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "flat", info
    hits = c.ok("POST", "/collections/few/points/search", {"vector": X[4].tolist(), "limit": 1})
    assert hits[0]["id"] == 4


def test_compressed_and_hashing_indexes_serve_and_short_searches_are_counted(
        serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    n, d, k = 600, 16, 10
    create_collection(c, "pq", d, "Cosine")
    X = rng.standard_normal((n, d)).astype(np.float32)
    ids = random_ids(rng, n)
    upsert(c, "pq", ids, X)
    live = Live(ids, X)
    Q = rng.standard_normal((12, d)).astype(np.float32)
    # ivf_pq probing every list and re-ranking every candidate answers exactly, from 4 bytes a point.
    description = "ivf_pq,nlist=4,m=4,refine=100,nprobe=4"
    c.ok("PUT", "/collections/pq/vector_index", {"index": description}, expect=202)
    info = wait_build(c, "pq")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "ivf_pq", info
    for q in Q:
        hits = c.ok("POST", "/collections/pq/points/search", {"vector": q.tolist(), "limit": k})
        want, score_of = live.reference(q, k, "Cosine")
        compare_ranking([h["id"] for h in hits], want, score_of)
    # lsh with one table of 24 bits: a query's bucket holds few points, so searches come back
    # short (never filled by a full scan) and the server counts them.
    c.ok("PUT", "/collections/pq/vector_index", {"index": "lsh,tables=1,bits=24"}, expect=202)
    info = wait_build(c, "pq")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "lsh", info
    before = metric(c.get("/metrics")[2], "simkit_search_short_total", collection="pq")
    short = 0
    for q in Q:
        hits = c.ok("POST", "/collections/pq/points/search", {"vector": q.tolist(), "limit": k})
        short += len(hits) < k
        want, score_of = live.reference(q, n, "Cosine")
        assert all(h["id"] in score_of for h in hits)
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert short > 0
    after = metric(c.get("/metrics")[2], "simkit_search_short_total", collection="pq")
    assert after - before == short


def test_tree_index_serves_exactly_through_writes_and_restart(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    # The tree serves Euclid in d <= 8 alone: anything else is refused when asked for.
    for size, distance, why in ((3, "Cosine", "l2 and sqeuclidean"), (9, "Euclid", "d <= 8")):
        status, _, body = c.put("/collections/bad", {"vectors": {"size": size, "distance": distance}, "index": "tree"})
        assert status == 400 and why in body["status"]["error"] and "'flat'" in body["status"]["error"], body
    n, d, k = 6000, 3, 10
    create_collection(c, "t", d, "Euclid", index="tree")
    create_collection(c, "cos", d, "Cosine")
    status, _, body = c.put("/collections/cos/vector_index", {"index": "tree"})
    assert status == 400 and "l2 and sqeuclidean" in body["status"]["error"], body
    X = rng.standard_normal((n, d)).astype(np.float32)
    ids = random_ids(rng, n)
    upsert(c, "t", ids, X)
    live = Live(ids, X)
    Q = rng.standard_normal((15, d)).astype(np.float32)

    def check_all() -> None:
        for q in Q:
            hits = c.ok("POST", "/collections/t/points/search", {"vector": q.tolist(), "limit": k})
            want, score_of = live.reference(q, k, "Euclid")
            compare_ranking([h["id"] for h in hits], want, score_of)

    c.ok("PUT", "/collections/t/vector_index", {}, expect=202)  # the configured description: tree
    info = wait_build(c, "t")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "tree", info
    assert info["index"]["description"] == "tree" and info["points_count"] == n
    check_all()
    # Upserts that overwrite points (new vectors under old ids), new points, deletes: each lands
    # in the tree's tail or mask, and searches see it at once.
    old = [int(i) for i in ids[:700]]
    moved = rng.standard_normal((700, d)).astype(np.float32)
    upsert(c, "t", old, moved, chunk=100)
    live.vec.update({i: moved[j] for j, i in enumerate(old)})
    fresh = rng.standard_normal((500, d)).astype(np.float32)
    fresh_ids = [(1 << 45) + j for j in range(500)]
    upsert(c, "t", fresh_ids, fresh, chunk=50)
    live.vec.update({i: fresh[j] for j, i in enumerate(fresh_ids)})
    gone = [int(i) for i in ids[700:2400]]
    assert c.ok("POST", "/collections/t/points/delete", {"points": gone})["deleted"] == len(gone)
    for i in gone:
        del live.vec[i]
    check_all()
    hits = c.ok("POST", "/collections/t/points/search", {"vector": moved[5].tolist(), "limit": 1})
    assert hits[0]["id"] == old[5]
    # A restart loads the saved tree and replays the writes since.
    assert "draining" in s.stop()
    s.start()
    assert re.search(r"collection t: (\d+) points, index tree \(index-\d+\.simkit \+ \d+ replayed\)", s.stderr()), \
        s.stderr()
    c = s.client()
    assert c.ok("GET", "/collections/t")["points_count"] == len(live.vec)
    check_all()


def test_delete_collection_answers_queued_searches(serve: Any, rng: np.random.Generator) -> None:
    s = serve("--max-batch", "1", "--max-delay-us", "0", "--timeout-ms", "300000")
    c = s.client()
    n, d, m = 20011, 64, 401
    X = rng.standard_normal((n, d)).astype(np.float32)
    create_collection(c, "doomed", d, "Dot")
    upsert(c, "doomed", range(n), X, chunk=5000)
    Q = rng.standard_normal((m, d)).astype(np.float32)
    best = (Q.astype(np.float64) @ X.T.astype(np.float64)).argmax(axis=1)
    reply: dict[str, Any] = {}

    def long_batch() -> None:
        cc = Client(s.port, timeout=120)
        reply["r"] = cc.post("/collections/doomed/points/search/batch",
                             {"searches": [{"vector": q.tolist(), "limit": 1} for q in Q]})
        cc.close()

    t = threading.Thread(target=long_batch)
    t.start()
    deadline = time.monotonic() + 60
    while c.ok("GET", "/collections/doomed")["queue_depth"] < 50:
        assert time.monotonic() < deadline and t.is_alive(), reply
    assert c.ok("DELETE", "/collections/doomed") is True
    t.join(timeout=120)
    status, _, body = reply["r"]
    assert status == 200, body
    assert [h[0]["id"] for h in body["result"]] == [int(b) for b in best]
    status, _, _ = c.post("/collections/doomed/points/search", {"vector": Q[0].tolist()})
    assert status == 404
    assert not (s.data_dir / "collections" / "doomed").exists()


# ---------------------------------------------------------------- snapshots


def state(c: Client, name: str) -> dict[int, tuple[list[float], Any]]:
    return {i: (p["vector"], p["payload"]) for i, p in scroll_all(c, name).items()}


def test_snapshot_and_recover(serve: Any, rng: np.random.Generator) -> None:
    n, d = 613, 9
    s = serve()
    c = s.client()
    create_collection(c, "snap", d, "Dot")
    ids = random_ids(rng, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    upsert(c, "snap", ids, X, [{"i": i} for i in range(n)])
    status, _, body = c.get("/collections/snap/snapshots")
    assert status == 200 and body["result"] == []
    snap = c.ok("POST", "/collections/snap/snapshots")
    assert snap["name"].endswith(".snapshot") and snap["name"].startswith("snap-") and snap["size"] > n * d * 4
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", snap["creation_time"]), snap
    at_snapshot = state(c, "snap")
    assert len(at_snapshot) == n

    # Change everything: new points, replaced points and payloads, deleted points.
    Y = rng.standard_normal((20, d)).astype(np.float32)
    upsert(c, "snap", list(range(1 << 41, (1 << 41) + 10)) + [int(i) for i in ids[:10]], Y,
           [{"new": True}] * 20)
    assert c.ok("POST", "/collections/snap/points/delete", {"points": [int(i) for i in ids[10:30]]})["deleted"] == 20
    second = c.ok("POST", "/collections/snap/snapshots")
    assert second["name"] != snap["name"]
    listed = [x["name"] for x in c.ok("GET", "/collections/snap/snapshots")]
    assert sorted(listed) == sorted([snap["name"], second["name"]])
    changed = state(c, "snap")
    assert changed != at_snapshot and len(changed) == n - 10

    assert c.ok("PUT", "/collections/snap/snapshots/recover", {"location": snap["name"]}) is True
    assert state(c, "snap") == at_snapshot
    assert points_count(c, "snap") == n
    # Searches see the recovered points (a point deleted after the snapshot is back, a new one gone).
    hits = c.ok("POST", "/collections/snap/points/search", {"vector": X[15].tolist(), "limit": n, "with_payload": True})
    assert sorted(h["id"] for h in hits) == sorted(int(i) for i in ids)
    assert {h["id"]: h["payload"] for h in hits}[int(ids[15])] == {"i": 15}
    # Writes after a recover work as before.
    upsert(c, "snap", [3], Y[:1], [{"after": 1}])
    assert points_count(c, "snap") == n + (0 if 3 in set(int(i) for i in ids) else 1)

    # Recover the later snapshot, then into a deleted collection.
    assert c.ok("PUT", "/collections/snap/snapshots/recover", {"location": second["name"]}) is True
    assert state(c, "snap") == changed
    assert c.ok("DELETE", "/collections/snap") is True
    status, _, _ = c.get("/collections/snap")
    assert status == 404
    assert sorted(x["name"] for x in c.ok("GET", "/collections/snap/snapshots")) == sorted(listed)
    assert c.ok("PUT", "/collections/snap/snapshots/recover", {"location": snap["name"]}) is True
    assert state(c, "snap") == at_snapshot
    info = c.ok("GET", "/collections/snap")
    assert info["config"]["params"]["vectors"] == {"size": d, "distance": "Dot"}
    # Durable: a restart (after a crash, even) finds the recovered collection.
    s.kill()
    s.start()
    c = s.client()
    assert state(c, "snap") == at_snapshot
    hits = c.ok("POST", "/collections/snap/points/search", {"vector": X[20].tolist(), "limit": n})
    assert sorted(h["id"] for h in hits) == sorted(int(i) for i in ids)


def test_snapshot_is_one_point_in_time(serve: Any, rng: np.random.Generator) -> None:
    # One writer appends batches in order while snapshots are taken: each snapshot must hold
    # batches 0..b whole, for a b that never decreases from one snapshot to the next.
    s = serve()
    c = s.client()
    create_collection(c, "pit", 4, "Euclid")
    size = 5
    vectors = rng.standard_normal((4000 * size, 4)).astype(np.float32)
    stop = threading.Event()
    written = [0]
    errors: list[str] = []

    def writer() -> None:
        cc = Client(s.port)
        try:
            for b in range(4000):  # bounded
                if stop.is_set():
                    return
                pts = [{"id": b * size + j, "vector": vectors[b * size + j].tolist(), "payload": {"b": b}}
                       for j in range(size)]
                status, _, body = cc.put("/collections/pit/points?wait=true", {"points": pts})
                if status != 200:
                    errors.append(f"{status} {body}")
                    return
                written[0] = b + 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(repr(e))
        finally:
            cc.close()

    t = threading.Thread(target=writer)
    t.start()
    names = []
    try:
        for _ in range(8):
            time.sleep(float(rng.uniform(0.02, 0.15)))
            acked_before = written[0]
            names.append((c.ok("POST", "/collections/pit/snapshots")["name"], acked_before))
    finally:
        stop.set()
        t.join(timeout=60)
    assert not errors, errors[:3]
    last = -1
    for name, acked_before in names:
        assert c.ok("PUT", "/collections/pit/snapshots/recover", {"location": name}) is True
        pts = scroll_all(c, "pit")
        batches = sorted({p["payload"]["b"] for p in pts.values()})
        count = len(batches)
        assert batches == list(range(count)), f"{name}: not a prefix of the writes"
        assert len(pts) == count * size, f"{name}: a batch is in part"
        for i, p in pts.items():
            assert np.array_equal(np.array(p["vector"], dtype=np.float32), vectors[i])
        assert count >= acked_before, f"{name}: misses batches acknowledged before it was requested"
        assert count >= last
        last = count
    print(f"{len(names)} snapshots during {written[0]} writes: batches per snapshot {[n for _, n in names]}")


def test_pipelined_requests_are_answered_in_order(serve: Any) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "pipe", 2, "Euclid")
    upsert(c, "pipe", [1, 2], np.array([[0, 0], [5, 5]], dtype=np.float32))
    body = b'{"vector": [4.5, 4.5], "limit": 1}'
    search = (b"POST /collections/pipe/points/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    requests = (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + search +
                b"GET /collections/nope HTTP/1.1\r\nHost: x\r\n\r\n" +
                b"GET /collections/pipe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    reply = raw_exchange(s.port, requests, timeout=10)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3})", reply)
    assert statuses == [b"200", b"200", b"404", b"200"], reply[:500]
    assert reply.index(b'"ok"') < reply.index(b'"id":2') < reply.index(b"nope") < reply.index(b"points_count")


# ---------------------------------------------------------------- health and metrics


def test_healthz_and_metrics(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    status, _, body = c.get("/healthz")
    assert status == 200 and body["result"] == "ok"
    create_collection(c, "m1", 4, "Euclid")
    create_collection(c, "m2", 4, "Cosine")
    upserts = 0
    for lo in range(0, 100, 20):
        upsert(c, "m1", range(lo, lo + 20), rng.standard_normal((20, 4)).astype(np.float32))
        upserts += 1
    upsert(c, "m2", [1, 2, 3], rng.standard_normal((3, 4)).astype(np.float32))
    c.ok("POST", "/collections/m1/points/delete", {"points": [0, 1, 2, 500]})
    for _ in range(7):
        c.ok("POST", "/collections/m1/points/search", {"vector": [0.1, 0.2, 0.3, 0.4], "limit": 3})
    c.ok("POST", "/collections/m1/points/search/batch",
         {"searches": [{"vector": [0.1, 0.2, 0.3, 0.4]}] * 5})
    status, _, _ = c.get("/collections/none")
    assert status == 404
    status, _, _ = c.get("/no/such/route")
    assert status == 404

    status, headers, text = c.get("/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert isinstance(text, str)
    assert metric(text, "simkit_http_requests_total", route="PUT /collections/{name}/points", code="200") == upserts + 1
    assert metric(text, "simkit_http_requests_total", route="POST /collections/{name}/points/search", code="200") == 7
    assert metric(text, "simkit_http_requests_total", route="POST /collections/{name}/points/search/batch",
                  code="200") == 1
    assert metric(text, "simkit_http_requests_total", route="PUT /collections/{name}", code="200") == 2
    assert metric(text, "simkit_http_requests_total", route="GET /collections/{name}", code="404") == 1
    assert metric(text, "simkit_http_requests_total", route="/healthz", code="200") == 1
    assert metric(text, "simkit_http_requests_total", route="not found", code="404") == 1
    # Route labels are templates: no concrete collection name or path appears in them.
    for line in text.splitlines():
        if line.startswith("simkit_http_request"):
            assert "m1" not in line and "/no/such" not in line, line
    assert metric(text, "simkit_collection_points", collection="m1") == 97
    assert metric(text, "simkit_collection_points", collection="m2") == 3
    assert metric(text, "simkit_batch_size_sum") == 12
    assert 1 <= metric(text, "simkit_batch_size_count") <= 8
    assert metric(text, "simkit_batch_size_bucket", le="+Inf") == metric(text, "simkit_batch_size_count")
    assert metric(text, "simkit_batch_queue_wait_seconds_count") == 12
    assert metric(text, "simkit_batch_queue_depth", collection="m1") == 0
    assert metric(text, "simkit_rejected_total", reason="queue_full") == 0
    assert metric(text, "simkit_http_request_duration_seconds_count",
                  route="POST /collections/{name}/points/search") == 7
    # A deleted collection's gauges go away.
    c.ok("DELETE", "/collections/m2")
    text = s.metrics()
    assert 'collection="m2"' not in text
    assert metric(text, "simkit_collection_points", collection="m1") == 97


def test_hnsw_index_serves_and_hnsw_ef_widens_the_search(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    n, d, k = 1500, 16, 10
    create_collection(c, "g", d, "Cosine", index="hnsw,m=8,ef_construction=48,ef=16")
    create_collection(c, "f", d, "Cosine")
    X = rng.standard_normal((n, d)).astype(np.float32)
    ids = random_ids(rng, n)
    upsert(c, "g", ids, X)
    upsert(c, "f", ids[:50], X[:50])
    live = Live(ids, X)
    c.ok("PUT", "/collections/g/vector_index", {}, expect=202)
    info = wait_build(c, "g")
    assert info["index"]["build"] == "ready" and info["index"]["type"] == "hnsw", info
    Q = rng.standard_normal((12, d)).astype(np.float32)
    # Keeping as many candidates as points reaches every point of this small graph: exact.
    for q in Q:
        hits = c.ok("POST", "/collections/g/points/search",
                    {"vector": q.tolist(), "limit": k, "params": {"hnsw_ef": n}})
        want, score_of = live.reference(q, k, "Cosine")
        compare_ranking([h["id"] for h in hits], want, score_of)
    # The knob is refused where the index does not read it, and checked for type and range.
    q = Q[0].tolist()
    for path, params, words in (("f", {"hnsw_ef": 64}, "ef applies to hnsw; this index is flat"),
                                ("g", {"hnsw_ef": 0}, "hnsw_ef"), ("g", {"hnsw_ef": "64"}, "hnsw_ef"),
                                ("g", {"exact": True, "hnsw_ef": 8}, "exact"), ("g", [64], "params")):
        status, _, body = c.post(f"/collections/{path}/points/search", {"vector": q, "limit": k, "params": params})
        assert status == 400 and words in body["status"]["error"], (params, body)


def test_payload_operations_and_selectors(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "pl", 3, "Dot")
    base = {"a": 1, "b": {"c": 2, "d": [3, 4]}, "e": "x"}
    c.ok("PUT", "/collections/pl/points", {"points": [{"id": i, "vector": [1.0, float(i), 0.0], "payload": base} for i in range(4)]})
    # Reads select keys: a list, include (dotted paths reach into objects), exclude.
    get = lambda body: {p["id"]: p["payload"] for p in c.ok("POST", "/collections/pl/points", {"ids": [0]} | body)}[0]
    assert get({"with_payload": ["a", "b.c"]}) == {"a": 1, "b": {"c": 2}}
    assert get({"with_payload": {"include": ["b.d", "zz"]}}) == {"b": {"d": [3, 4]}}
    assert get({"with_payload": {"exclude": ["b.c", "e"]}}) == {"a": 1, "b": {"d": [3, 4]}}
    assert "payload" not in c.ok("POST", "/collections/pl/points", {"ids": [0], "with_payload": False})[0]
    hit = c.ok("POST", "/collections/pl/points/search", {"vector": [0.0, 1.0, 0.0], "limit": 1,
                                                          "with_payload": {"exclude": ["b"]}, "with_vector": True})
    assert hit[0]["id"] == 3 and hit[0]["payload"] == {"a": 1, "e": "x"} and hit[0]["vector"] == [1.0, 3.0, 0.0]
    # set merges top-level keys, overwrite replaces, delete removes (dotted) keys, clear empties.
    op1 = c.ok("POST", "/collections/pl/points/payload", {"payload": {"a": 9, "f": [1]}, "points": [0, 1, 77]})
    assert op1["status"] == "completed"
    c.ok("PUT", "/collections/pl/points/payload", {"payload": {"only": True}, "points": [2]})
    c.ok("POST", "/collections/pl/points/payload/delete", {"keys": ["b.d", "e"], "filter": {"must": [{"key": "a", "match": {"value": 9}}]}})
    op2 = c.ok("POST", "/collections/pl/points/payload/clear", {"points": [3]})
    assert op2["operation_id"] > op1["operation_id"]
    want = {0: {"a": 9, "b": {"c": 2}, "f": [1]}, 1: {"a": 9, "b": {"c": 2}, "f": [1]}, 2: {"only": True}, 3: {}}
    got = {p["id"]: p["payload"] for p in c.ok("POST", "/collections/pl/points/scroll", {"limit": 10})["points"]}
    assert got == want
    # The changes are what searches filter on, and what a restart replays.
    flt = {"must": [{"key": "a", "match": {"value": 9}}]}
    assert c.ok("POST", "/collections/pl/points/count", {"filter": flt})["count"] == 2
    assert c.ok("POST", "/collections/pl/points/count", {})["count"] == 4
    hits = c.ok("POST", "/collections/pl/points/search", {"vector": [0.0, 1.0, 0.0], "limit": 4, "filter": flt})
    assert [h["id"] for h in hits] == [1, 0]
    s.restart()
    c = s.client()
    got = {p["id"]: p["payload"] for p in c.ok("POST", "/collections/pl/points/scroll", {"limit": 10})["points"]}
    assert got == want
    assert c.ok("POST", "/collections/pl/points/count", {"filter": flt})["count"] == 2


def test_aliases_name_their_collection_on_every_route(serve: Any, rng: np.random.Generator, tmp_path: pathlib.Path) -> None:
    import sqlite3

    s = serve("--max-queue", "4")
    c = s.client()
    create_collection(c, "real", 3, "Dot")
    upsert(c, "real", [1, 2, 3], np.eye(3, dtype=np.float32), [{"k": i} for i in range(3)])
    c.ok("POST", "/collections/aliases", {"actions": [{"create_alias": {"collection_name": "real", "alias_name": "al"}}]})
    assert c.ok("GET", "/collections/al/exists") == {"exists": True}
    status, _, body = c.put("/collections/al", {"vectors": {"size": 3, "distance": "Dot"}})
    assert status == 409 and "already exists" in body["status"]["error"], body
    snap = c.ok("POST", "/collections/al/snapshots")["name"]
    assert [x["name"] for x in c.ok("GET", "/collections/al/snapshots")] == [snap]
    status, _, blob = c.request("GET", f"/collections/al/snapshots/{snap}")
    assert status == 200
    # A snapshot whose index description this server cannot build is refused; nothing changes.
    bad = s.data_dir / "snapshots" / "real" / "bad.snapshot"
    bad.write_bytes((s.data_dir / "snapshots" / "real" / snap).read_bytes())
    with sqlite3.connect(bad) as db:
        db.execute("UPDATE meta SET value = 'ivf_flat,nlist=banana' WHERE key = 'index'")
    status, _, body = c.put("/collections/al/snapshots/recover", {"location": "bad.snapshot"})
    assert status == 400 and "snapshot refused" in body["status"]["error"], body
    assert c.ok("POST", "/collections/real/points/count", {})["count"] == 3
    # Renaming an alias onto a collection's name is refused; recovering through the alias
    # recovers the collection, not a new one named like the alias.
    status, _, body = c.post("/collections/aliases", {"actions": [
        {"rename_alias": {"old_alias_name": "al", "new_alias_name": "real"}}]})
    assert status == 400 and "a collection's name" in body["status"]["error"], body
    c.ok("POST", "/collections/al/points/delete", {"points": [1]})
    assert c.ok("PUT", "/collections/al/snapshots/recover", {"location": snap}) is True
    assert c.ok("POST", "/collections/real/points/count", {})["count"] == 3
    assert [x["name"] for x in c.ok("GET", "/collections")["collections"]] == ["real"]
    assert c.ok("DELETE", f"/collections/al/snapshots/{snap}") is True
    # A batch of more searches than the queue holds is a 400, not a 429 to retry forever.
    status, headers, body = c.post("/collections/al/points/search/batch", {"searches": [{"vector": [1, 0, 0]}] * 5})
    assert status == 400 and "--max-queue" in body["status"]["error"], body
    status, _, body = c.post("/collections/al/points/query", {"query": {"nearest": [1, 0, 0], "mmr": {}}})
    assert status == 400 and "mmr" in body["status"]["error"], body
    assert [h["id"] for h in c.ok("POST", "/collections/al/points/query", {"query": [0, 1, 0], "filter": {}})["points"]][0] == 2
    # Deleting through the alias deletes the collection and drops the alias; a damaged alias
    # table does not stop a restart.
    c.ok("POST", "/collections/aliases", {"actions": [{"create_alias": {"collection_name": "real", "alias_name": "al2"}}]})
    assert c.ok("DELETE", "/collections/al") is True
    assert c.ok("GET", "/aliases") == {"aliases": []}
    s.stop()
    (s.data_dir / "aliases.json").write_text("{not json")
    s.start()
    assert "aliases.json is damaged" in s.stderr()
    assert s.client().ok("GET", "/aliases") == {"aliases": []}


def test_a_vector_index_build_racing_a_delete_never_kills_the_server(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    X = rng.standard_normal((3000, 16)).astype(np.float32)
    for round_ in range(16):
        create_collection(c, "race", 16, "Euclid")
        upsert(c, "race", list(range(3000)), X)
        results: list[int] = []

        def build() -> None:
            bc = s.client()
            status, _, _ = bc.put("/collections/race/vector_index", {"index": "hnsw,m=8,ef_construction=32"})
            results.append(status)

        t = threading.Thread(target=build)
        t.start()
        if round_ % 2:
            time.sleep(0.005 * (round_ % 8))
        assert c.ok("DELETE", "/collections/race") is True
        t.join(timeout=60)
        assert results and results[0] in (202, 404, 503), results
        assert s.running()
    assert c.get("/healthz")[0] == 200
