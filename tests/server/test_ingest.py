"""Ingest (issue 34): the fast upsert reader (simdjson) reads every body exactly as the reference
reader (nlohmann) does, in both of Qdrant's forms (a list of points, or a batch of columns), and
refuses every malformed one with the reference reader's message; large bodies read straight off
the socket survive slow, cut and pipelined clients; `simkit import` writes a collection offline
that the server then serves as if it had been upserted, and refuses bad input, an existing
collection and a data directory in use (as a second server is refused too).

How the two readers are compared: a body whose top-level key repeats ({"points": [], "points":
[...]}) is one the fast reader leaves to the reference reader (which keeps the last value), so
the same points sent both ways land in two collections, whose answers must then be identical
byte for byte: a search with payloads sends each stored payload text as it is."""

from __future__ import annotations

import http.client
import json
import pathlib
import re
import socket
import subprocess
import time
import uuid
from typing import Any

import numpy as np
import pytest
from conftest import Client, create_collection, metric, points_count, raw_exchange, scroll_all
from reference import compare_ranking, scores, top_k

D = 384


# ---------------------------------------------------------------- awkward but valid bodies


def number_text(rng: np.random.Generator, x: float) -> str:
    """One JSON spelling of x, chosen at random: Python's repr, few or many digits, an exponent
    with either letter and sign, an integer written without a decimal point."""
    k = int(rng.integers(0, 7))
    if k == 0:
        return repr(x)
    if k == 1:
        return f"{x:.3e}"
    if k == 2:
        return f"{x:.25g}"
    if k == 3:
        return f"{x:.9E}".replace("E-0", "E-").replace("E+0", "E+")
    if k == 4:
        return str(int(round(x * 1000)))  # an integer: read as x * 1000 exactly
    if k == 5:
        return f"{x:.17g}"
    return f"{x:.1f}"


# Within the norm limit (2^125 squared) even when several land in one vector.
AWKWARD_VALUES = ["1e-45", "1.401298464324817e-45", "-1e-45", "-0", "-0.0", "0", "0e0", "-0E-0", "1E2", "1e+2",
                  "2.5e-38", "1.1754943508222875e-38", "9007199254740993", "-9007199254740993", "1e17", "-1E+17",
                  "0.1000000000000000055511151231257827021181583404541015625", "3", "-3", "1e-400", "4.9e-324"]


def vector_texts(rng: np.random.Generator, n: int, dim: int, minus_zero: bool = True) -> tuple[list[str], np.ndarray]:
    """n vectors as JSON text with random spellings and awkward values, and the float32 values a
    correct reader must store (Python's float() rounds correctly, as both readers do; -0 is 0).
    Without minus_zero, no value is the integer "-0"."""
    awkward = [a for a in AWKWARD_VALUES if minus_zero or a != "-0"]
    texts, values = [], np.zeros((n, dim), dtype=np.float32)
    X = rng.standard_normal((n, dim))
    for i in range(n):
        parts = []
        for j in range(dim):
            t = number_text(rng, float(X[i, j])) if rng.random() > 0.05 else str(rng.choice(awkward))
            parts.append(t)
            v = np.float32(float(t))
            values[i, j] = np.float32(0.0) if v == 0 else v
        texts.append("[" + ",".join(parts) + "]")
    return texts, values


PAYLOAD_TEXTS = [
    '{"text": "caf\u00e9 \u6c49\u5b57 \U0001F600", "esc": "\\ud83d\\ude00 \\u00e9 \\/ \\" \\\\ \\b\\f\\n\\r\\t \\u0001 \\u001f \\u007f"}',
    '{"b": 1, "a": 2, "A": 3, "\u00e9": 4, "": 5, "a\\u0000b": 6, "aa": 7}',
    '{"nested": {"z": [1, {"y": [true, false, null]}, []], "a": {}}, "list": [[], [[]], {"k": "v"}]}',
    '{"n": [1.0, 1e2, 1E2, -0.0, -0, 0.1, 1e-7, 5e-324, 1.7976931348623157e308, 2.5, 100, 1e20, 1e21, 12345678.9]}',
    '{"big": [123456789012345678, 18446744073709551615, -9223372036854775808, 9223372036854775807]}',
    '{"huge_int": 18446744073709551616, "neg_huge": -9223372036854775809}',
    '{"dup": 1, "x": 0, "dup": {"second": true}}',
    '  { "spaced" :\t[ 1 , 2 ]\n, "k" : "v" }  ',
    '{}',
    'null',
]


def point_id_texts(rng: np.random.Generator, n: int, with_zero: bool = True) -> tuple[list[str], list[Any]]:
    """Ids as JSON text (integers, 0 among them unless told otherwise, and UUIDs spelled in every
    accepted way) and as the API answers them."""
    texts, answers = [], []
    numbers = rng.choice(1 << 40, size=n, replace=False) + 1
    for i in range(n):
        if i == 0 or rng.random() < 0.6:
            v = 0 if i == 0 and with_zero else int(numbers[i])
            texts.append(str(v))
            answers.append(v)
            continue
        u = uuid.UUID(bytes=rng.bytes(16))
        spelling = int(rng.integers(0, 4))
        text = [str(u), u.hex.upper(), "{" + str(u) + "}", "urn:uuid:" + str(u)][spelling]
        texts.append(json.dumps(text))
        answers.append(str(u))
    return texts, answers


def points_body(ids: list[str], vectors: list[str], payloads: list[str | None], via_reference: bool) -> bytes:
    parts = []
    for i, v, p in zip(ids, vectors, payloads):
        parts.append('{"id":' + i + ',"vector":' + v + ("" if p is None else ',"payload":' + p) + "}")
    points = "[" + ",".join(parts) + "]"
    return (('{"points": [], "points":' if via_reference else '{"points":') + points + "}").encode()


def batch_body(ids: list[str], vectors: list[str], payloads: list[str | None] | None) -> bytes:
    text = '{"batch": {"ids": [' + ",".join(ids) + '], "vectors": [' + ",".join(vectors) + "]"
    if payloads is not None:
        text += ', "payloads": [' + ",".join("null" if p is None else p for p in payloads) + "]"
    return (text + "}}").encode()


def raw_search(c: Client, name: str, query: list[float], limit: int) -> str:
    """A search's answer as the server wrote it (payloads are the stored text), without its time."""
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=60)
    conn.request("POST", f"/collections/{name}/points/search",
                 body=json.dumps({"vector": query, "limit": limit, "with_payload": True}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    assert r.status == 200, text[:300]
    return re.sub(r',"time":[0-9.e+-]+', "", text)


def stored(c: Client, name: str) -> dict[Any, dict[str, Any]]:
    return scroll_all(c, name, with_vector=True)


def as_server_reads(text: str) -> Any:
    """JSON as the server keeps it: integers beyond 64 bits become doubles (nlohmann's rule)."""
    return json.loads(text, parse_int=lambda t: int(t) if -(2**63) <= int(t) < 2**64 else float(t))


def check_points(got: dict[Any, dict[str, Any]], ids: list[Any], values: np.ndarray, payloads: list[str | None]) -> None:
    assert sorted(map(str, got)) == sorted(map(str, ids))
    for i, pid in enumerate(ids):
        p = got[pid]
        v = np.asarray(p["vector"], dtype=np.float32)
        assert v.tobytes() == values[i].tobytes(), (pid, np.flatnonzero(v != values[i])[:5])
        expected = None if payloads[i] is None else as_server_reads(payloads[i])
        assert p["payload"] == ({} if expected is None else expected), (pid, p["payload"], payloads[i])


def bodies_read(s: Any) -> dict[str, float]:
    m = s.metrics()
    return {r: metric(m, "simkit_upsert_bodies_total", reader=r) for r in ("fast", "reference")}


@pytest.mark.parametrize("case", ["id-0", "minus-zero-values", "beyond-64-bits"])
def test_fast_reader_reads_as_the_reference_reader(serve: Any, rng: np.random.Generator, case: str) -> None:
    # The fast reader leaves to the reference reader a body holding both an id 0 and a "-0" token
    # (the one id spelling the two read differently), and one with an integer beyond 64 bits
    # (simdjson refuses them; nlohmann reads a double): the first two cases avoid that, the last
    # shows the results agree all the same.
    s = serve()
    c = s.client()
    n = 300
    id_texts, ids = point_id_texts(rng, n, with_zero=case != "minus-zero-values")
    vtexts, values = vector_texts(rng, n, D, minus_zero=case != "id-0")
    texts = [t for t in PAYLOAD_TEXTS if case == "beyond-64-bits" or "huge" not in t]
    payloads = [texts[i % len(texts)] if i % 7 else None for i in range(n)]
    if case == "id-0":
        payloads = [p if p is None else p.replace(" -0,", " 0,") for p in payloads]
    for name, via_reference in [("fast", False), ("ref", True)]:
        create_collection(c, name, D, "Dot")
        before = bodies_read(s)
        status, _, r = c.request("PUT", f"/collections/{name}/points?wait=true",
                                 raw=points_body(id_texts, vtexts, payloads, via_reference))
        assert status == 200 and r["result"]["status"] == "completed", r
        after = bodies_read(s)
        reader = "reference" if via_reference or case == "beyond-64-bits" else "fast"
        assert after[reader] == before[reader] + 1, (name, before, after)
    fast, ref = stored(c, "fast"), stored(c, "ref")
    assert fast == ref
    check_points(fast, ids, values, payloads)
    query = rng.standard_normal(D).astype(np.float32).tolist()
    assert raw_search(c, "fast", query, n) == raw_search(c, "ref", query, n)


def test_batch_form_equals_the_points_form(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    n = 120
    id_texts, ids = point_id_texts(rng, n, with_zero=False)  # no id 0 with "-0" values: the fast reader reads it
    vtexts, values = vector_texts(rng, n, D)
    texts = [t for t in PAYLOAD_TEXTS if "huge" not in t]  # integers beyond 64 bits go the reference way
    payloads = [texts[i % len(texts)] if i % 5 else None for i in range(n)]
    bodies = {"points": points_body(id_texts, vtexts, payloads, False), "batch": batch_body(id_texts, vtexts, payloads),
              "batch_ref": b'{"batch": 1, ' + batch_body(id_texts, vtexts, payloads)[1:]}
    for name, raw in bodies.items():
        create_collection(c, name, D, "Euclid")
        before = bodies_read(s)
        status, _, r = c.request("PUT", f"/collections/{name}/points?wait=true", raw=raw)
        assert status == 200, (name, r)
        reader = "reference" if name == "batch_ref" else "fast"
        assert bodies_read(s)[reader] == before[reader] + 1, name
    query = rng.standard_normal(D).astype(np.float32).tolist()
    answers = {name: raw_search(c, name, query, n) for name in bodies}
    assert answers["batch"] == answers["points"] == answers["batch_ref"]
    check_points(stored(c, "batch"), ids, values, payloads)
    # Without payloads, or with null ones: points without payload.
    for name, raw in [("nopay", batch_body(id_texts[:5], vtexts[:5], None)),
                      ("nullpay", b'{"batch": {"ids": [' + ",".join(id_texts[:5]).encode() + b'], "vectors": [' +
                       ",".join(vtexts[:5]).encode() + b'], "payloads": null}}')]:
        create_collection(c, name, D, "Euclid")
        status, _, r = c.request("PUT", f"/collections/{name}/points?wait=true", raw=raw)
        assert status == 200, r
        assert all(p["payload"] == {} for p in scroll_all(c, name).values())


# ---------------------------------------------------------------- refusals


def vec(values: list[str]) -> str:
    return "[" + ",".join(values) + "]"


V = vec(["0.5"] * D)


def vector_with(i: int, bad: str) -> str:
    values = ["0.5"] * D
    values[i] = bad
    return vec(values)


def pt(id_: str = "1", v: str = V, extra: str = "") -> str:
    return '{"id":' + id_ + ',"vector":' + v + extra + "}"


def body(*points: str) -> bytes:
    return ('{"points":[' + ",".join(points) + "]}").encode()


U = "550e8400-e29b-41d4-a716-446655440000"

# Each malformed body at 384-d (where the fast reader runs first) and the reference reader's
# message, exactly as the server answered before the fast reader existed (checked against the
# server of commit 8c6d479), but for the two marked "new".
REFUSED: list[tuple[bytes, str]] = [
    (body(pt(v=vector_with(0, "NaN"))), "malformed JSON body: [json.exception.parse_error.101] parse error at line 1, "
     "column 30: syntax error while parsing value - invalid literal (near ':[{\"id\":1,\"vector\":[NaN,0.5,"),
    (b"", "the request needs a JSON body"),
    (b"[1, 2]", "the body must be a JSON object, not array"),
    (b"null", "the body must be a JSON object, not null"),
    (('{"points":[' + pt() + '],"pointz":1}').encode(),
     "body: unknown field 'pointz' (expected: points, batch)"),  # new: the batch form
    (body(pt("7"), pt("8", extra=',"paylod":{}')), "body.points[1]: unknown field 'paylod' (expected: id, vector, "
     "payload)"),
    (b'{"points": []}', 'body.points must be a non-empty array of {"id", "vector", "payload"}'),
    (b"{}", 'body.points must be a non-empty array of {"id", "vector", "payload"}'),
    (body(pt("7"), "3"), 'body.points[1] must be an object {"id", "vector", "payload"}'),
    (body('{"vector":' + V + "}"), "body.points[0].id is required"),
    (body('{"id":7}'), "body.points[0].vector is required"),
    (body(pt("7"), pt("8", vec(["0.5"] * (D - 1)))), "body.points[1].vector has 383 values; the collection's vectors "
     "have 384"),
    (body(pt("7", '"1,2,3"')), "body.points[0].vector must be an array of 384 numbers"),
    (body(pt("7", vector_with(1, '"1"'))), "body.points[0].vector[1] is not a number (string)"),
    (body(pt("7", vector_with(1, "null"))), "body.points[0].vector[1] is not a number (null)"),
    (body(pt("7", vector_with(2, "1e39"))), "body.points[0].vector[2] = 1e+39 is not a finite float32"),
    (body(pt("-1")), "body.points[0].id: a point id must be >= 0 (got -1)"),
    (body(pt("-0")), "body.points[0].id: a point id must be >= 0 (got 0)"),
    (body(pt('"abc"')), "body.points[0].id: 'abc' is neither an unsigned integer nor a UUID"),
    (body(pt("1.5")), "body.points[0].id: a point id must be an unsigned integer or a UUID string (got number)"),
    (body(pt(str(2**62))), "body.points[0].id: id 4611686018427387904 is too large (integer ids are 0 .. 2^62 - 1 "
     "(4611686018427387903); use a UUID string beyond)"),
    (body(pt("7"), pt("8"), pt("7")), "body.points[2].id: point 7 appears twice in one request"),
    (body(pt('"' + U + '"'), pt('"' + U.upper().replace("-", "") + '"')),
     'body.points[1].id: point "550e8400-e29b-41d4-a716-446655440000" appears twice in one request'),
    (body(pt("7", extra=',"payload":[1,2]')), "body.points[0].payload must be a JSON object"),
    (body(pt("9", vector_with(0, "3.4e38"))), "body.points[0].vector is too long: its squared norm exceeds 2^125 "
     "(about 4.3e37), so its scores against other vectors could overflow float32; scale the vectors down"),
    (body(pt("7")) + b"\0garbage", "malformed JSON body: a NUL byte at offset "),
    (body(pt("7", extra=',"payload":{"a":' + "[" * 34 + "]" * 34 + "}")),
     "body.points[0].payload nests arrays and objects 35 deep; the limit is 32 (--max-payload-depth)"),
    (body(pt("7", extra=',"payload":{"a":[' + ",".join(["1"] * 70000) + "]}")),
     "body.points[0].payload holds 70002 values; the limit is 65536 per point (--max-payload-values)"),
    (body(pt("1"), pt("2"), pt("3", vector_with(383, '"x"'))), "body.points[2].vector[383] is not a number (string)"),
    (body(pt("7", '{"text":' + V + "}")), "body.points[0].vector is an object: named vectors are not supported (a "
     "point has one unnamed vector); it must be an array of 384 numbers"),  # new: said "must be an array" only
    # The batch form.
    (b'{"points": [], "batch": {}}', "the body holds both points and batch: send the points in one of the two forms"),
    (b'{"batch": [1]}', 'body.batch must be an object {"ids", "vectors", "payloads"}'),
    (b'{"batch": {"ids": [1], "vectors": [' + V.encode() + b'], "payload": []}}',
     "body.batch: unknown field 'payload' (expected: ids, vectors, payloads)"),
    (b'{"batch": {"vectors": [' + V.encode() + b"]}}", "body.batch.ids must be a non-empty array of point ids"),
    (b'{"batch": {"ids": [1]}}', "body.batch.vectors is required: one vector per id"),
    (b'{"batch": {"ids": [1, 2], "vectors": [' + V.encode() + b"]}}",
     "body.batch.vectors has 1 vectors; body.batch.ids has 2 ids"),
    (b'{"batch": {"ids": [1], "vectors": {"image": [' + V.encode() + b"]}}}",
     "body.batch.vectors is an object: named vectors are not supported (a point has one unnamed vector); it must be "
     "an array of vectors, one per id"),
    (b'{"batch": {"ids": [1], "vectors": [' + V.encode() + b'], "payloads": [{}, {}]}}',
     "body.batch.payloads has 2 payloads; body.batch.ids has 1 ids"),
    (b'{"batch": {"ids": [1, 1], "vectors": [' + V.encode() + b"," + V.encode() + b"]}}",
     "body.batch.ids[1]: point 1 appears twice in one request"),
    (b'{"batch": {"ids": [1, 2], "vectors": [' + V.encode() + b"," + vec(["1"] * 3).encode() + b"]}}",
     "body.batch.vectors[1] has 3 values; the collection's vectors have 384"),
    (b'{"batch": {"ids": [1], "vectors": [' + V.encode() + b'], "payloads": ["x"]}}',
     "body.batch.payloads[0] must be a JSON object"),
]


def test_malformed_bodies_get_the_reference_readers_message(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "e", D, "Cosine")
    c.ok("PUT", "/collections/e/points?wait=true", {"points": [{"id": 5, "vector": [0.25] * D, "payload": {"k": 1}}]})
    before = stored(c, "e")
    for raw, message in REFUSED:
        status, _, b = c.request("PUT", "/collections/e/points?wait=true", raw=raw)
        assert status == 400, (raw[:100], status, b)
        got = b["status"]["error"]
        assert got.startswith(message), (raw[:100], got, message)
    assert stored(c, "e") == before


# ---------------------------------------------------------------- large bodies off the socket


def large_body(first_id: int, n: int = 200) -> bytes:
    return json.dumps({"points": [{"id": first_id + i, "vector": [float(i % 7) + 0.5] * D} for i in range(n)]}).encode()


def request_bytes(raw: bytes, close: bool = False) -> bytes:
    head = (f"PUT /collections/big/points?wait=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n").encode()
    return head + raw


def test_large_bodies_slow_cut_and_pipelined(serve: Any) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "big", D, "Dot")
    raw = large_body(0)
    assert len(raw) > 256 * 1024  # read by the server's direct path (http_server.cpp)
    # Sent in pieces, slowly: read whole all the same.
    so = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    data = request_bytes(raw, close=True)
    for k in range(0, len(data), 100_000):
        so.sendall(data[k:k + 100_000])
        time.sleep(0.05)
    reply = b""
    while chunk := so.recv(65536):
        reply += chunk
    so.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    assert points_count(c, "big") == 200
    # Cut in the middle, the client gone: nothing is written.
    raw_exchange(s.port, request_bytes(large_body(1000))[:300_000], timeout=2, shut_write=True)
    assert points_count(c, "big") == 200
    # Two large requests and a small one on one connection, sent at once: answered in order.
    data = request_bytes(large_body(2000)) + request_bytes(large_body(3000)) + (
        b"GET /collections/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    reply = raw_exchange(s.port, data, timeout=30)
    assert reply.count(b"HTTP/1.1 200") == 3, reply[:500]
    assert reply.rstrip().endswith(b"}") and b'"points_count":600' in reply, reply[-300:]
    assert points_count(c, "big") == 600
    # Connections that announce 30 MB and send a few bytes hold memory for what they sent, not
    # for what they announced.
    rss0 = s.rss_kib()
    socks = []
    for _ in range(40):
        so = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        so.sendall(b"PUT /collections/big/points HTTP/1.1\r\nHost: x\r\nContent-Length: 31000000\r\n\r\n"
                   b'{"points": [')
        socks.append(so)
    time.sleep(0.5)
    grown = s.rss_kib() - rss0
    for so in socks:
        so.close()
    print(f"40 connections announcing 30 MB each: RSS grew {grown} KiB")
    assert grown < 40 * 1024, grown
    assert points_count(c, "big") == 600


# ---------------------------------------------------------------- simkit import


def run_import(cli: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cli, "import", *args], capture_output=True, text=True, timeout=300)


def write_jsonl(path: pathlib.Path, payloads: list[str | None]) -> None:
    path.write_text("".join(("null" if p is None else p) + "\n" for p in payloads))


def test_import_serves_as_if_upserted(serve: Any, rng: np.random.Generator, cli: str, tmp_path: pathlib.Path) -> None:
    n, d = 3000, 48
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[5, :4] = -0.0  # stored as 0, as an upsert stores it
    X[6, :3] = [1e-45, -1e-45, 3e-39]
    ids = rng.choice(1 << 50, size=n, replace=False).astype(np.int64)
    payloads = [PAYLOAD_TEXTS[i % len(PAYLOAD_TEXTS)].replace("\n", " ") for i in range(n)]  # one line each
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "ids.npy", ids)
    write_jsonl(tmp_path / "p.jsonl", payloads)
    data = tmp_path / "data"
    r = run_import(cli, "--data-dir", str(data), "--collection", "imp", "--vectors", str(tmp_path / "x.npy"),
                   "--ids", str(tmp_path / "ids.npy"), "--payloads", str(tmp_path / "p.jsonl"), "--distance", "Cosine")
    assert r.returncode == 0, r.stderr
    assert re.search(r"3000 points of 48 dimensions into collection 'imp' in [0-9.]+ s \(read", r.stderr), r.stderr
    s = serve(data_dir=data)
    c = s.client()
    assert points_count(c, "imp") == n
    got = stored(c, "imp")
    expected_vectors = np.where(X == 0, np.float32(0), X)
    check_points(got, [int(i) for i in ids], expected_vectors, [None if p == "null" else p for p in payloads])
    # Search: NumPy's exact cosine top 10 (float64; near-ties may swap in float32).
    Q = rng.standard_normal((10, d)).astype(np.float32)
    S = scores(X, Q, "Cosine")
    want, _ = top_k(S, ids, 10, "Cosine")
    for r in range(len(Q)):
        hits = c.ok("POST", "/collections/imp/points/search", {"vector": Q[r].tolist(), "limit": 10})
        compare_ranking([h["id"] for h in hits], [int(x) for x in want[r]], {int(ids[j]): S[r, j] for j in range(n)})
    # The same points upserted over REST: the same stored text, byte for byte.
    create_collection(c, "rest", d, "Cosine")
    for lo in range(0, n, 1000):
        parts = [pt(str(int(ids[i])), json.dumps(X[i].tolist()), "" if payloads[i] == "null" else ',"payload":' +
                    payloads[i]) for i in range(lo, min(n, lo + 1000))]
        status, _, b = c.request("PUT", "/collections/rest/points?wait=true", raw=body(*parts))
        assert status == 200, b
    q = rng.standard_normal(d).astype(np.float32).tolist()
    assert raw_search(c, "imp", q, n) == raw_search(c, "rest", q, n)
    # Writes after the import, and a restart, as for any collection.
    c.ok("PUT", "/collections/imp/points?wait=true", {"points": [{"id": 7, "vector": [1.0] * d}]})
    s.restart()
    assert points_count(s.client(), "imp") == n + 1


def test_import_ids_as_text_and_uuids(serve: Any, rng: np.random.Generator, cli: str, tmp_path: pathlib.Path) -> None:
    n, d = 50, 4
    X = rng.standard_normal((n, d)).astype(np.float16)  # float16 is read as float32
    id_texts, answers = point_id_texts(rng, n)
    (tmp_path / "ids.txt").write_text("\r\n".join(str(json.loads(t)) for t in id_texts) + "\r\n")
    np.save(tmp_path / "x.npy", X)
    data = tmp_path / "data"
    r = run_import(cli, "--data-dir", str(data), "--collection", "u", "--vectors", str(tmp_path / "x.npy"), "--ids",
                   str(tmp_path / "ids.txt"), "--distance", "Euclid")
    assert r.returncode == 0, r.stderr
    s = serve(data_dir=data)
    c = s.client()
    got = scroll_all(c, "u")
    assert sorted(map(str, got)) == sorted(map(str, answers))
    X32 = X.astype(np.float32)
    X32[X32 == 0] = 0  # -0 is stored as 0
    for i, a in enumerate(answers):
        assert np.asarray(got[a]["vector"], dtype=np.float32).tobytes() == X32[i].tobytes()
    u = next(a for a in answers if isinstance(a, str))
    assert c.ok("GET", f"/collections/u/points/{u}")["id"] == u


def tree(root: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.name.endswith(("-wal", "-shm")))


def test_import_refusals(serve: Any, rng: np.random.Generator, cli: str, tmp_path: pathlib.Path) -> None:
    n, d = 20, 8
    X = rng.standard_normal((n, d)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    data = tmp_path / "data"
    args = ["--data-dir", str(data)]
    assert run_import(cli, *args, "--vectors", str(tmp_path / "x.npy"), "--collection", "a").returncode == 0
    before = tree(data)

    def refused(words: tuple[str, ...], *extra: str) -> None:
        vectors = [] if "--vectors" in extra else ["--vectors", str(tmp_path / "x.npy")]
        r = run_import(cli, *args, *vectors, *extra)
        assert r.returncode == 2, (extra, r.returncode, r.stderr)
        line = r.stderr.strip()
        assert line.startswith("simkit: error: ") and "\n" not in line, r.stderr
        for w in words:
            assert w in line, (extra, w, line)
        assert tree(data) == before, (extra, tree(data))

    refused(("collection 'a' already exists",), "--collection", "a")
    refused(("--collection", "invalid collection name"), "--collection", "../x")
    refused(("unknown distance 'cos'",), "--collection", "b", "--distance", "cos")
    refused(("diskann",), "--collection", "b", "--index", "diskann")
    # Vector files: truncated, of a type simkit does not read, holding NaN or an overflowing row.
    raw = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(raw[:-10])
    np.save(tmp_path / "c64.npy", X.astype(np.complex64))
    Y = X.copy()
    Y[3, 5] = np.nan
    np.save(tmp_path / "nan.npy", Y)
    Y = X.copy()
    Y[4, 0] = np.inf
    np.save(tmp_path / "inf.npy", Y)
    Y = X.copy()
    Y[6, :2] = 3e38
    np.save(tmp_path / "long.npy", Y)
    for name, words in [("cut.npy", ("cut.npy",)), ("c64.npy", ("c64.npy",)), ("nan.npy", ("row 3 column 5 is NaN",)),
                        ("inf.npy", ("row 4 column 0 is infinite",)), ("long.npy", ("row 6", "2^125"))]:
        refused(words, "--collection", "b", "--vectors", str(tmp_path / name))
    refused(("nope.npy",), "--collection", "b", "--vectors", str(tmp_path / "nope.npy"))
    # Payloads: a line that is not an object, a count that differs, bad JSON, past the limits.
    good = [b'{"k": %d}' % i for i in range(n)]
    cases = [
        (good[:3] + [b"[1, 2]"] + good[4:], ("p.jsonl", "line 4 is not a JSON object (it is array)")),
        (good[:-1], ("has 19 lines; the vectors file has 20 rows",)),
        (good + [b"{}"], ("has 21 lines",)),
        (good[:7] + [b'{"k": '] + good[8:], ("line 8 is not valid JSON",)),
        (good[:2] + [b""] + good[3:], ("line 3 is empty",)),
        (good[:9] + [b'{"a": ' + b"[" * 33 + b"]" * 33 + b"}"] + good[10:],
         ("line 10 nests arrays and objects 34 deep", "the limit is 32")),
        (good[:1] + [b'{"a": "' + b"x" * (1 << 20) + b'"}'] + good[2:], ("line 2 is 1048584 bytes as compact JSON",)),
        (good[:5] + [b'{"s": "\xff"}'] + good[6:], ("line 6 is not valid JSON",)),
    ]
    for lines, words in cases:
        (tmp_path / "p.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        refused(words, "--collection", "b", "--payloads", str(tmp_path / "p.jsonl"))
    # Ids: too few, repeated, out of range, neither integer nor UUID, floats.
    np.save(tmp_path / "short.npy", np.arange(n - 1))
    np.save(tmp_path / "dup.npy", np.array([0, 1, 2, 1] + list(range(10, 10 + n - 4))))
    np.save(tmp_path / "neg.npy", np.array([-4] + list(range(1, n))))
    np.save(tmp_path / "flt.npy", np.arange(n, dtype=np.float32))
    (tmp_path / "bad.txt").write_text("\n".join(["1", "2", "x-y"] + [str(i) for i in range(10, 10 + n - 3)]) + "\n")
    (tmp_path / "big.txt").write_text("\n".join([str(2**62)] + [str(i) for i in range(1, n)]) + "\n")
    for name, words in [("short.npy", ("has 19 ids",)), ("dup.npy", ("row 3: id 1 appears twice (first at row 1)",)),
                        ("neg.npy", ("row 0: id -4 is out of range",)), ("flt.npy", ("flt.npy",)),
                        ("bad.txt", ("bad.txt' line 3", "neither an unsigned integer nor a UUID",)),
                        ("big.txt", ("big.txt' line 1", "too large"))]:
        refused(words, "--collection", "b", "--ids", str(tmp_path / name))
    # A data directory in use by a running server: the import names it; so is a second server.
    s = serve(data_dir=data)
    before = tree(data)
    refused((f"is in use by a running simkit serve (pid {s.pid}); stop it or import elsewhere",), "--collection", "b")
    r = subprocess.run([cli, "serve", "--data-dir", str(data), "--port", "0", "--device", "cpu"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and f"in use by a running simkit serve (pid {s.pid})" in r.stderr, r.stderr
    assert points_count(s.client(), "a") == n
    s.stop()
    # Stopped, the directory is free again.
    assert run_import(cli, *args, "--vectors", str(tmp_path / "x.npy"), "--collection", "b").returncode == 0
    assert not [p for p in (data / "collections").iterdir() if p.name.startswith(".")]


def test_import_wordnet(serve: Any, cli: str, shared_data: pathlib.Path, tmp_path: pathlib.Path) -> None:
    wordnet = shared_data / "wordnet"
    with open(wordnet / "docs.tsv", encoding="utf-8") as f, open(tmp_path / "docs.jsonl", "w", encoding="utf-8") as out:
        for line in f:
            doc, synset, text = line.rstrip("\n").split("\t")
            out.write(json.dumps({"doc": int(doc), "synset": synset, "text": text}, ensure_ascii=False) + "\n")
    data = tmp_path / "data"
    t = time.monotonic()
    r = run_import(cli, "--data-dir", str(data), "--collection", "wordnet", "--vectors",
                   str(wordnet / "base_minilm_f16.npy"), "--payloads", str(tmp_path / "docs.jsonl"))
    seconds = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    print(f"WordNet import: {seconds:.2f} s; {r.stderr.strip().splitlines()[-1]}")
    s = serve(data_dir=data)
    c = s.client()
    assert points_count(c, "wordnet") == 117659
    # The ground truth's top 10 for 20 queries (float64 cosine over the stored float16 values;
    # near-ties may swap in float32).
    X = np.load(wordnet / "base_minilm_f16.npy").astype(np.float32)
    Q = np.load(wordnet / "queries_minilm_f16.npy")[:20].astype(np.float32)
    truth = np.fromfile(wordnet / "groundtruth_cosine.ivecs", dtype=np.int32).reshape(-1, 101)[:20, 1:11]
    S = scores(X, Q, "Cosine")
    for r in range(len(Q)):
        hits = c.ok("POST", "/collections/wordnet/points/search",
                    {"vector": Q[r].tolist(), "limit": 10, "with_payload": True})
        got = [h["id"] for h in hits]
        compare_ranking(got, truth[r].tolist(), {int(j): S[r, j] for j in set(got) | set(truth[r].tolist())})
        assert all(h["payload"]["doc"] == h["id"] for h in hits)


def test_import_help_teaches(cli: str) -> None:
    r = subprocess.run([cli, "import", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^Examples?:", r.stdout, re.M) and "--payloads" in r.stdout and "null" in r.stdout, r.stdout
    r = subprocess.run([cli, "import", "--vectors", "x.npy"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--data-dir is required" in r.stderr and "simkit import --help" in r.stderr, r.stderr
