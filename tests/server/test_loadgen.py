"""`simkit loadgen` against a stub server whose service times the test knows (stub_http.py):
exact percentiles, a stall reported with its real spread (coordinated omission), Poisson and
uniform gaps that pass a Kolmogorov-Smirnov test (and a wrong distribution that fails it), drops
instead of late sends, statuses counted apart, the server's batch sizes, bounded runtime, --plot.
"""
from __future__ import annotations

import csv
import json
import math
import os
import pathlib
import shutil
import subprocess
import time

import numpy as np
import pytest
from scipy import stats

from conftest import cli_path
from stub_http import StubServer


def nearest_rank(sorted_values: list[float], q: float) -> float:
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def loadgen(tmp_path: pathlib.Path, url: str, *args: str, timeout: float = 60,
            collection: str | None = "c") -> tuple[dict, list[dict], float, str]:
    queries = tmp_path / "q.npy"
    if not queries.exists():
        np.save(queries, np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32))
    out_json, out_csv = tmp_path / "run.json", tmp_path / "run.csv"
    named = ["--collection", collection] if collection is not None else []
    cmd = [cli_path(), "loadgen", "--url", url, *named, "--queries", str(queries),
           "--json", str(out_json), "--csv", str(out_csv), *args]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    return json.loads(out_json.read_text()), rows, elapsed, proc.stdout


def test_percentiles_match_the_servers_service_times(tmp_path: pathlib.Path) -> None:
    # Delays of 5..44 ms in a fixed cycle; the truth is what the stub measured for each answer.
    with StubServer(delay=lambda i: 0.005 + ((i * 37) % 40) * 0.001) as stub:
        report, rows, _, text = loadgen(tmp_path, stub.url, "--rate", "200", "--duration", "3", "--connections", "64")
        served = sorted(1000 * (answered - received) for i, received, answered, _ in stub.records if i > 0)
    lat = report["latency_ms"]
    assert report["status_200"] == len(served) == 600, text
    # The client's clock also counts the loopback and its own scheduling: a fraction of a ms on an
    # idle machine, a few ms on a loaded 2-core one (CI builds beside it), never tens.
    for name, q in (("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99)):
        truth = nearest_rank(served, q)
        assert abs(lat[name] - truth) <= max(3.0, 0.05 * truth), (name, lat[name], truth)
    assert abs(lat["mean"] - float(np.mean(served))) <= 3.0
    # The report's percentiles are exactly the nearest ranks of its per-request CSV rows.
    ok = sorted(float(r["latency_ms"]) for r in rows if r["status"] == "200")
    assert len(ok) == 600
    for name, q in (("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99)):
        assert abs(nearest_rank(ok, q) - lat[name]) < 1e-3, (name, nearest_rank(ok, q), lat[name])


def test_a_stall_shows_in_every_request_due_during_it(tmp_path: pathlib.Path) -> None:
    # At 200 req/s the stub freezes for 1 s when search 200 arrives (about 1 s into the run). An
    # open-loop generator keeps sending on schedule, so the ~200 requests due during the freeze
    # wait for its end: their latencies fall from ~1000 ms to ~0 with their scheduled time. A
    # closed-loop tool, which sends the next request only after the previous answer, would show
    # one slow request per connection and none of this.
    with StubServer(stall=(200, 1.0)) as stub:
        report, rows, _, text = loadgen(tmp_path, stub.url, "--rate", "200", "--duration", "3", "--connections", "512")
    assert report["status_200"] == 600 and report["dropped"] == 0, text
    lat = [(float(r["scheduled_s"]), float(r["latency_ms"])) for r in rows]
    # Requests scheduled in the first half second are left out: on a loaded machine the first ones
    # wait for their connections to open (over 100 ms), which is not the stall this test measures.
    slow = [(s, ms) for s, ms in lat if ms > 100 and s > 0.5]
    assert 160 <= len(slow) <= 205, len(slow)
    assert 85 <= sum(1 for _, ms in slow if ms > 500) <= 115
    assert 950 <= max(ms for _, ms in lat) <= 1100
    # Each stalled request waited until the same moment: scheduled time + latency is constant.
    ends = [s * 1000 + ms for s, ms in slow]
    assert max(ends) - min(ends) < 30, (min(ends), max(ends))
    assert report["latency_ms"]["p99"] >= 900 and report["latency_ms"]["p50"] < 50


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_poisson_gaps_are_exponential(tmp_path: pathlib.Path, seed: int) -> None:
    with StubServer() as stub:
        _, rows, _, _ = loadgen(tmp_path, stub.url, "--pattern", "poisson", "--rate", "1000", "--duration", "2",
                                "--seed", str(seed), "--connections", "128")
    gaps = np.diff(sorted(float(r["scheduled_s"]) for r in rows))
    assert len(gaps) > 1500
    assert stats.kstest(gaps, "expon", args=(0, 1 / 1000)).pvalue > 0.01
    # The test has power: the same gaps are not exponential with twice the mean.
    assert stats.kstest(gaps, "expon", args=(0, 1 / 500)).pvalue < 0.01


def test_random_gaps_are_uniform_and_constant_gaps_are_not_exponential(tmp_path: pathlib.Path) -> None:
    with StubServer() as stub:
        _, rows, _, _ = loadgen(tmp_path, stub.url, "--pattern", "random", "--min-gap", "0.001", "--max-gap", "0.003",
                                "--duration", "2", "--seed", "5")
        gaps = np.diff(sorted(float(r["scheduled_s"]) for r in rows))
        assert stats.kstest(gaps, "uniform", args=(0.001, 0.002)).pvalue > 0.01
        _, rows, _, _ = loadgen(tmp_path, stub.url, "--pattern", "constant", "--rate", "500", "--duration", "2")
    gaps = np.diff(sorted(float(r["scheduled_s"]) for r in rows))
    assert np.allclose(gaps, 0.002, atol=2e-6)
    assert stats.kstest(gaps, "expon", args=(0, 0.002)).pvalue < 0.01


def test_busy_connections_drop_requests_instead_of_sending_them_late(tmp_path: pathlib.Path) -> None:
    # 4 connections, 200 ms per answer: at most 20 answers/s against 100 offered.
    with StubServer(delay=lambda i: 0.2) as stub:
        report, rows, _, text = loadgen(tmp_path, stub.url, "--rate", "100", "--duration", "2", "--connections", "4")
    dropped = [r for r in rows if r["sent_s"] == ""]
    sent = [r for r in rows if r["sent_s"] != ""]
    assert report["dropped"] == len(dropped) and 140 <= len(dropped) <= 170, text
    assert all(r["status"] == "0" and r["latency_ms"] == "" for r in dropped)
    assert max(float(r["sent_s"]) - float(r["scheduled_s"]) for r in sent) < 0.05
    assert report["status_200"] == len(sent)


def test_statuses_and_the_servers_batch_sizes_are_reported(tmp_path: pathlib.Path) -> None:
    codes = {1: 503, 2: 504, 3: 418, 4: 429}
    with StubServer(status=lambda i: 200 if i == 0 else codes.get(i % 5, 200)) as stub:
        report, rows, _, text = loadgen(tmp_path, stub.url, "--rate", "250", "--duration", "2")
        statuses = [s for i, _, _, s in stub.records if i > 0]
        sizes = stub.batch_sizes[1:]  # the probe's batch came before loadgen's first /metrics
    assert report["status_200"] == statuses.count(200)
    assert report["status_503"] == statuses.count(503) == 100
    assert report["status_504"] == statuses.count(504) == 100
    assert report["status_429"] == statuses.count(429) == 100
    assert report["other_statuses"] == {"418": 100}
    assert "429 (queue full)" in text and "503 (unavailable)" in text and "504 (deadline)" in text
    batches = report["server_batches"]
    assert batches["batches"] == len(sizes) == 500
    assert abs(batches["mean_size"] - np.mean(sizes)) < 1e-6
    le = {b["le"]: b["count"] for b in batches["buckets"]}
    assert le[1] == sizes.count(1) and le[2] == sizes.count(1) + sizes.count(2) and le["+Inf"] == 500
    assert "server batches during the run" in text


def test_a_silent_server_cannot_stretch_the_run(tmp_path: pathlib.Path) -> None:
    # The probe is answered, then nothing: the run still ends at duration + drain.
    with StubServer(hang_after=0) as stub:
        report, rows, elapsed, text = loadgen(tmp_path, stub.url, "--rate", "50", "--duration", "1", "--drain", "1",
                                              "--connections", "100", timeout=30)
    assert elapsed < 8, elapsed
    assert report["status_200"] == 0 and report["timed_out"] == 50, text
    assert all(r["status"] == "0" for r in rows)


def test_plot_draws_the_histogram(tmp_path: pathlib.Path) -> None:
    python = os.environ.get("SIMKIT_PYTHON", "python3")
    if shutil.which(python) is None or subprocess.run([python, "-c", "import matplotlib"]).returncode != 0:
        pytest.skip(f"{python} has no matplotlib: --plot has nothing to draw with")
    with StubServer(delay=lambda i: 0.002) as stub:
        _, _, _, text = loadgen(tmp_path, stub.url, "--rate", "100", "--duration", "1", "--plot",
                                str(tmp_path / "hist.png"))
    assert (tmp_path / "hist.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob("hist.png.requests.csv")), "the temporary CSV was left behind"


def test_without_collection_the_servers_only_one_is_searched(tmp_path: pathlib.Path) -> None:
    with StubServer(collections=("wordnet",)) as stub:
        report, _, _, _ = loadgen(tmp_path, stub.url, "--rate", "50", "--duration", "1", collection=None)
        assert report["status_200"] == 50 and stub.paths == {"/collections/wordnet/points/search"}
    with StubServer(collections=("a", "b")) as stub:
        proc = subprocess.run([cli_path(), "loadgen", "--url", stub.url, "--queries", str(tmp_path / "q.npy"),
                               "--rate", "10", "--duration", "1"], capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0 and "2 collections ('a', 'b')" in proc.stderr, proc.stderr
        assert stub.records == []


def test_bad_outputs_are_refused_before_the_run(tmp_path: pathlib.Path) -> None:
    with StubServer() as stub:
        cmd = [cli_path(), "loadgen", "--url", stub.url, "--collection", "c", "--queries", str(tmp_path / "none.npy"),
               "--rate", "10", "--duration", "1", "--plot", str(tmp_path / "missing" / "h.png")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0 and "--plot" in proc.stderr, proc.stderr
        # An interpreter that cannot draw is found out before the run, not after it.
        cmd[-1] = str(tmp_path / "h.png")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                              env={**os.environ, "SIMKIT_PYTHON": str(tmp_path / "no-python")})
        assert proc.returncode != 0 and "matplotlib" in proc.stderr, proc.stderr
        assert stub.records == []  # nothing was sent
