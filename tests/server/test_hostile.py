"""Hostile requests cost a bounded amount and never stop the server: JSON nested 10^3..10^6 deep on
every route that takes a body, payloads at and past their limits (memory follows the bytes
accepted), repeated snapshot recovers (no descriptor leak, no 404 meanwhile), timeouts past the
clock's range, vectors whose scores would overflow float32, transfer codings the server cannot
decode, and text that would break a one-line error. Each reproducer of issue 27 is a test here."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from typing import Any

import numpy as np
from conftest import Client, create_collection, raw_exchange, scroll_all, upsert

D = 8
VEC = [0.0] * (D - 1) + [1.0]


def error_of(b: Any) -> str:
    assert isinstance(b, dict) and isinstance(b.get("status"), dict), b
    message = b["status"]["error"]
    assert isinstance(message, str) and message, b
    return message


def assert_alive(c: Client) -> None:
    hits = c.ok("POST", "/collections/h/points/search", {"vector": VEC, "limit": 3})
    assert [h["id"] for h in hits][:1] == [1], hits


def setup_collection(c: Client, rng: np.random.Generator, n: int = 50) -> np.ndarray:
    create_collection(c, "h", D, "Euclid")
    X = rng.standard_normal((n, D)).astype(np.float32)
    X[0] = np.asarray(VEC, dtype=np.float32)  # id 1 is the query's exact match
    upsert(c, "h", range(1, n + 1), X, [{"k": i} for i in range(n)])
    return X


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deep_json_on_every_route_is_refused_before_parsing(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng)
    pid = s.pid
    # Every route that reads a body, with the deep value where a real field would be.
    bodies = [
        ("PUT", "/collections/new", lambda d: '{"vectors":' + nested(d) + "}"),
        ("PUT", "/collections/h/points?wait=true",
         lambda d: '{"points":[{"id":1,"vector":' + json.dumps(VEC) + ',"payload":{"a":' + nested(d) + "}}]}"),
        ("POST", "/collections/h/points", lambda d: '{"ids":' + nested(d) + "}"),
        ("POST", "/collections/h/points/delete", lambda d: '{"points":' + nested(d) + "}"),
        ("POST", "/collections/h/points/scroll", lambda d: '{"offset":' + nested(d) + "}"),
        # The reproducer of issue 27: with_payload holding ~60,000 nested arrays.
        ("POST", "/collections/h/points/search",
         lambda d: '{"vector":' + json.dumps(VEC) + ',"with_payload":' + nested(d) + "}"),
        ("POST", "/collections/h/points/search", lambda d: '{"vector":' + json.dumps(VEC) + ',"filter":' +
         '{"must":[{"key":"k","match":{"value":' + nested(d) + "}}]}}"),
        ("POST", "/collections/h/points/search/batch", lambda d: '{"searches":[{"vector":' + nested(d) + "}]}"),
        ("PUT", "/collections/h/vector_index", lambda d: '{"index":' + nested(d) + "}"),
        ("PUT", "/collections/h/snapshots/recover", lambda d: '{"location":' + nested(d) + "}"),
    ]
    for depth in [10**3, 10**4, 60000, 10**5, 10**6]:
        for method, path, make in bodies:
            raw = make(depth).encode()
            assert len(raw) < 32 << 20
            status, _, b = c.request(method, path, raw=raw)
            message = error_of(b)
            assert status == 400, (method, path, depth, status, message)
            assert "deep" in message and "limit is 40" in message and "\n" not in message, message
    # Millions of empty arrays, shallow: refused from the text too, before a tree of them is built.
    raw = ('{"points":[{"id":1,"vector":' + json.dumps(VEC) + ',"payload":{"a":[' + ",".join(["[]"] * (1 << 21)) +
           "]}}]}").encode()
    status, _, b = c.request("PUT", "/collections/h/points?wait=true", raw=raw)
    assert status == 413 and "arrays and objects" in error_of(b), b
    assert s.running() and s.pid == pid
    assert_alive(c)
    # At the limit itself a body is accepted: a payload 32 deep in an upsert is depth 36.
    payload = {"a": json.loads(nested(31))}
    c.ok("PUT", "/collections/h/points?wait=true", {"points": [{"id": 999, "vector": VEC, "payload": payload}]})
    got = c.ok("POST", "/collections/h/points", {"ids": [999]})
    assert got[0]["payload"] == payload


def test_payload_limits_name_the_flag(serve: Any, rng: np.random.Generator) -> None:
    s = serve("--max-payload-depth", "4", "--max-payload-values", "100", "--max-payload-kb", "2")
    c = s.client()
    setup_collection(c, rng, 5)
    before = scroll_all(c, "h")
    up = "/collections/h/points?wait=true"
    cases = [
        ({"a": {"b": {"c": {"d": {}}}}}, "--max-payload-depth"),
        ({"a": list(range(100))}, "--max-payload-values"),
        ({"a": "x" * 2100}, "--max-payload-kb"),
    ]
    for payload, flag in cases:
        status, _, b = c.put(up, {"points": [{"id": 2, "vector": VEC, "payload": {"ok": 1}},
                                             {"id": 3, "vector": VEC, "payload": payload}]})
        message = error_of(b)
        assert status == 400 and flag in message and "points[1].payload" in message, message
    assert scroll_all(c, "h") == before  # the whole request was refused: point 2 unchanged too
    # Exactly at each limit: accepted.
    for payload in [{"a": {"b": {"c": {"d": 1}}}}, {"a": list(range(98))}, {"a": "x" * (2048 - 8)}]:
        assert len(json.dumps(payload, separators=(",", ":"))) <= 2048
        c.ok("PUT", up, {"points": [{"id": 4, "vector": VEC, "payload": payload}]})
        assert c.ok("POST", "/collections/h/points", {"ids": [4]})[0]["payload"] == payload


def worst_payload(target_bytes: int, salt: int) -> str:
    """Compact JSON text of about target_bytes within the default limits (depth 32, 65,536 values):
    31 levels of nesting, 60,000 empty arrays and objects, and a string filling the rest."""
    deep = nested(30)
    empties = ",".join(["[]", "{}"] * 30000)
    head = '{"deep":' + deep + ',"wide":[' + empties + '],"salt":' + str(salt) + ',"fill":"'
    fill = "y" * (target_bytes - len(head) - 2)
    return head + fill + '"}'


def test_memory_follows_the_bytes_accepted(serve: Any) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "m", D, "Dot")
    vec = json.dumps(VEC)
    # Warm up the allocator and the database before the baseline.
    c.request("PUT", "/collections/m/points?wait=true",
              raw=('{"points":[{"id":0,"vector":' + vec + ',"payload":' + worst_payload(900_000, 0) + "}]}").encode())
    c.ok("DELETE", "/collections/m")
    create_collection(c, "m", D, "Dot")
    rss0 = s.rss_kib()
    accepted = 0
    for i in range(100):
        text = worst_payload(900_000, i)
        body = '{"points":[{"id":' + str(i) + ',"vector":' + vec + ',"payload":' + text + "}]}"
        status, _, b = c.request("PUT", "/collections/m/points?wait=true", raw=body.encode())
        assert status == 200, b
        accepted += len(text)
    rss1 = s.rss_kib()
    grown = (rss1 - rss0) * 1024
    print(f"100 payloads of {accepted / 100:,.0f} bytes: RSS {rss0} -> {rss1} KiB, "
          f"{grown / accepted:.2f}x the bytes accepted")
    assert grown <= 2 * accepted, (rss0, rss1, accepted)
    # Refused payloads cost nothing lasting: 10^6 empty arrays (over the values limit), deep ones,
    # and oversized ones, 100 of them.
    refused_bodies = [
        '{"points":[{"id":1,"vector":' + vec + ',"payload":{"a":[' + ",".join(["[]"] * 300_000) + "]}}]}",
        '{"points":[{"id":1,"vector":' + vec + ',"payload":{"a":' + nested(300_000) + "}}]}",
        '{"points":[{"id":1,"vector":' + vec + ',"payload":{"a":"' + "z" * 1_100_000 + '"}}]}',
    ]
    for i in range(100):
        status, _, b = c.request("PUT", "/collections/m/points?wait=true", raw=refused_bodies[i % 3].encode())
        assert status == 400, error_of(b)
    rss2 = s.rss_kib()
    print(f"100 refused payloads: RSS {rss1} -> {rss2} KiB")
    assert (rss2 - rss1) * 1024 <= 0.1 * accepted, (rss1, rss2)
    hit = c.ok("POST", "/collections/m/points/search", {"vector": VEC, "limit": 1, "with_payload": True})
    assert hit[0]["payload"]["salt"] == hit[0]["id"]


def fd_count(pid: int) -> int:
    """Open descriptors other than sockets: the search clients' connections close asynchronously.
    A descriptor listed and then closed before its link is read is not counted (it is gone)."""
    count = 0
    for f in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += 0 if os.readlink(f"/proc/{pid}/fd/{f}").startswith("socket:") else 1
        except FileNotFoundError:
            pass
    return count


def test_recovers_leak_no_descriptor_and_never_answer_404(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    X = setup_collection(c, rng)
    snap = c.ok("POST", "/collections/h/snapshots")["name"]
    stop = threading.Event()
    statuses: dict[int, int] = {}
    errors: list[str] = []

    def search_loop() -> None:
        sc = s.client(timeout=30)
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            status, headers, b = sc.post("/collections/h/points/search", {"vector": VEC, "limit": 1})
            statuses[status] = statuses.get(status, 0) + 1
            if status in (429, 503) and headers.get("retry-after") != "1":
                errors.append(f"{status} without Retry-After: {b}")
            elif status not in (200, 429, 503):
                errors.append(f"{status}: {b}")
        sc.close()

    # One recover first: it opens the files a steady state keeps open.
    assert c.ok("PUT", "/collections/h/snapshots/recover", {"location": snap}) is True
    fds0 = fd_count(s.pid)
    threads = [threading.Thread(target=search_loop) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(50):
            assert c.ok("PUT", "/collections/h/snapshots/recover", {"location": snap}) is True
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    fds1 = fd_count(s.pid)
    deleted = [os.readlink(f"/proc/{s.pid}/fd/{f}") for f in os.listdir(f"/proc/{s.pid}/fd")]
    deleted = [p for p in deleted if p.endswith("(deleted)")]
    print(f"50 recovers: {fds0} -> {fds1} open descriptors; searches meanwhile: {statuses}")
    assert fds1 == fds0 and not deleted, (fds0, fds1, deleted)
    assert not errors, errors[:5]
    assert statuses.get(200, 0) > 0, statuses
    got = scroll_all(c, "h")
    assert sorted(got) == list(range(1, 51))
    assert np.array_equal(np.asarray(got[7]["vector"], dtype=np.float32), X[6])


def test_recover_refuses_a_snapshot_with_a_hostile_payload(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    snap = c.ok("POST", "/collections/h/snapshots")["name"]
    folder = s.data_dir / "snapshots" / "h"
    nan = np.full(D, np.nan, dtype=np.float32).tobytes()
    huge = np.full(D, 3e38, dtype=np.float32).tobytes()
    for name, column, value in [("deep.snapshot", "payload", '{"a":' + nested(100_000) + "}"),
                                ("spaced.snapshot", "payload", '{"a": 1}'),
                                ("array.snapshot", "payload", "[1,2]"),
                                ("broken.snapshot", "payload", '{"a":'),
                                ("nan.snapshot", "vector", nan),
                                ("huge.snapshot", "vector", huge)]:
        (folder / name).write_bytes((folder / snap).read_bytes())
        con = sqlite3.connect(folder / name)
        con.execute(f"UPDATE points SET {column} = ? WHERE id = 3", (value,))
        con.commit()
        con.close()
        status, _, b = c.put("/collections/h/snapshots/recover", {"location": name})
        message = error_of(b)
        assert status == 400 and "point 3" in message and len(message) < 400, (name, message)
    assert_alive(c)


def test_timeout_past_the_clock_range_is_the_server_timeout(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    for t in ["1e10", "1e300", "9223372037"]:
        status, _, b = c.post(f"/collections/h/points/search?timeout={t}", {"vector": VEC, "limit": 1})
        assert status == 200, (t, b)
    status, _, b = c.post("/collections/h/points/search?timeout=inf", {"vector": VEC})
    assert status == 400 and "timeout" in error_of(b)


def test_vectors_whose_scores_overflow_are_refused(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    before = scroll_all(c, "h")
    big = [3.4e38, 3.4e38] + [0.0] * (D - 2)
    edge = [2.0**62] + [0.0] * (D - 1)  # squared norm 2^124: accepted
    for method, path, body in [
        ("PUT", "/collections/h/points?wait=true", {"points": [{"id": 9, "vector": big}]}),
        ("POST", "/collections/h/points/search", {"vector": big}),
        ("POST", "/collections/h/points/search", {"vector": [7e18] + [0.0] * (D - 1), "limit": 2}),
        ("POST", "/collections/h/points/search/batch", {"searches": [{"vector": VEC}, {"vector": big}]}),
    ]:
        status, _, b = c.request(method, path, body)
        assert status == 400 and "2^125" in error_of(b), (path, b)
    assert scroll_all(c, "h") == before
    c.ok("PUT", "/collections/h/points?wait=true", {"points": [{"id": 9, "vector": edge}]})
    for vector in [edge, [-(2.0**62)] + [0.0] * (D - 1)]:
        hits = c.ok("POST", "/collections/h/points/search", {"vector": vector, "limit": 6})
        assert all(h["score"] is not None and np.isfinite(h["score"]) for h in hits), hits


def test_unsupported_transfer_and_content_codings(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    body = json.dumps({"vector": VEC, "limit": 1}).encode()
    chunked = hex(len(body))[2:].encode() + b"\r\n" + body + b"\r\n0\r\n\r\n"
    head = b"POST /collections/h/points/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    for extra, payload, status in [
        (b"Transfer-Encoding: gzip, chunked\r\n", chunked, b"501"),
        (b"Transfer-Encoding: deflate,chunked\r\n", chunked, b"501"),
        (b"Content-Encoding: gzip\r\nContent-Length: " + str(len(body)).encode() + b"\r\n", body, b"501"),
        (b"Transfer-Encoding: chunked\r\n", chunked, b"200"),
        (b"Transfer-Encoding: Chunked\r\n", chunked, b"200"),
    ]:
        reply = raw_exchange(s.port, head + extra + b"Connection: close\r\n\r\n" + payload)
        assert reply.startswith(b"HTTP/1.1 " + status), (extra, reply[:300])
        if status == b"501":
            assert b"not supported" in reply, reply
    assert_alive(c)


def test_error_lines_quote_requests_short_and_escaped(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    evil = "\n\x1b[2J\x1b]0;owned\x07" + "A" * 100_000
    cases = [
        ("PUT", "/collections/h/points?wait=true", {"points": [{"id": evil, "vector": VEC}]}),
        ("POST", "/collections/h/points/search", {"vector": VEC, "filter": {evil: []}}),
        ("POST", "/collections/h/points/search", {"vector": VEC, evil: 1}),
        ("POST", "/collections/h/points/search", {"vector": VEC, "with_payload": evil}),
        ("POST", "/collections/h/points/search", {"vector": VEC, "with_payload": [[[evil[:50]]]] * 1000}),
        ("POST", "/collections/h/points/search?timeout=" + "9" * 5000 + "x", {"vector": VEC}),
        ("PUT", "/collections/new", {"vectors": {"size": 4, "distance": evil}}),
        ("PUT", "/collections/new", {"vectors": {"size": 4, "distance": "Dot"}, "index": evil}),
        ("PUT", "/collections/h/vector_index", {"index": "ivf_flat,nlist=" + evil}),
    ]
    for method, path, body in cases:
        status, _, b = c.request(method, path, body)
        message = error_of(b)
        assert status == 400, (path, message)
        assert len(message) < 600, (path, len(message))
        assert not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in message), (path, message)
    assert_alive(c)


def test_answers_are_bounded(serve: Any) -> None:
    s = serve("--max-response-mb", "1")
    c = s.client()
    create_collection(c, "r", D, "Dot")
    fill = "w" * 450_000
    upsert(c, "r", [1, 2, 3], np.eye(D, dtype=np.float32)[:3], [{"fill": fill}] * 3)
    q = {"vector": [1.0] * D}
    for method, path, body in [
        ("POST", "/collections/r/points/search", {**q, "limit": 3, "with_payload": True}),
        ("POST", "/collections/r/points/search/batch",
         {"searches": [{**q, "limit": 2, "with_payload": True}, {**q, "limit": 2, "with_payload": True}]}),
        ("POST", "/collections/r/points/scroll", {"limit": 3, "with_payload": True}),
        ("POST", "/collections/r/points", {"ids": [1, 2, 3], "with_payload": True}),
    ]:
        status, _, b = c.request(method, path, body)
        assert status == 400 and "--max-response-mb" in error_of(b), (path, b)
    assert len(c.ok("POST", "/collections/r/points/search", {**q, "limit": 2, "with_payload": True})) == 2
    assert len(c.ok("POST", "/collections/r/points/search", {**q, "limit": 3})) == 3
    assert len(c.ok("POST", "/collections/r/points/scroll", {"limit": 3, "with_payload": False})["points"]) == 3


def test_a_nul_byte_ends_nothing(serve: Any, rng: np.random.Generator) -> None:
    # nlohmann's parser stops at a NUL byte: without a check the rest of the body was ignored.
    s = serve()
    c = s.client()
    setup_collection(c, rng, 5)
    before = scroll_all(c, "h")
    good = json.dumps({"points": [{"id": 77, "vector": VEC}]}).encode()
    for method, path, raw in [("PUT", "/collections/h/points?wait=true", good + b"\0garbage"),
                              ("POST", "/collections/h/points/search", json.dumps({"vector": VEC}).encode() + b"\0x")]:
        status, _, b = c.request(method, path, raw=raw)
        assert status == 400 and "NUL byte" in error_of(b), b
    assert scroll_all(c, "h") == before
