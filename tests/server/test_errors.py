"""Bad input gets a 4xx whose {"status": {"error": ...}} names the problem, and changes nothing:
after every refused request the collections, their points (vectors and payloads) and the data
directory's files are what they were. Also: authentication, body limits, raw garbage on the socket."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sqlite3
from typing import Any

import numpy as np
import pytest
from conftest import Client, create_collection, metric, raw_exchange, scroll_all, upsert

D = 4
GOOD = [0.5, -1.0, 2.0, 0.25]


def tree(root: pathlib.Path) -> list[str]:
    """Every path under root, except SQLite's -wal/-shm companions (they come and go with checkpoints)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.name.endswith(("-wal", "-shm")))


class Fixture:
    """A server with collection "e" (20 points with payloads) and a way to check nothing changed."""

    def __init__(self, server: Any, rng: np.random.Generator) -> None:
        self.s = server
        self.c: Client = server.client()
        create_collection(self.c, "e", D, "Euclid")
        self.X = rng.standard_normal((20, D)).astype(np.float32)
        upsert(self.c, "e", range(100, 120), self.X, [{"k": i} for i in range(20)])
        self.snapshot_state()

    def state(self) -> Any:
        c = self.s.client()
        try:
            names = sorted(x["name"] for x in c.ok("GET", "/collections")["collections"])
            info = {n: c.ok("GET", f"/collections/{n}") for n in names}
            for i in info.values():
                i.pop("queue_depth", None)
            points = {n: scroll_all(c, n) for n in names}
        finally:
            c.close()
        return names, info, points, tree(self.s.data_dir), tree(self.s.data_dir.parent)

    def snapshot_state(self) -> None:
        self.before = self.state()

    def unchanged(self, what: str) -> None:
        after = self.state()
        assert after == self.before, f"{what} changed the server's state"

    def expect(self, method: str, path: str, body: Any = None, status: int = 400, words: tuple[str, ...] = (),
               raw: bytes | None = None, headers: dict[str, str] | None = None, client: Client | None = None) -> str:
        c = client or self.c
        got, _, b = c.request(method, path, body, raw=raw, headers=headers)
        what = f"{method} {path} {raw if raw is not None else json.dumps(body)[:200]}"
        assert got == status, f"{what}: expected {status}, got {got} {b}"
        assert isinstance(b, dict) and isinstance(b.get("status"), dict), f"{what}: {b}"
        message = b["status"]["error"]
        assert isinstance(message, str) and message, b
        for w in words:
            assert w.lower() in message.lower(), f"{what}: error {message!r} does not mention {w!r}"
        self.unchanged(what)
        return message


@pytest.fixture
def fx(serve: Any, rng: np.random.Generator) -> Fixture:
    return Fixture(serve(), rng)


def point(id_: Any = 1, vector: Any = None, **extra: Any) -> dict[str, Any]:
    p = {"id": id_, "vector": GOOD if vector is None else vector}
    p.update(extra)
    return p


# ---------------------------------------------------------------- bodies


def test_malformed_and_non_object_bodies(fx: Fixture) -> None:
    up = "/collections/e/points?wait=true"
    fx.expect("PUT", up, raw=b'{"points": [', words=("malformed JSON",))
    fx.expect("PUT", up, raw=b'{"points": []}}', words=("malformed JSON",))
    fx.expect("PUT", up, raw=b"\xff\xfe{}", words=("malformed JSON",))
    fx.expect("PUT", up, raw=b'{"points": [{"id": 1, "vector": [NaN, 1, 2, 3]}]}', words=("malformed JSON",))
    fx.expect("PUT", up, raw=b'{"points": [{"id": 1, "vector": [1e400, 1, 2, 3]}]}', words=("JSON",))
    fx.expect("PUT", up, raw=b'{"points": [{"id": 1, "vector": [1, 2, 3, 4], "payload": {"s": "\xc3\x28"}}]}',
              words=("malformed JSON",))
    fx.expect("PUT", up, raw=b"", words=("JSON body",))
    for raw, kind in [(b"[1, 2]", "array"), (b'"points"', "string"), (b"null", "null"), (b"42", "number")]:
        fx.expect("PUT", up, raw=raw, words=("must be a JSON object", kind))
        fx.expect("POST", "/collections/e/points/search", raw=raw, words=("must be a JSON object",))
        fx.expect("PUT", "/collections/new", raw=raw, words=("must be a JSON object",))


def test_unknown_fields(fx: Fixture) -> None:
    fx.expect("PUT", "/collections/e/points", {"points": [point(7)], "pointz": 1}, words=("unknown field 'pointz'",))
    fx.expect("PUT", "/collections/e/points", {"points": [point(7), point(8, paylod={})]},
              words=("points[1]", "unknown field 'paylod'"))
    fx.expect("POST", "/collections/e/points/search", {"vector": GOOD, "limt": 3}, words=("unknown field 'limt'",))
    fx.expect("POST", "/collections/e/points/search/batch",
              {"searches": [{"vector": GOOD}, {"vector": GOOD, "top": 3}]},
              words=("searches[1]", "unknown field 'top'"))
    fx.expect("POST", "/collections/e/points/search/batch", {"searches": [{"vector": GOOD}], "x": 1},
              words=("unknown field 'x'",))
    fx.expect("PUT", "/collections/new", {"vectors": {"size": 4, "distance": "Cosine", "on_disk": True}},
              words=("unknown field 'on_disk'",))
    fx.expect("PUT", "/collections/new", {"vectors": {"size": 4, "distance": "Cosine"}, "shards": 2},
              words=("unknown field 'shards'",))
    fx.expect("POST", "/collections/e/points", {"ids": [100], "with_vectors": True}, words=("unknown field 'with_vectors'",))
    fx.expect("POST", "/collections/e/points/delete", {"points": [100], "filter": {}}, words=("one of points", "or filter"))
    fx.expect("POST", "/collections/e/points/scroll", {"limit": 3, "filtr": {}}, words=("unknown field 'filtr'",))
    fx.expect("POST", "/collections/e/points/query", {"query": GOOD, "prefetch": [{}]}, words=("prefetch", "not supported"))
    fx.expect("POST", "/collections/e/points/query", {"query": {"discover": {}}}, words=("discover", "not supported"))
    fx.expect("POST", "/collections/e/points/query", {"query": GOOD, "using": "image"}, words=("named vectors",))
    fx.expect("POST", "/collections/e/points/count", {"filter": {}, "exact": True, "x": 1}, words=("unknown field 'x'",))
    fx.expect("PUT", "/collections/e/vector_index", {"index": "flat", "nlist": 3}, words=("unknown field 'nlist'",))
    if not fx.s.launcher:  # a server sharded over MPI ranks refuses snapshots whatever the body (501)
        fx.expect("PUT", "/collections/e/snapshots/recover", {"location": "x.snapshot", "checksum": "0"},
                  words=("unknown field 'checksum'",))


def test_points_refused(fx: Fixture) -> None:
    up = "/collections/e/points?wait=true"
    fx.expect("PUT", up, {"points": []}, words=("non-empty array",))
    fx.expect("PUT", up, {"points": {"id": 1}}, words=("non-empty array",))
    fx.expect("PUT", up, {}, words=("points",))
    fx.expect("PUT", up, {"points": [point(7), 3]}, words=("points[1]", "must be an object"))
    fx.expect("PUT", up, {"points": [{"vector": GOOD}]}, words=("id is required",))
    fx.expect("PUT", up, {"points": [{"id": 7}]}, words=("vector is required",))
    # Wrong dimension, in any point of the request: nothing of it is written.
    fx.expect("PUT", up, {"points": [point(7), point(8, [1.0, 2.0, 3.0])]}, words=("points[1].vector", "has 3 values", "4"))
    fx.expect("PUT", up, {"points": [point(7, GOOD + [1.0])]}, words=("has 5 values",))
    fx.expect("PUT", up, {"points": [point(7, [])]}, words=("has 0 values",))
    fx.expect("PUT", up, {"points": [point(7, "1,2,3,4")]}, words=("must be an array",))
    for bad, kind in [("1", "string"), (None, "null"), (True, "boolean"), ([1], "array"), ({"x": 1}, "object")]:
        fx.expect("PUT", up, {"points": [point(7, [1.0, bad, 2.0, 3.0])]}, words=("vector[1]", "is not a number", kind))
    # Finite in JSON, not in float32.
    for huge in [1e39, -1e39, 3.5e38]:
        fx.expect("PUT", up, {"points": [point(7, [0.0, 0.0, huge, 0.0])]}, words=("vector[2]", "finite float32"))
    # Ids: non-negative integers below 2^62 or UUIDs, each once per request.
    fx.expect("PUT", up, {"points": [point(-1)]}, words=("id", ">= 0"))
    fx.expect("PUT", up, {"points": [point("abc")]}, words=("unsigned integer", "abc"))
    fx.expect("PUT", up, {"points": [point("550e8400-e29b-41d4-a716-44665544000g")]}, words=("nor a UUID",))
    fx.expect("PUT", up, {"points": [point("550e8400e29b-41d4-a716-4466554400001")]}, words=("nor a UUID",))
    fx.expect("PUT", up, {"points": [point(1.5)]}, words=("unsigned integer",))
    fx.expect("PUT", up, {"points": [point(None)]}, words=("unsigned integer",))
    fx.expect("PUT", up, raw=b'{"points": [{"id": 9223372036854775808, "vector": [1, 2, 3, 4]}]}', words=("too large",))
    fx.expect("PUT", up, {"points": [point(2**62)]}, words=("too large", "2^62"))
    fx.expect("PUT", up, raw=b'{"points": [{"id": 18446744073709551616, "vector": [1, 2, 3, 4]}]}',
              words=("unsigned integer",))
    fx.expect("PUT", up, {"points": [point(7), point(8), point(7)]}, words=("points[2]", "appears twice"))
    fx.expect("PUT", up, {"points": [point(100), point(100, [9.0, 9.0, 9.0, 9.0])]}, words=("appears twice",))
    u = "550e8400-e29b-41d4-a716-446655440000"
    fx.expect("PUT", up, {"points": [point(u), point(u.upper().replace("-", ""))]}, words=("points[1]", "appears twice"))
    fx.expect("PUT", up, {"points": [point(7, payload=[1, 2])]}, words=("payload must be a JSON object",))
    fx.expect("PUT", up, {"points": [point(7, payload="x")]}, words=("payload must be a JSON object",))
    fx.expect("PUT", "/collections/e/points?wait=maybe", {"points": [point(7)]}, words=("wait must be true or false",))
    # Deletes and reads.
    fx.expect("POST", "/collections/e/points/delete", {"points": [100, -3]}, words=("points[1]", ">= 0"))
    fx.expect("POST", "/collections/e/points/delete", {"points": 100}, words=("must be an array",))
    fx.expect("POST", "/collections/e/points/delete", {}, words=("one of points",))
    fx.expect("POST", "/collections/e/points/delete", {"filter": None}, words=("filter must be a filter object",))
    # The Query API.
    q = "/collections/e/points/query"
    fx.expect("POST", q, {}, words=("query is required",))
    fx.expect("POST", q, {"query": GOOD[:3]}, words=("query", "has 3 values"))
    fx.expect("POST", q, {"query": 1.5}, words=("query", "must be a vector, a point id"))
    fx.expect("POST", q, {"query": {"recommend": {"positive": []}}}, words=("positive", "at least one"))
    fx.expect("POST", q, {"query": {"recommend": {"positive": [100], "strategy": "best_score"}}},
              words=("strategy", "not supported"))
    fx.expect("POST", q, {"query": 123456789}, status=404, words=("query", "123456789", "is not in collection"))
    fx.expect("POST", q, {"query": GOOD, "score_threshold": "x"}, words=("score_threshold",))
    fx.expect("POST", q, {"query": GOOD, "params": {"exact": "yes"}}, words=("params.exact", "true or false"))
    fx.expect("POST", q + "/batch", {"searches": [{"query": GOOD}, {"query": GOOD, "limit": 0}]},
              words=("searches[1].limit",))
    # Payload operations.
    fx.expect("POST", "/collections/e/points/payload", {"points": [100]}, words=("payload must be a JSON object",))
    fx.expect("POST", "/collections/e/points/payload", {"payload": {"a": 1}}, words=("one of points",))
    fx.expect("POST", "/collections/e/points/payload", {"payload": {"a": 1}, "points": [100], "key": "x.y"},
              words=("key", "not supported"))
    fx.expect("POST", "/collections/e/points/payload/delete", {"points": [100]}, words=("keys is required",))
    fx.expect("POST", "/collections/e/points/payload/delete", {"points": [100], "keys": "a"}, words=("keys",))
    fx.expect("POST", "/collections/e/points/payload/clear", {"points": [100], "keys": ["a"]}, words=("unknown field 'keys'",))
    # Aliases.
    al = "/collections/aliases"
    fx.expect("POST", al, {"actions": [{"create_alias": {"collection_name": "e", "alias": "x"}}]},
              words=("actions[0].create_alias", "unknown field 'alias'"))
    fx.expect("POST", al, {"actions": [{"create_alias": {"collection_name": "nope", "alias_name": "x"}}]}, status=404,
              words=("nope",))
    fx.expect("POST", al, {"actions": [{"drop_alias": {"alias_name": "x"}}]}, words=("unknown action",))
    fx.expect("POST", al, {"actions": [{"create_alias": {"collection_name": "e", "alias_name": "ok"}},
                                       {"delete_alias": {"alias_name": "never"}}]}, status=404, words=("never",))
    assert fx.c.ok("GET", "/aliases") == {"aliases": []}  # all or none: the first action was not kept
    fx.expect("POST", "/collections/e/points", {"ids": ["100"]}, words=("unsigned integer",))
    fx.expect("POST", "/collections/e/points", {"ids": [100], "with_payload": "yes"}, words=("with_payload", "a list of keys"))
    fx.expect("POST", "/collections/e/points/scroll", {"offset": -1}, words=("offset", ">= 0"))
    fx.expect("POST", "/collections/e/points/scroll", {"limit": 0}, words=("limit", "between 1 and 10000"))
    for bad in ["abc", "-1", "1.5", "1e3", "99999999999999999999"]:
        fx.expect("GET", f"/collections/e/points/{bad}", words=("neither an unsigned integer nor a UUID",))


def test_point_id_beyond_int64_in_the_path(fx: Fixture) -> None:
    # 19 digits, above 2^62 - 1 (the largest integer id): refused as an id, not an internal error.
    message = fx.expect("GET", "/collections/e/points/9999999999999999999", status=400, words=("9999999999999999999",))
    assert "internal" not in message


def test_search_parameters_refused(fx: Fixture) -> None:
    search = "/collections/e/points/search"
    for limit in [0, 10001, -1]:
        fx.expect("POST", search, {"vector": GOOD, "limit": limit}, words=("limit", "between 1 and 10000"))
    for limit in [1.5, "10", True, [3]]:
        fx.expect("POST", search, {"vector": GOOD, "limit": limit}, words=("limit", "must be an integer"))
    fx.expect("POST", search, raw=b'{"vector": [1, 2, 3, 4], "limit": 18446744073709551616}', words=("limit",))
    fx.expect("POST", search, {"vector": GOOD, "offset": -2}, words=("offset",))
    fx.expect("POST", search, {"vector": GOOD, "offset": 10001}, words=("offset",))
    fx.expect("POST", search, {"limit": 3}, words=("vector is required",))
    fx.expect("POST", search, {"vector": GOOD[:3]}, words=("has 3 values",))
    fx.expect("POST", search, {"vector": [0.0, 1e39, 0.0, 0.0]}, words=("finite float32",))
    fx.expect("POST", search, {"vector": GOOD, "with_vector": 1}, words=("with_vector", "true or false"))
    fx.expect("POST", search, {"vector": GOOD, "with_payload": 1}, words=("with_payload", "true, false, a list of keys"))
    fx.expect("POST", search, {"vector": GOOD, "with_payload": {"only": ["a"]}}, words=("with_payload", "include"))
    fx.expect("POST", search, {"vector": GOOD, "with_payload": [""]}, words=("with_payload[0]", "non-empty string"))
    fx.expect("POST", search, {"vector": GOOD, "score_threshold": "0.5"}, words=("score_threshold", "must be a number"))
    batch = "/collections/e/points/search/batch"
    fx.expect("POST", batch, {"searches": []}, words=("non-empty array",))
    fx.expect("POST", batch, {"searches": {"vector": GOOD}}, words=("non-empty array",))
    fx.expect("POST", batch, {"searches": [{"vector": GOOD}, {"vector": GOOD, "limit": 0}]},
              words=("searches[1].limit",))
    fx.expect("POST", batch, {"searches": [{"vector": GOOD}, [1]]}, words=("searches[1]", "must be an object"))
    # ?timeout= must be a positive number of seconds.
    for bad in ["abc", "0", "-1", "nan", "inf", "1e999", "2s", "1,5"]:
        fx.expect("POST", f"{search}?timeout={bad}", {"vector": GOOD}, words=("timeout", bad))
        fx.expect("POST", f"{batch}?timeout={bad}", {"searches": [{"vector": GOOD}]}, words=("timeout",))
    # A good one still works (the refusals above left the connection usable).
    hits = fx.c.ok("POST", f"{search}?timeout=5", {"vector": fx.X[3].tolist(), "limit": 1})
    assert hits[0]["id"] == 103


def test_filters_refused(fx: Fixture) -> None:
    # Each malformed filter: 400 naming the field (its place in the filter) and what is wrong.
    search = "/collections/e/points/search"
    kv = {"key": "k", "match": {"value": 1}}
    cases: list[tuple[Any, tuple[str, ...]]] = [
        ([], ("filter must be an object",)),
        ("k=1", ("filter must be an object",)),
        ({"shoud": []}, ("unknown clause 'shoud'", "must, should, must_not or min_should")),
        ({"must": 3}, ("filter.must must be an array",)),
        ({"must": [1]}, ("filter.must[0] must be an object",)),
        ({"must": [kv, {"key": "k"}]}, ("filter.must[1]", "needs match or range")),
        ({"must": [{"match": {"value": 1}}]}, ("filter.must[0].key is required",)),
        ({"must": [{"key": "", "match": {"value": 1}}]}, ("filter.must[0].key must be a non-empty string",)),
        ({"must": [{"key": 3, "match": {"value": 1}}]}, ("key must be a non-empty string",)),
        ({"must": [{"key": "a..b", "match": {"value": 1}}]}, ("filter.must[0].key", "'a..b'", "not a payload path")),
        ({"must": [{"key": "a[x]", "match": {"value": 1}}]}, ("'a[x]'", "not a payload path")),
        ({"must": [{"key": "k", "mach": {"value": 1}}]}, ("filter.must[0]", "unknown field 'mach'")),
        ({"must": [{"key": "k", "match": {"value": 1}, "range": {"gt": 1}}]}, ("filter.must[0]", "not both")),
        # range: numbers only; datetimes, strings and unknown bounds refused
        ({"must": [kv, {"key": "k", "range": {"gt": "1"}}]}, ("filter.must[1].range.gt must be a number",)),
        ({"must": [{"key": "k", "range": {"gte": "2026-01-01T00:00:00Z"}}]}, ("range.gte", "datetime")),
        ({"must": [{"key": "k", "range": {"gte": [1]}}]}, ("range.gte must be a number", "array")),
        ({"must": [{"key": "k", "range": {"above": 1}}]}, ("filter.must[0].range", "unknown field 'above'")),
        ({"must": [{"key": "k", "range": 5}]}, ("filter.must[0].range must be an object",)),
        # match: one kind, the right types
        ({"must": [{"key": "k", "match": {}}]}, ("filter.must[0].match must hold one of value, any, except or text",)),
        ({"must": [{"key": "k", "match": 1}]}, ("match must be an object",)),
        ({"should": [kv, {"key": "k", "match": {"value": 1, "any": [1, 2]}}]},
         ("filter.should[1].match", "not both 'any' and 'value'")),
        ({"must": [{"key": "k", "match": {"equals": 1}}]}, ("filter.must[0].match", "unknown field 'equals'")),
        ({"must": [{"key": "k", "match": {"phrase": "a b"}}]}, ("filter.must[0].match.phrase", "not supported")),
        ({"must": [{"key": "k", "match": {"value": 1.5}}]}, ("string, an integer or a bool", "number")),
        ({"must": [{"key": "k", "match": {"value": None}}]}, ("string, an integer or a bool", "null")),
        ({"must": [{"key": "k", "match": {"value": [1]}}]}, ("string, an integer or a bool", "array")),
        ({"must": [{"key": "k", "match": {"value": {"a": 1}}}]}, ("string, an integer or a bool", "object")),
        ({"must": [{"key": "k", "match": {"value": 2**63}}]}, ("match.value is out of range", "int64")),
        ({"must": [{"key": "k", "match": {"any": [1, "a"]}}]}, ("filter.must[0].match.any[1] must be an integer",)),
        ({"must": [{"key": "k", "match": {"except": "a"}}]}, ("filter.must[0].match.except must be an array",)),
        ({"must": [{"key": "k", "match": {"any": [1.5]}}]}, ("match.any[0] must be a string",)),
        ({"must": [{"key": "k", "match": {"text": 3}}]}, ("filter.must[0].match.text must be a string",)),
        # unsupported conditions: named as such
        ({"must": [{"key": "k", "geo_radius": {"center": {"lon": 0, "lat": 0}, "radius": 1}}]},
         ("filter.must[0].geo_radius", "not supported")),
        ({"must": [{"key": "k", "values_count": {"gt": 1}}]}, ("filter.must[0].values_count", "not supported")),
        ({"must": [{"has_vector": "v"}]}, ("filter.must[0].has_vector", "not supported")),
        ({"must": [{"unknown_op": {"key": "k"}}]}, ("filter.must[0]", "unknown condition 'unknown_op'")),
        # is_empty, is_null, has_id, nested
        ({"must": [{"is_empty": "k"}]}, ("filter.must[0].is_empty must be an object",)),
        ({"must": [{"is_null": {"key": "k", "x": 1}}]}, ("filter.must[0].is_null", "unknown field 'x'")),
        ({"must": [{"is_empty": {"key": "k"}, "is_null": {"key": "k"}}]}, ("stands alone",)),
        ({"must": [{"has_id": 5}]}, ("filter.must[0].has_id must be an array",)),
        ({"must": [{"has_id": [1, -2]}]}, ("filter.must[0].has_id[1]", "point id")),
        ({"must": [{"has_id": [1.5]}]}, ("filter.must[0].has_id[0]", "point id")),
        ({"must": [{"nested": {"key": "a", "filter": {"must": [{"has_id": [1]}]}}}]},
         ("nested.filter.must[0].has_id", "not supported")),
        ({"must": [{"nested": {"key": "a"}}]}, ("filter.must[0].nested", "key and filter")),
        ({"must": [{"must_not": [{"should": [{"key": "k", "range": {"lt": True}}]}]}]},
         ("filter.must[0].must_not[0].should[0].range.lt must be a number",)),
        # min_should
        ({"min_should": {"conditions": [kv]}}, ("filter.min_should.min_count is required",)),
        ({"min_should": {"conditions": [kv], "min_count": -1}}, ("filter.min_should.min_count", "non-negative")),
        ({"min_should": {"min_count": 1}}, ("filter.min_should.conditions is required",)),
        ({"min_should": [kv]}, ("filter.min_should must be an object",)),
        ({"min_should": {"conditions": [kv], "min_count": 1, "max": 2}}, ("filter.min_should", "unknown field 'max'")),
    ]
    for f, words in cases:
        fx.expect("POST", search, {"vector": GOOD, "filter": f}, words=words)
    fx.expect("POST", "/collections/e/points/search/batch",
              {"searches": [{"vector": GOOD}, {"vector": GOOD, "filter": {"should": [{"key": "k", "range": {"gt": "x"}}]}}]},
              words=("searches[1].filter.should[0].range.gt must be a number",))
    # A good filter still answers; so do an empty one and a clause given as one condition.
    for f in [{"must": [kv | {"match": {"value": 4}}]}, {"must": {"key": "k", "match": {"value": 4}}},
              {"should": [{"has_id": [104]}], "must_not": None}]:
        hits = fx.c.ok("POST", search, {"vector": GOOD, "limit": 5, "filter": f})
        assert [h["id"] for h in hits] == [104], f


def test_payload_indexes_refused(fx: Fixture) -> None:
    index = "/collections/e/index"
    for body, words in [
        ({"field_name": "k", "field_schema": "keywrd"}, ("body.field_schema", "unknown type 'keywrd'")),
        ({"field_name": "k", "field_schema": "geo"}, ("body.field_schema", "'geo'", "not supported")),
        ({"field_name": "k", "field_schema": "text"}, ("'text'", "not supported")),
        ({"field_name": "k", "field_schema": {"type": "integer", "lookup": True, "fast": True}},
         ("body.field_schema", "unknown field 'fast'")),
        ({"field_name": "k", "field_schema": {"type": "integer", "range": "yes"}}, ("field_schema.range", "true or false")),
        ({"field_name": "k", "field_schema": {"lookup": True}}, ("body.field_schema.type is required",)),
        ({"field_name": "k", "field_schema": 3}, ("body.field_schema must be a type name",)),
        ({"field_name": "k"}, ("body.field_schema is required",)),
        ({"field_name": "", "field_schema": "keyword"}, ("body.field_name must be a non-empty",)),
        ({"field_name": "a..b", "field_schema": "keyword"}, ("body.field_name", "not a payload path")),
        ({"field_name": 3, "field_schema": "keyword"}, ("body.field_name is required",)),
        ({"field_schema": "keyword"}, ("body.field_name is required",)),
        ({"field_name": "k", "field_schema": "keyword", "wait": True}, ("unknown field 'wait'",)),
    ]:
        fx.expect("PUT", index, body, words=words)
    fx.expect("PUT", index + "?wait=maybe", {"field_name": "k", "field_schema": "integer"}, words=("wait",))
    fx.expect("PUT", "/collections/nope/index", {"field_name": "k", "field_schema": "integer"}, status=404,
              words=("nope",))
    fx.expect("DELETE", "/collections/e/index/a..b", words=("not a payload path",))
    fx.expect("DELETE", "/collections/e/index/a%ZZ", words=("malformed %-escape",))
    fx.expect("DELETE", "/collections/nope/index/k", status=404, words=("nope",))
    fx.expect("POST", index, {"field_name": "k", "field_schema": "integer"}, status=405, words=("not allowed",))


def test_collections_refused(fx: Fixture) -> None:
    good = {"vectors": {"size": 4, "distance": "Cosine"}}
    # Unknown collections: 404 on every route that names one.
    for method, path, body in [
        ("GET", "/collections/nope", None),
        ("DELETE", "/collections/nope", None),
        ("PUT", "/collections/nope/points", {"points": [point(1)]}),
        ("POST", "/collections/nope/points", {"ids": [1]}),
        ("POST", "/collections/nope/points/delete", {"points": [1]}),
        ("POST", "/collections/nope/points/scroll", {}),
        ("GET", "/collections/nope/points/1", None),
        ("POST", "/collections/nope/points/search", {"vector": GOOD}),
        ("POST", "/collections/nope/points/search/batch", {"searches": [{"vector": GOOD}]}),
        ("PUT", "/collections/nope/vector_index", {"index": "flat"}),
        ("POST", "/collections/nope/snapshots", None),
        ("GET", "/collections/nope/snapshots", None),
        ("PUT", "/collections/nope/snapshots/recover", {"location": "nope-1.snapshot"}),
    ]:
        fx.expect(method, path, body, status=404, words=("nope",))
    # Names that are not one plain folder inside the data directory.
    for name in ["a.b", "x" * 65, "..%2Fetc", "%2E%2E", "-lead", "_lead", "a%20b", "caf%C3%A9", "..", "."]:
        fx.expect("PUT", f"/collections/{name}", good, words=("invalid collection name",))
        fx.expect("PUT", f"/collections/{name}/points", {"points": [point(1)]}, words=("invalid collection name",))
        fx.expect("GET", f"/collections/{name}/snapshots", words=("invalid collection name",))
    fx.expect("GET", "/collections//points/1", words=("invalid collection name",))
    fx.expect("PUT", "/collections//points", {"points": [point(1)]}, words=("invalid collection name",))
    for path in ["/collections/../etc", "/collections/../../etc/passwd", "/collections/", "/collections/a/../../x"]:
        got, _, body = fx.c.put(path, good)
        assert got in (400, 404, 405), (path, got, body)
        fx.unchanged(f"PUT {path}")
    # Shapes that are refused.
    for body, words in [
        ({}, ("vectors",)),
        ({"vectors": 4}, ("vectors must be an object",)),
        ({"vectors": {"distance": "Cosine"}}, ("size is required",)),
        ({"vectors": {"size": 0, "distance": "Cosine"}}, ("size", "between 1 and 65536")),
        ({"vectors": {"size": 65537, "distance": "Cosine"}}, ("size", "between 1 and 65536")),
        ({"vectors": {"size": "4", "distance": "Cosine"}}, ("size", "integer")),
        ({"vectors": {"size": 4}}, ("distance is required",)),
        ({"vectors": {"size": 4, "distance": "L2"}}, ("unknown distance 'L2'", "Cosine, Dot, Euclid, Manhattan")),
        ({"vectors": {"size": 4, "distance": "cosine"}}, ("unknown distance 'cosine'",)),
        ({"vectors": {"size": 4, "distance": 1}}, ("distance is required",)),
        ({"vectors": {"size": 4, "distance": "Cosine"}, "index": "diskann"}, ("unknown index type 'diskann'",)),
        ({"vectors": {"size": 4, "distance": "Cosine"}, "index": "ivf_flat,nlist=0"}, ("nlist",)),
        ({"vectors": {"size": 4, "distance": "Cosine"}, "index": "ivf_flat,bogus=1"}, ("bogus",)),
        ({"vectors": {"size": 4, "distance": "Cosine"}, "index": 16}, ("index must be an index description",)),
    ]:
        fx.expect("PUT", "/collections/fresh", body, words=words)
    # Duplicate: 409, the existing collection untouched.
    fx.expect("PUT", "/collections/e", {"vectors": {"size": 8, "distance": "Dot"}}, status=409, words=("already exists",))
    # A bad index description for an existing collection: refused at once, its config unchanged.
    for desc, words in [("diskann", ("diskann",)), ("ivf_flat,nlist=-3", ("nlist",)), ("ivf_flat,nprobe=x", ("nprobe",))]:
        fx.expect("PUT", "/collections/e/vector_index", {"index": desc}, words=words)
    fx.expect("PUT", "/collections/e/vector_index", {"index": ["flat"]}, words=("index must be an index description",))
    # Nothing was created outside the data directory either (unchanged() compares its parent too).
    assert not (fx.s.data_dir.parent / "etc").exists()
    # The longest valid name is a collection like any other.
    create_collection(fx.c, "Y" * 63 + "9", 4, "Manhattan")
    assert fx.c.ok("GET", "/collections/" + "Y" * 63 + "9")["points_count"] == 0


def test_routes_and_methods(fx: Fixture) -> None:
    status, _, info = fx.c.get("/")  # Qdrant's service info, at the top level as Qdrant answers it
    assert status == 200 and info["version"].count(".") == 2 and info["title"].startswith("simkit"), info
    fx.expect("POST", "/", {}, status=405, words=("use GET /",))
    fx.expect("GET", "/collection", status=404, words=("no route",))
    fx.expect("GET", "/collections/e/points/1/extra", status=404, words=("no route",))
    fx.expect("POST", "/collections/e/points/search/batch/x", {}, status=404, words=("no route",))
    fx.expect("GET", "/" + "z" * 5000, status=404, words=("no route",))
    for method, path in [
        ("DELETE", "/collections"), ("POST", "/collections/e"), ("PATCH", "/collections/e"),
        ("PUT", "/collections/e/points/search"), ("DELETE", "/collections/e/points/100"),
        ("POST", "/collections/e/vector_index"), ("DELETE", "/collections/e/snapshots"),
        ("POST", "/collections/e/snapshots/recover"),
    ]:
        fx.expect(method, path, {}, status=405, words=(method, "not allowed"))
    fx.expect("POST", "/healthz", {}, status=405, words=("use GET",))
    fx.expect("PUT", "/metrics", {}, status=405, words=("use GET",))
    # GET on .../points/search and .../points/delete matches GET .../points/{id}: a 400 that says so.
    for path in ["/collections/e/points/search", "/collections/e/points/delete"]:
        fx.expect("GET", path, status=400, words=("neither an unsigned integer nor a UUID",))


def test_recover_refuses_paths_and_foreign_files(fx: Fixture) -> None:
    recover = "/collections/e/snapshots/recover"
    snap = fx.c.ok("POST", "/collections/e/snapshots")["name"]
    fx.snapshot_state()  # the snapshot file is part of the state now
    for location in ["../x.snapshot", "/etc/passwd", "../../e/" + snap, "a/b.snapshot", ".hidden.snapshot",
                     "file:///etc/passwd", "http://example.com/x.snapshot", "x.snap", ".snapshot", "",
                     "e-%2E%2E.snapshot", "x" * 300 + ".snapshot"]:
        fx.expect("PUT", recover, {"location": location}, words=("location",))
    fx.expect("PUT", recover, {"location": 3}, words=("location is required",))
    fx.expect("PUT", recover, {}, words=("location is required",))
    fx.expect("PUT", recover, {"location": "e-never.snapshot"}, status=404, words=("no snapshot",))
    # Another collection's snapshot is not this one's.
    create_collection(fx.c, "other", 3, "Dot")
    fx.snapshot_state()
    fx.expect("PUT", "/collections/other/snapshots/recover", {"location": snap}, status=404, words=("no snapshot",))

    # Files placed in the snapshots folder that are not complete collection databases.
    folder = fx.s.data_dir / "snapshots" / "e"
    real = (folder / snap).read_bytes()
    bad_files = {
        "junk.snapshot": b"this is not a database\n" * 100,
        "empty.snapshot": b"",
        "truncated.snapshot": real[: len(real) // 2],
        "damaged.snapshot": real[:4096] + bytes(len(real) - 4096),
    }
    # A valid SQLite database without the collection's tables.
    con = sqlite3.connect(folder / "plain-sqlite.snapshot")
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    for name, data in bad_files.items():
        (folder / name).write_bytes(data)
    fx.snapshot_state()
    for name in list(bad_files) + ["plain-sqlite.snapshot"]:
        message = fx.expect("PUT", recover, {"location": name}, status=400, words=())
        assert "snapshot refused" in message or "not a" in message or "damaged" in message, (name, message)
    # The real one still recovers, and the collection works afterwards.
    upsert(fx.c, "e", [500], np.ones((1, D), dtype=np.float32))
    assert fx.c.ok("PUT", recover, {"location": snap}) is True
    assert sorted(scroll_all(fx.c, "e")) == list(range(100, 120))


def test_body_limit(serve: Any, rng: np.random.Generator) -> None:
    s = serve("--max-body-mb", "0.01")  # 10485 bytes
    fx = Fixture(s, rng)
    limit = int(0.01 * 1024 * 1024)
    up = "/collections/e/points?wait=true"
    small = {"points": [point(1000 + i) for i in range(50)]}
    assert len(json.dumps(small)) < limit
    big = {"points": [point(2000 + i) for i in range(400)]}
    body = json.dumps(big).encode()
    assert len(body) > limit
    fx.expect("PUT", up, raw=body, status=413, words=("exceeds the limit", str(limit), "--max-body-mb"))
    # A Content-Length that claims more than the limit: refused from the header, before any body byte.
    head = (f"PUT {up} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10**12}\r\n\r\n").encode()
    reply = raw_exchange(s.port, head + b'{"points": [', timeout=10)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"exceeds the limit" in reply
    fx.unchanged("a lying Content-Length")
    # A chunked body (no Content-Length) that grows past the limit.
    chunk = b"x" * 4096
    chunked = (f"PUT {up} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    chunked += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(5)) + b"0\r\n\r\n"
    reply = raw_exchange(s.port, chunked, timeout=10)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    fx.unchanged("a chunked body over the limit")
    # Under the limit: accepted.
    c = s.client()
    assert c.ok("PUT", up, small)["status"] == "completed"
    assert len(scroll_all(c, "e")) == 70
    m = s.metrics()
    assert 'code="413"' in m


# ---------------------------------------------------------------- authentication


def test_api_key(serve: Any, rng: np.random.Generator) -> None:
    key = "k3y-" + os.urandom(8).hex()
    s = serve(api_key=key)
    fx = Fixture(s, rng)  # its client sends the api-key header
    # (A server sharded over MPI ranks takes no snapshot, 501, but refuses a keyless request first.)
    snap = "e-none.snapshot" if s.launcher else fx.c.ok("POST", "/collections/e/snapshots")["name"]
    fx.snapshot_state()
    routes = [
        ("GET", "/collections", None),
        ("PUT", "/collections/new", {"vectors": {"size": 4, "distance": "Cosine"}}),
        ("GET", "/collections/e", None),
        ("DELETE", "/collections/e", None),
        ("PUT", "/collections/e/points?wait=true", {"points": [point(7)]}),
        ("POST", "/collections/e/points", {"ids": [100]}),
        ("POST", "/collections/e/points/delete", {"points": [100]}),
        ("POST", "/collections/e/points/scroll", {}),
        ("GET", "/collections/e/points/100", None),
        ("POST", "/collections/e/points/search", {"vector": GOOD}),
        ("POST", "/collections/e/points/search/batch", {"searches": [{"vector": GOOD}]}),
        ("PUT", "/collections/e/vector_index", {"index": "ivf_flat,nlist=2"}),
        ("POST", "/collections/e/snapshots", None),
        ("GET", "/collections/e/snapshots", None),
        ("PUT", "/collections/e/snapshots/recover", {"location": snap}),
        ("GET", "/metrics", None),
        ("GET", "/no/such/route", None),
    ]
    anonymous = s.client(api_key=None)
    refusals = 0
    for headers in [{}, {"api-key": "wrong"}, {"api-key": key + "x"}, {"api-key": key[:-1]},
                    {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {key}"},
                    {"Authorization": key}, {"Authorization": f"Bearer{key}"}, {"api-key": ""}]:
        for method, path, body in routes:
            fx.expect(method, path, body, status=401, words=("API key",), headers=headers, client=anonymous)
            refusals += 1
    # /healthz needs no key.
    status, _, body = anonymous.get("/healthz")
    assert status == 200 and body["result"] == "ok"
    # Both header forms are accepted.
    bearer = s.client(api_key=None)
    for c, headers in [(anonymous, {"api-key": key}), (bearer, {"Authorization": f"Bearer {key}"})]:
        status, _, body = c.request("GET", "/collections/e", headers=headers)
        assert status == 200 and body["result"]["points_count"] == 20, body
        status, _, body = c.request("POST", "/collections/e/points/search",
                                    {"vector": fx.X[5].tolist(), "limit": 1}, headers=headers)
        assert status == 200 and body["result"][0]["id"] == 105, body
        status, _, text = c.request("GET", "/metrics", headers=headers)
        assert status == 200 and "simkit_http_requests_total" in text
    status, _, body = bearer.request("PUT", "/collections/e/points?wait=true", {"points": [point(9)]},
                                     headers={"Authorization": f"Bearer {key}"})
    assert status == 200, body
    assert len(scroll_all(fx.c, "e")) == 21
    m = s.metrics()
    assert metric(m, "simkit_http_requests_total", route="unauthorized", code="401") == refusals
    print(f"{refusals} unauthenticated requests refused, nothing written")


# ---------------------------------------------------------------- the transport


def test_garbage_on_the_socket(fx: Fixture) -> None:
    port = fx.s.port
    for data in [
        b"\x00\xff\xfe garbage \x01\r\n\r\n",
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
        b"PUT /collections/e/points HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        b"PUT /collections/e/points HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        b"PUT /collections/e/points HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        os.urandom(3000),
    ]:
        reply = raw_exchange(port, data, timeout=5, shut_write=True)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 400"), (data[:60], reply[:200])
        fx.unchanged(f"garbage {data[:40]!r}")
    # An unknown HTTP version: refused or answered, never a server error.
    reply = raw_exchange(port, b"GET /healthz HTTP/9.9\r\n\r\n", timeout=5, shut_write=True)
    assert reply == b"" or reply[:12] in (b"HTTP/1.1 400", b"HTTP/1.1 505", b"HTTP/1.1 200"), reply[:200]
    # A request cut off in the middle of its body, the client gone: nothing is written.
    head = b"PUT /collections/e/points?wait=true HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n"
    raw_exchange(port, head + json.dumps({"points": [point(900)]}).encode()[:40], timeout=2, shut_write=True)
    fx.unchanged("a truncated body")
    # Headers over 64 KiB: 431.
    reply = raw_exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", timeout=5)
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    # Many connections opened and dropped at once, some mid-request.
    socks = []
    for i in range(50):
        so = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            so.sendall(b"POST /collections/e/points/search HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        socks.append(so)
    for so in socks:
        so.close()
    # Still serving, on old and new connections.
    status, _, body = fx.c.get("/healthz")
    assert status == 200
    hits = fx.s.client().ok("POST", "/collections/e/points/search", {"vector": fx.X[7].tolist(), "limit": 1})
    assert hits[0]["id"] == 107
    fx.unchanged("dropped connections")
