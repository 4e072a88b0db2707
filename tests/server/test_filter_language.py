"""The filter language (docs/API.md, "Filters") against a brute force written here from Qdrant's
documented semantics, over random payloads and random filters, without payload indexes and with
one on every field: the sets of matching ids must be equal, and indexes must change no answer.
They must also follow writes and come back after a restart.

The server's set for a filter is a search with a limit above the collection's size on a flat
collection: every allowed point is returned.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import pytest
from conftest import Client, create_collection, upsert

N = 3000
D = 4
N_FILTERS = 1000

WORDS = ["red", "green", "blue", "cyan", "magenta", "yellow"]
TAGS = list("abcdefgh")
NAMES = ["apple", "pear", "plum", "fig"]
SENTENCE_WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "ünïcode", "a\"q"]

# Every field a filter tests, the kind of value it mostly holds, and the index it gets.
FIELDS: dict[str, tuple[str, Any]] = {
    "kw": ("word", "keyword"),
    "n": ("int", "integer"),
    "x": ("float", "float"),
    "flag": ("bool", "bool"),
    "tags": ("tag", "keyword"),
    "nums": ("int", {"type": "integer", "lookup": True, "range": True}),
    "obj.a.b": ("word", "keyword"),
    "obj.c": ("int", {"type": "integer", "lookup": True, "range": False}),  # range falls back to the walk
    "items[].name": ("name", "keyword"),
    "items[].qty": ("int", "integer"),
    "text": ("text", "keyword"),
    "big": ("int", "float"),
}
EXTRA_KEYS = ["obj.a", "obj", "items", "missing", "items[0].name", "tags[1]", '"dotted.key"']


# ---------------------------------------------------------------- the reference semantics


def parse_path(key: str) -> list[tuple[str, Any]]:
    """a.b[].c[2] and "quoted.key" -> steps (the grammar of json_path.hpp, for the keys used here)."""
    steps: list[tuple[str, Any]] = []
    i = 0
    while i < len(key):
        if key[i] == "[":
            j = key.index("]", i)
            steps.append(("each", None) if j == i + 1 else ("index", int(key[i + 1:j])))
            i = j + 1
            continue
        if key[i] == ".":
            i += 1
        if key[i] == '"':
            j = key.index('"', i + 1)
            steps.append(("key", key[i + 1:j]))
            i = j + 1
        else:
            j = i
            while j < len(key) and key[j] not in ".[]":
                j += 1
            steps.append(("key", key[i:j]))
            i = j
    return steps


def values_at(payload: dict[str, Any], steps: list[tuple[str, Any]]) -> list[Any]:
    """Qdrant's JsonPath::value_get: a key step needs an object, [] visits elements, [n] one."""
    out: list[Any] = []

    def walk(v: Any, i: int) -> None:
        if i == len(steps):
            out.append(v)
            return
        kind, arg = steps[i]
        if kind == "key" and isinstance(v, dict) and arg in v:
            walk(v[arg], i + 1)
        elif kind == "each" and isinstance(v, list):
            for e in v:
                walk(e, i + 1)
        elif kind == "index" and isinstance(v, list) and arg < len(v):
            walk(v[arg], i + 1)

    walk(payload, 0)
    return out


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def scalar_matches(kind: str, arg: Any, v: Any) -> bool:
    """Qdrant's check_match for one value (never the array a field holds; an element may be one)."""
    if kind == "value":
        if isinstance(arg, bool):
            return isinstance(v, bool) and v == arg
        if isinstance(arg, str):
            return isinstance(v, str) and v == arg
        return is_int(v) and v == arg
    if kind == "text":
        return isinstance(v, str) and arg in v
    if kind == "range":
        if not is_number(v):
            return False
        x = float(v)
        return all([arg.get("gt") is None or x > arg["gt"], arg.get("gte") is None or x >= arg["gte"],
                    arg.get("lt") is None or x < arg["lt"], arg.get("lte") is None or x <= arg["lte"]])
    ints = len(arg) > 0 and isinstance(arg[0], int)
    if kind == "any":
        return (is_int(v) and v in arg) if ints else (isinstance(v, str) and v in arg)
    if kind == "except":
        if v is None:
            return False
        if ints and is_number(v):
            return not is_int(v) or v not in arg
        if not ints and isinstance(v, str):
            return v not in arg
        return True
    raise AssertionError(kind)


def clause(f: dict[str, Any], name: str) -> list[Any]:
    c = f.get(name)
    return [] if c is None else [c] if isinstance(c, dict) else c


def condition_holds(c: dict[str, Any], payload: dict[str, Any], pid: int | None) -> bool:
    if "has_id" in c:
        return pid in c["has_id"]
    if "is_empty" in c:
        return all(v is None or v == [] for v in values_at(payload, parse_path(c["is_empty"]["key"])))
    if "is_null" in c:
        return any(v is None for v in values_at(payload, parse_path(c["is_null"]["key"])))
    if "nested" in c:
        steps = parse_path(c["nested"]["key"])
        if steps[-1][0] != "each":
            steps.append(("each", None))
        return any(isinstance(v, dict) and filter_matches(c["nested"]["filter"], v, None)
                   for v in values_at(payload, steps))
    if "key" in c:
        kind, arg = (next(iter(c["match"].items())) if "match" in c else ("range", c["range"]))
        for v in values_at(payload, parse_path(c["key"])):
            if isinstance(v, list):
                if any(scalar_matches(kind, arg, e) for e in v):
                    return True
            elif scalar_matches(kind, arg, v):
                return True
        return False
    return filter_matches(c, payload, pid)


def filter_matches(f: dict[str, Any], payload: dict[str, Any], pid: int | None) -> bool:
    def holds(c: dict[str, Any]) -> bool:
        return condition_holds(c, payload, pid)

    if not all(holds(c) for c in clause(f, "must")):
        return False
    should = clause(f, "should")
    if should and not any(holds(c) for c in should):  # an empty should is no constraint
        return False
    if "min_should" in f:
        ms = f["min_should"]
        if sum(holds(c) for c in clause(ms, "conditions")) < ms["min_count"]:
            return False
    return not any(holds(c) for c in clause(f, "must_not"))


# ---------------------------------------------------------------- random payloads and filters


class Gen:
    def __init__(self, rng: np.random.Generator, ids: list[int]) -> None:
        self.rng = rng
        self.ids = ids

    def p(self, x: float) -> bool:
        return bool(self.rng.random() < x)

    def pick(self, seq: list[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def scalar(self, kind: str) -> Any:
        """A value of the kind, or now and then one of another kind (what an index does not keep)."""
        r = self.rng.random()
        if r < 0.04:
            return None
        if r < 0.08:
            return self.pick(["7", 3, 2.5, True, 1.0, {"k": 1}, [1, "x"], -0.5, 2**63 + 5])
        if kind == "word":
            return self.pick(WORDS)
        if kind == "name":
            return self.pick(NAMES)
        if kind == "int":
            return int(self.rng.integers(-12, 13))
        if kind == "float":
            return round(float(self.rng.uniform(-10, 10)), 2)
        if kind == "bool":
            return self.p(0.5)
        assert kind == "text"
        return " ".join(self.pick(SENTENCE_WORDS) for _ in range(int(self.rng.integers(1, 5))))

    def field(self, kind: str) -> Any:
        r = self.rng.random()
        if r < 0.2:
            return [self.scalar(kind) for _ in range(int(self.rng.integers(0, 4)))]
        return self.scalar(kind)

    def payload(self) -> dict[str, Any] | None:
        if self.p(0.03):
            return None
        g: dict[str, Any] = {}
        for name, kind in [("kw", "word"), ("n", "int"), ("x", "float"), ("flag", "bool"), ("text", "text")]:
            if self.p(0.85):
                g[name] = self.field(kind)
        if self.p(0.8):
            g["tags"] = [self.scalar("word") if self.p(0.1) else self.pick(TAGS) for _ in range(int(self.rng.integers(0, 5)))]
        if self.p(0.7):
            g["nums"] = [self.scalar("int") for _ in range(int(self.rng.integers(0, 4)))]
        if self.p(0.7):
            a: Any = {"b": self.field("word")} if self.p(0.8) else self.pick([None, [], [{"b": "red"}], 5])
            g["obj"] = {"a": a, "c": self.field("int")} if self.p(0.9) else self.pick([None, [], "obj"])
        if self.p(0.7):
            g["items"] = [{"name": self.scalar("name"), "qty": self.scalar("int")} if self.p(0.9) else self.scalar("int")
                          for _ in range(int(self.rng.integers(0, 4)))]
        if self.p(0.3):
            g["big"] = self.pick([2**63 + int(self.rng.integers(0, 9)), -2**63, 2**62, 1e19, 3, 2.5, -7])
        if self.p(0.1):
            g["dotted.key"] = self.pick(WORDS)
        return g

    def match_value(self, kind: str) -> Any:
        if self.p(0.15):  # another type than the field's: matches only the odd values
            return self.pick(["7", 3, True, False, "red", 0])
        pick: dict[str, Callable[[], Any]] = {
            "word": lambda: self.pick(WORDS + ["nope"]),
            "tag": lambda: self.pick(TAGS),
            "name": lambda: self.pick(NAMES),
            "int": lambda: int(self.rng.integers(-13, 14)),
            "float": lambda: int(self.rng.integers(-10, 11)),
            "bool": lambda: self.p(0.5),
            "text": lambda: self.pick(SENTENCE_WORDS),
        }
        return pick[kind]()

    def field_condition(self, key: str, kind: str) -> dict[str, Any]:
        numeric = kind in ("int", "float")
        r = self.rng.random()
        if r < (0.25 if numeric else 0.35):
            return {"key": key, "match": {"value": self.match_value(kind)}}
        if r < (0.6 if numeric else 0.75):
            lst = [self.match_value(kind) for _ in range(0 if self.p(0.05) else int(self.rng.integers(1, 4)))]
            ints = bool(lst) and is_int(lst[0])
            lst = [v for v in lst if (is_int(v) if ints else isinstance(v, str))]
            return {"key": key, "match": {self.pick(["any", "except"]): lst}}
        if not numeric and r < 0.95:
            word = self.pick(SENTENCE_WORDS + WORDS + NAMES + TAGS)
            return {"key": key, "match": {"text": word[:int(self.rng.integers(1, len(word) + 1))]}}
        bounds: dict[str, Any] = {}
        for b in self.rng.permutation(["gt", "gte", "lt", "lte"])[:int(self.rng.integers(1, 3))]:
            v = float(self.rng.uniform(-12, 12))
            bounds[str(b)] = round(v, 1) if self.p(0.7) else int(v)
        if self.p(0.1):
            bounds = {"gte": 2**63}
        return {"key": key, "range": bounds}

    def condition(self, depth: int, nested_keys: dict[str, str] | None) -> dict[str, Any]:
        keys = nested_keys or {k: v[0] for k, v in FIELDS.items()}
        r = self.rng.random()
        if depth < 3 and r < 0.1:
            return self.filter(depth + 1, nested_keys)
        if depth < 2 and nested_keys is None and r < 0.16:
            return {"nested": {"key": self.pick(["items", "items[]"]),
                               "filter": self.filter(depth + 1, {"name": "name", "qty": "int"})}}
        if r < 0.22:
            key = self.pick(list(keys) + ([] if nested_keys else EXTRA_KEYS))
            return {self.pick(["is_empty", "is_null"]): {"key": key}}
        if r < 0.27 and nested_keys is None:
            return {"has_id": [self.pick(self.ids) for _ in range(int(self.rng.integers(0, 40)))] + [10**9]}
        odd = ["missing", '"dotted.key"', "items[0].name", "tags[1]"]
        key = self.pick(odd) if nested_keys is None and self.p(0.1) else self.pick(list(keys))
        return self.field_condition(key, keys.get(key, "word"))

    def clause(self, depth: int, nested_keys: dict[str, str] | None) -> Any:
        conds = [self.condition(depth, nested_keys) for _ in range(int(self.rng.choice(4, p=[0.05, 0.5, 0.3, 0.15])))]
        return conds[0] if len(conds) == 1 and self.p(0.3) else conds

    def filter(self, depth: int = 0, nested_keys: dict[str, str] | None = None) -> dict[str, Any]:
        f: dict[str, Any] = {}
        for name, chance in [("must", 0.7), ("should", 0.4), ("must_not", 0.4)]:
            if self.p(chance):
                f[name] = self.clause(depth, nested_keys)
        if self.p(0.15):
            conds = [self.condition(depth, nested_keys) for _ in range(int(self.rng.integers(0, 5)))]
            f["min_should"] = {"conditions": conds, "min_count": int(self.rng.integers(0, len(conds) + 2))}
        return f


# ---------------------------------------------------------------- the test


def server_sets(c: Client, filters: list[dict[str, Any]]) -> list[set[int]]:
    out: list[set[int]] = []
    for lo in range(0, len(filters), 25):
        searches = [{"vector": [1.0] * D, "limit": N + 100, "filter": f} for f in filters[lo:lo + 25]]
        for hits in c.ok("POST", "/collections/f/points/search/batch", {"searches": searches}):
            out.append({h["id"] for h in hits})
    return out


def reference_sets(filters: list[dict[str, Any]], points: dict[int, dict[str, Any] | None]) -> list[set[int]]:
    return [{pid for pid, p in points.items() if filter_matches(f, p or {}, pid)} for f in filters]


def compare(what: str, got: list[set[int]], want: list[set[int]], filters: list[dict[str, Any]]) -> None:
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (f"{what}: filter {i} {json.dumps(filters[i])}: the server has {len(g - w)} more "
                        f"(e.g. {sorted(g - w)[:5]}), {len(w - g)} fewer (e.g. {sorted(w - g)[:5]})")


def kept(kind: str, v: Any) -> bool:
    return {"keyword": isinstance(v, str), "integer": is_int(v), "float": is_number(v), "bool": isinstance(v, bool)}[kind]


def indexed_points(points: dict[int, dict[str, Any] | None], key: str, kind: str) -> int:
    """How many points hold a value the index keeps at the key (payload_schema's "points")."""
    count = 0
    for p in points.values():
        values = values_at(p or {}, parse_path(key))
        elements = [e for v in values for e in (v if isinstance(v, list) else [v])]
        count += any(e is not None and kept(kind, e) for e in elements)
    return count


def type_of(schema: Any) -> str:
    return schema if isinstance(schema, str) else schema["type"]


def test_filters_equal_the_reference_with_and_without_payload_indexes(serve: Any, rng: np.random.Generator) -> None:
    # Dense ids first (the evaluator tests an index's lists against a bitmap of the points left),
    # then, after the writes add ids near 10^7, sparse ones (it sorts and intersects instead).
    ids = [int(i) for i in rng.choice(4 * N, N, replace=False)]
    gen = Gen(rng, ids)
    payloads = [gen.payload() for _ in range(N)]
    points: dict[int, dict[str, Any] | None] = dict(zip(ids, payloads))
    X = rng.standard_normal((N, D)).astype(np.float32)
    s = serve()
    c = s.client()
    create_collection(c, "f", D, "Dot")
    upsert(c, "f", ids, X, payloads, chunk=1000)
    filters = [gen.filter() for _ in range(N_FILTERS)]
    want = reference_sets(filters, points)
    sizes = [len(w) for w in want]
    partial = sum(0 < n < N for n in sizes)
    print(f"{len(filters)} filters: {sizes.count(0)} match nothing, {sizes.count(N)} everything, {partial} "
          f"between (median {int(np.median(sizes))} of {N})")
    assert partial >= len(filters) // 3, "the generator should mostly make filters that select"

    # 1. No payload index: every condition is tested on the payloads' text.
    compare("no index", server_sets(c, filters), want, filters)

    # 2. An index on every field: the same answers, and payload_schema describes them.
    for key, (_, schema) in FIELDS.items():
        r = c.ok("PUT", "/collections/f/index?wait=true", {"field_name": key, "field_schema": schema})
        assert r["status"] == "completed" and isinstance(r["operation_id"], int), r
    info = c.ok("GET", "/collections/f")
    assert set(info["payload_schema"]) == set(FIELDS), info["payload_schema"]
    for key, (_, schema) in FIELDS.items():
        got = info["payload_schema"][key]
        assert got["data_type"] == type_of(schema), (key, got)
        assert got["points"] == indexed_points(points, key, type_of(schema)), (key, got)
        assert got.get("params") == (schema if isinstance(schema, dict) else None), (key, got)
    compare("indexed", server_sets(c, filters), want, filters)

    # 3. Writes while indexed: new payloads for some points, new points, deletions.
    changed = [gen.pick(ids) for _ in range(300)]
    changed = list(dict.fromkeys(changed))
    fresh = [int(i) for i in rng.choice(10**7, 200, replace=False) + 10**7]
    new_payloads = [gen.payload() for _ in changed + fresh]
    upsert(c, "f", changed + fresh, rng.standard_normal((len(changed) + len(fresh), D)).astype(np.float32),
           new_payloads, chunk=97)
    points.update(zip(changed + fresh, new_payloads))
    gone = list(dict.fromkeys(gen.pick(ids) for _ in range(150)))
    assert c.ok("POST", "/collections/f/points/delete?wait=true", {"points": gone})["deleted"] == len(gone)
    for pid in gone:
        del points[pid]
    want = reference_sets(filters, points)
    compare("indexed, after writes", server_sets(c, filters), want, filters)
    info = c.ok("GET", "/collections/f")
    for key, (_, schema) in FIELDS.items():
        assert info["payload_schema"][key]["points"] == indexed_points(points, key, type_of(schema)), key

    # 4. A restart rebuilds the indexes the database names; a dropped one stays dropped.
    assert c.ok("DELETE", "/collections/f/index/items%5B%5D.qty?wait=true")["status"] == "completed"
    assert c.ok("DELETE", "/collections/f/index/not_indexed")["status"] == "completed"  # nothing to drop
    s.restart()
    c = s.client()
    schema_after = c.ok("GET", "/collections/f")["payload_schema"]
    assert set(schema_after) == set(FIELDS) - {"items[].qty"}, schema_after
    assert {k: v for k, v in schema_after.items()} == {k: v for k, v in info["payload_schema"].items()
                                                       if k != "items[].qty"}
    compare("after a restart", server_sets(c, filters), want, filters)


def test_indexed_lookups_answer_alone_and_follow_every_write(serve: Any, rng: np.random.Generator) -> None:
    # Small hand-made cases where an index answers the whole filter (no payload walk), checked
    # after each kind of write: an upsert that changes a value, one that removes the field, a
    # delete, and a re-insert.
    s = serve()
    c = s.client()
    create_collection(c, "f", D, "Dot")
    X = rng.standard_normal((6, D)).astype(np.float32)
    upsert(c, "f", range(6), X, [{"lang": "en", "n": 1, "x": 0.5, "ok": True},
                                 {"lang": ["de", "en"], "n": [2, 3], "x": [1.5, -2.0], "ok": False},
                                 {"lang": "fr", "n": 3, "x": 3, "ok": [True, False]},
                                 {"lang": None, "n": None},
                                 {},
                                 None])
    for key, kind in [("lang", "keyword"), ("n", "integer"), ("x", "float"), ("ok", "bool")]:
        c.ok("PUT", "/collections/f/index", {"field_name": key, "field_schema": kind})

    def ids(f: dict[str, Any]) -> list[int]:
        return sorted(h["id"] for h in c.ok("POST", "/collections/f/points/search",
                                            {"vector": [1.0] * D, "limit": 100, "filter": f}))

    en = {"must": [{"key": "lang", "match": {"value": "en"}}]}
    assert ids(en) == [0, 1]
    assert ids({"must": [{"key": "n", "range": {"gte": 2, "lt": 3.5}}]}) == [1, 2]
    assert ids({"must": [{"key": "x", "range": {"gt": 1}}]}) == [1, 2]
    assert ids({"must": [{"key": "ok", "match": {"value": False}}]}) == [1, 2]
    assert ids({"must": [{"is_empty": {"key": "lang"}}]}) == [3, 4, 5]
    assert ids({"must": [{"is_null": {"key": "n"}}]}) == [3]
    assert ids({"must_not": [{"key": "lang", "match": {"any": ["en", "fr"]}}]}) == [3, 4, 5]
    assert ids({"should": [{"key": "lang", "match": {"except": ["en"]}}, {"has_id": [5]}]}) == [1, 2, 5]
    upsert(c, "f", [0], X[:1], [{"lang": "fr"}])
    assert ids(en) == [1]
    assert ids({"must": [{"key": "n", "range": {"lte": 1}}]}) == []
    upsert(c, "f", [1], X[1:2], [{"n": 1}])
    assert ids(en) == []
    assert ids({"must": [{"key": "n", "match": {"value": 1}}]}) == [1]
    c.ok("POST", "/collections/f/points/delete", {"points": [2, 1]})
    assert ids({"must": [{"key": "lang", "match": {"value": "fr"}}]}) == [0]
    assert ids({"must": [{"is_empty": {"key": "lang"}}]}) == [3, 4, 5]
    upsert(c, "f", [2], X[2:3], [{"lang": "en"}])
    assert ids(en) == [2]
    assert ids({}) == [0, 2, 3, 4, 5]


@pytest.mark.parametrize("id_space", [3 * 12000, 2**62])
def test_large_unions_and_ranges_through_indexes(serve: Any, rng: np.random.Generator, id_space: int) -> None:
    # Unions of index lists past a few thousand ids are sorted by radix (id_set.hpp), ids dense
    # (a bitmap tests them against the points left) or up to 2^62 (several radix passes); several
    # lists, ranges over many values, with and without the indexes.
    n = 12000
    ids = [int(i) for i in rng.choice(id_space, n, replace=False)]
    payloads = [{"k": int(rng.integers(4)), "w": f"w{int(rng.integers(5))}", "r": round(float(rng.uniform(0, 100)), 2)}
                for _ in range(n)]
    s = serve()
    c = s.client()
    create_collection(c, "big", D, "Dot")
    upsert(c, "big", ids, rng.standard_normal((n, D)).astype(np.float32), payloads, chunk=4000)
    filters = [
        {"must": [{"key": "k", "match": {"any": [0, 2, 3]}}]},
        {"must": [{"key": "w", "match": {"except": ["w1"]}}]},
        {"must": [{"key": "r", "range": {"gte": 10, "lt": 90}}]},
        {"should": [{"key": "k", "match": {"value": 1}}, {"key": "r", "range": {"lt": 50}}]},
        {"must": [{"key": "w", "match": {"any": ["w0", "w2", "w4"]}}, {"key": "r", "range": {"gt": 5}}],
         "must_not": [{"key": "k", "match": {"value": 3}}]},
    ]
    points = dict(zip(ids, payloads))
    want = reference_sets(filters, points)  # type: ignore[arg-type]
    assert all(len(w) > 4096 for w in want[:4]), [len(w) for w in want]

    def server(f: dict[str, Any]) -> set[int]:
        found: set[int] = set()
        for offset in (0, 10000):
            hits = c.ok("POST", "/collections/big/points/search",
                        {"vector": [1.0] * D, "limit": 10000, "offset": offset, "filter": f})
            found |= {h["id"] for h in hits}
        return found

    compare("no index", [server(f) for f in filters], want, filters)
    for key, kind in [("k", "integer"), ("w", "keyword"), ("r", "float")]:
        c.ok("PUT", "/collections/big/index?wait=true", {"field_name": key, "field_schema": kind})
    compare("indexed", [server(f) for f in filters], want, filters)
