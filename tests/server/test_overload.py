"""Load shedding: a burst beyond --max-queue gets fast 429s (Retry-After) and costs no memory;
searches past their deadline get 504 and are never run; connections beyond --max-connections
get 503 at accept. After each, the server serves normally."""

from __future__ import annotations

import http.client
import json
import pathlib
import threading
import time
from typing import Any

import numpy as np
from conftest import Client, create_collection, metric, raw_exchange, upsert


def big_collection(s: Any, rng: np.random.Generator, n: int = 20011, d: int = 128) -> tuple[np.ndarray, np.ndarray]:
    c = s.client()
    create_collection(c, "big", d, "Euclid")
    X = rng.standard_normal((n, d)).astype(np.float32)
    upsert(c, "big", range(n), X, chunk=4000)
    c.close()
    Q = rng.standard_normal((16, d)).astype(np.float32)
    D2 = (Q.astype(np.float64) ** 2).sum(1)[:, None] + (X.astype(np.float64) ** 2).sum(1)[None, :] \
        - 2 * Q.astype(np.float64) @ X.T.astype(np.float64)
    return Q, D2.argmin(axis=1)


def reset_peak_rss(pid: int) -> bool:
    """Resets VmHWM to the current RSS (Linux >= 4.0); False where that is not allowed."""
    try:
        pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def test_burst_gets_fast_429s_and_no_memory(serve: Any, rng: np.random.Generator) -> None:
    s = serve("--max-queue", "8", "--max-batch", "1", "--max-delay-us", "0")
    Q, best = big_collection(s, rng)
    burst = 400
    before_metrics = s.metrics()
    rss_before = s.rss_kib()
    hwm_reset = reset_peak_rss(s.pid)
    peak = [rss_before]
    sampling = threading.Event()

    def sampler() -> None:
        for _ in range(100000):  # bounded; every 2 ms while the burst runs
            if sampling.is_set():
                return
            try:
                peak[0] = max(peak[0], s.rss_kib())
            except (OSError, AssertionError):
                return
            time.sleep(0.002)

    results: list[tuple[Any, ...]] = []
    rlock = threading.Lock()
    barrier = threading.Barrier(burst + 1)

    def one(i: int) -> None:
        q = i % len(Q)
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        try:
            conn.connect()
            barrier.wait(timeout=60)
            conn.request("POST", "/collections/big/points/search", body=json.dumps({"vector": Q[q].tolist(), "limit": 1}),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            with rlock:
                results.append((r.status, r.getheader("Retry-After"), json.loads(body), q))
        except Exception as e:  # noqa: BLE001 - counted as a failure below
            with rlock:
                results.append(("error", repr(e), None, q))
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(burst)]
    for t in threads:
        t.start()
    watch = threading.Thread(target=sampler)
    watch.start()
    barrier.wait(timeout=60)
    t0 = time.monotonic()
    for t in threads:
        t.join(timeout=120)
    elapsed = time.monotonic() - t0
    sampling.set()
    watch.join(timeout=10)
    rss_peak = max(peak[0], s.rss_kib("VmHWM") if hwm_reset else 0)
    rss_after = s.rss_kib()

    assert len(results) == burst
    errors = [r for r in results if r[0] == "error"]
    assert not errors, errors[:3]
    ok = [r for r in results if r[0] == 200]
    shed = [r for r in results if r[0] == 429]
    others = [r for r in results if r[0] not in (200, 429)]
    print(f"burst of {burst}: {len(ok)} answered 200, {len(shed)} answered 429 in {elapsed:.2f} s; "
          f"server RSS {rss_before / 1024:.1f} MiB before, peak {rss_peak / 1024:.1f} MiB "
          f"({'VmHWM reset + ' if hwm_reset else ''}sampled), {rss_after / 1024:.1f} MiB after")
    assert not others, others[:3]
    assert len(shed) > 0, "no 429 although the burst was 50 times --max-queue"
    assert len(ok) >= 8
    for status, retry, body, q in shed:
        assert retry == "1", (status, retry, body)
        assert "queue" in body["status"]["error"] and "full" in body["status"]["error"], body
    for status, retry, body, q in ok:
        assert body["result"][0]["id"] == int(best[q]), (q, body)
    assert (rss_peak - rss_before) < 200 * 1024, f"RSS grew by {(rss_peak - rss_before) / 1024:.0f} MiB during the burst"
    after_metrics = s.metrics()
    shed_count = metric(after_metrics, "simkit_rejected_total", reason="queue_full") - \
        metric(before_metrics, "simkit_rejected_total", reason="queue_full")
    assert shed_count == len(shed)
    ran = metric(after_metrics, "simkit_batch_size_sum") - metric(before_metrics, "simkit_batch_size_sum")
    assert ran == len(ok), "a refused search ran, or an answered one did not"
    # Serves normally afterwards.
    c = s.client()
    status, _, body = c.get("/healthz")
    assert status == 200 and body["result"] == "ok"
    for q in range(len(Q)):
        hits = c.ok("POST", "/collections/big/points/search", {"vector": Q[q].tolist(), "limit": 1})
        assert hits[0]["id"] == int(best[q])
    assert c.ok("GET", "/collections/big")["queue_depth"] == 0


def test_deadline_gets_504_and_never_runs(serve: Any, rng: np.random.Generator) -> None:
    s = serve("--max-queue", "2000", "--max-batch", "1", "--max-delay-us", "0")
    Q, best = big_collection(s, rng, n=10007, d=96)
    c = s.client()
    busy = 1201  # searches queued ahead, run one by one: long enough on a fast machine too

    def expect_accounting(before: str, submitted: int, answered: int, expired: int) -> None:
        after = s.metrics()
        ran = metric(after, "simkit_batch_size_sum") - metric(before, "simkit_batch_size_sum")
        timed_out = metric(after, "simkit_rejected_total", reason="deadline") - \
            metric(before, "simkit_rejected_total", reason="deadline")
        print(f"{submitted} searches submitted: {int(ran)} ran, {int(timed_out)} expired in the queue")
        assert timed_out == expired
        assert ran == answered
        assert ran + timed_out == submitted, "a search both ran and expired, or neither"

    # ?timeout=0.001 behind a busy queue: 504, never run.
    before = s.metrics()
    long_reply: dict[str, Any] = {}

    def long_batch() -> None:
        cc = Client(s.port, timeout=120)
        long_reply["r"] = cc.post("/collections/big/points/search/batch",
                                  {"searches": [{"vector": Q[i % len(Q)].tolist(), "limit": 1} for i in range(busy)]})
        cc.close()

    t = threading.Thread(target=long_batch)
    t.start()
    deadline = time.monotonic() + 60
    while c.ok("GET", "/collections/big")["queue_depth"] < busy // 2:
        assert time.monotonic() < deadline and t.is_alive(), f"the batch never queued: {long_reply}"
    late = 23
    statuses: list[int] = []
    messages: list[str] = []
    slock = threading.Lock()

    def late_search(i: int) -> None:
        cc = Client(s.port, timeout=120)
        status, _, body = cc.post("/collections/big/points/search?timeout=0.001", {"vector": Q[i % len(Q)].tolist()})
        cc.close()
        with slock:
            statuses.append(status)
            if status == 504:
                messages.append(body["status"]["error"])

    lates = [threading.Thread(target=late_search, args=(i,)) for i in range(late)]
    for lt in lates:
        lt.start()
    for lt in lates:
        lt.join(timeout=120)
    t.join(timeout=120)
    assert len(statuses) == late
    assert messages and all("deadline" in m and "not run" in m for m in messages), messages[:3]
    status, _, body = long_reply["r"]
    assert status == 200 and [h[0]["id"] for h in body["result"]] == [int(best[i % len(Q)]) for i in range(busy)]
    print(f"?timeout=0.001 behind {busy} queued searches: {statuses.count(504)} of {late} answered 504")
    assert statuses.count(504) + statuses.count(200) == late
    assert statuses.count(504) >= late - 2, statuses  # all but, at most, the last ones (queue drained)
    expect_accounting(before, busy + late, busy + statuses.count(200), statuses.count(504))

    # The server's own --timeout-ms: a batch whose searches wait longer expires, in part or whole.
    s.stop()
    s.args = ["--max-queue", "2000", "--max-batch", "1", "--max-delay-us", "0", "--timeout-ms", "30", "--device", "cpu"]
    s.start()
    c = s.client()
    before = s.metrics()
    status, _, body = c.post("/collections/big/points/search/batch",
                             {"searches": [{"vector": Q[i % len(Q)].tolist(), "limit": 1} for i in range(busy)]})
    assert status == 504 and "deadline" in body["status"]["error"], (status, body)
    after = s.metrics()
    expired = metric(after, "simkit_rejected_total", reason="deadline") - metric(before, "simkit_rejected_total", reason="deadline")
    ran = metric(after, "simkit_batch_size_sum") - metric(before, "simkit_batch_size_sum")
    print(f"--timeout-ms 30, batch of {busy}: {int(ran)} ran, {int(expired)} expired")
    assert expired > 0 and ran + expired == busy
    # Still serving: a lone search meets its deadline.
    hits = c.ok("POST", "/collections/big/points/search", {"vector": Q[0].tolist(), "limit": 1})
    assert hits[0]["id"] == int(best[0])


def test_connection_limit(serve: Any) -> None:
    s = serve("--max-connections", "4")
    held = [s.client() for _ in range(4)]
    for c in held:
        status, _, _ = c.get("/healthz")
        assert status == 200
    extra = []
    for _ in range(6):
        reply = raw_exchange(s.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", timeout=10)
        extra.append(reply)
    for reply in extra:
        assert reply.startswith(b"HTTP/1.1 503"), reply[:200]
        assert b"Retry-After: 1" in reply and b"too many open connections" in reply, reply
    # The held connections still work, and counted the refusals.
    status, _, text = held[0].get("/metrics")
    assert status == 200
    assert metric(text, "simkit_rejected_total", reason="connections") == 6
    for c in held:
        status, _, _ = c.get("/healthz")
        assert status == 200
    # Closing them frees their places.
    for c in held:
        c.close()
    deadline = time.monotonic() + 10
    for _ in range(1000):  # bounded: the server notices the closes asynchronously
        reply = raw_exchange(s.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=5)
        if reply.startswith(b"HTTP/1.1 200"):
            break
        assert time.monotonic() < deadline, reply[:200]
        time.sleep(0.05)
