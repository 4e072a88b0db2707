"""Operating `simkit serve`: settings from a YAML file and the environment (the command line wins
over the environment, which wins over the file), log levels, the access log, the probes /livez
and /readyz while collections load, SIGTERM during that load, and --print-routes.

Loading is slowed by SIMKIT_TEST_LOAD_DELAY_MS (test-only: each collection's load waits that
long first), so that "still loading" lasts long enough to be seen without a huge collection."""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
from datetime import datetime, timezone
from typing import Any

import numpy as np
from conftest import Client, create_collection, points_count, raw_exchange, upsert

D = 4
LOG_KEYS = {"time", "client", "method", "target", "status", "bytes", "ms", "route"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_cli(cli: str, args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def wait_for(predicate: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def settings_line(stderr: str) -> str:
    """The --log-level debug line that reports the settings the server ended up with."""
    m = re.search(r"simkit serve: (\d+ I/O threads, up to \d+ connections)", stderr)
    assert m, stderr
    return m.group(1)


# ---------------------------------------------------------------- settings


def test_config_file_env_and_flag_precedence(serve: Any, tmp_path: pathlib.Path) -> None:
    cfg = tmp_path / "simkit.yaml"
    cfg.write_text("# settings for the test\nio-threads: 3\nmax-connections: 111\nlog-level: debug\n")
    # Flag > environment > file.
    s = serve("--config", str(cfg), "--io-threads", "1", env={"SIMKIT_IO_THREADS": "2"})
    assert settings_line(s.stderr()) == "1 I/O threads, up to 111 connections"
    s.stop()
    # Environment > file.
    s = serve("--config", str(cfg), env={"SIMKIT_IO_THREADS": "2", "SIMKIT_MAX_CONNECTIONS": "222"})
    assert settings_line(s.stderr()) == "2 I/O threads, up to 222 connections"
    s.stop()
    # File > default, and the file's config reached the running server: 111 connections at most.
    s = serve("--config", str(cfg))
    assert settings_line(s.stderr()) == "3 I/O threads, up to 111 connections"
    # The environment's log level beats the file's debug: warn prints none of the info lines.
    s.stop()
    s = serve("--config", str(cfg), env={"SIMKIT_LOG_LEVEL": "warn"})
    err = s.stop()
    assert "I/O threads" not in err and "ready:" not in err and "stopped" not in err, err


def test_config_file_errors_name_file_line_and_key(cli: str, tmp_path: pathlib.Path) -> None:
    cases = [
        ("data-dir: ./d\nport: 6333\npot: 1\n", ["line 3", "unknown key 'pot'", "data-dir, host, port"]),
        ("data-dir: ./d\nmax_queue: 5\n", ["line 2", "'max_queue'", "did you mean 'max-queue'"]),
        ("port: abc\n", ["line 1", "port: 'abc' is refused"]),
        ("data-dir: ./d\n\nport: 70000\n", ["line 3", "port: '70000' is refused", "not in range"]),
        ("max-body-mb: [1, 2]\n", ["line 1", "max-body-mb must be one value, not a list"]),
        ("port:\n", ["line 1", "port has no value"]),
        ("port: 1\nhost: 127.0.0.1\nport: 2\n", ["line 3", "'port' is given twice (first on line 1)"]),
        ("log-level: loud\n", ["line 1", "log-level: 'loud' is refused"]),
        ("config: other.yaml\n", ["line 1", "'config' cannot be set in a config file"]),
        ("port: 1\n  host: : x\n", ["line 2", "not valid YAML"]),
        ("- port\n- 6333\n", ["line 1", "must be a mapping of option names to values"]),
    ]
    for i, (text, words) in enumerate(cases):
        cfg = tmp_path / f"bad{i}.yaml"
        cfg.write_text(text)
        r = run_cli(cli, ["serve", "--config", str(cfg), "--port", "0", "--device", "cpu"])
        assert r.returncode == 2, (text, r.returncode, r.stderr)
        assert "listening" not in r.stdout, r.stdout
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("simkit: error: --config"), r.stderr
        for w in [f"bad{i}.yaml", *words]:
            assert w in r.stderr, (text, w, r.stderr)
    r = run_cli(cli, ["serve", "--config", str(tmp_path / "missing.yaml")])
    assert r.returncode == 2 and "missing.yaml" in r.stderr and "cannot read it" in r.stderr, r.stderr
    # Without data-dir anywhere: the error says every place it may come from.
    r = run_cli(cli, ["serve", "--port", "0"], env={"SIMKIT_DATA_DIR": ""})
    assert r.returncode == 2 and "--data-dir is required" in r.stderr and "SIMKIT_DATA_DIR" in r.stderr, r.stderr


def test_environment_alone_configures_the_server(cli: str, tmp_path: pathlib.Path) -> None:
    port = free_port()
    data = tmp_path / "env-data"
    env = {"SIMKIT_DATA_DIR": str(data), "SIMKIT_PORT": str(port), "SIMKIT_DEVICE": "cpu", "SIMKIT_API_KEY": "k3y"}
    out = tmp_path / "out.txt"
    with open(out, "wb") as o:
        proc = subprocess.Popen([cli, "serve"], stdout=o, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env})
    try:
        wait_for(lambda: "listening on" in out.read_text() or proc.poll() is not None, "listening")
        assert f"listening on http://127.0.0.1:{port}" in out.read_text(), out.read_text()
        status, _, _ = Client(port).get("/collections")
        assert status == 401
        keyed = Client(port, api_key="k3y")
        wait_for(lambda: keyed.get("/readyz")[0] == 200, "ready")
        create_collection(keyed, "from_env", D)
        assert (data / "collections" / "from_env").is_dir()
        keyed.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"k3y" not in err


def test_help_names_each_settings_environment_variable(cli: str) -> None:
    r = run_cli(cli, ["serve", "--help"])
    assert r.returncode == 0, r.stderr
    options = re.findall(r"^  (--[a-z-]+)(.*)$", r.stdout, re.M)
    assert len(options) > 15, r.stdout
    for name, rest in options:
        if name in ("--help", "--print-routes"):
            continue
        env = "SIMKIT_" + name[2:].upper().replace("-", "_")
        assert f"(Env:{env})" in rest, (name, rest)
    assert "--config" in r.stdout and "max-queue: 1024" in r.stdout
    # serve's variables belong to serve: a bad one does not break another command.
    assert run_cli(cli, ["info"], env={"SIMKIT_PORT": "not-a-port"}).returncode == 0


def test_print_routes(cli: str) -> None:
    r = run_cli(cli, ["serve", "--print-routes"])
    assert r.returncode == 0, r.stderr
    routes = r.stdout.splitlines()
    assert len(routes) == len(set(routes)), routes
    for line in routes:
        assert re.fullmatch(r"(GET|PUT|POST|DELETE|PATCH) /[a-z0-9_/{}-]*", line), line
    for probe in ("GET /healthz", "GET /livez", "GET /readyz", "GET /metrics", "POST /collections/{name}/points/search"):
        assert probe in routes, routes


def test_log_level_error_is_quiet(serve: Any, tmp_path: pathlib.Path) -> None:
    s = serve("--log-level", "error")
    err = s.stop()
    assert "simkit serve:" not in err, err  # no collections, nothing went wrong: not one line
    # A collection's own lines follow the level too: "loaded" is info, shown by default only.
    data = tmp_path / "logged"
    s = serve(data_dir=data)
    s.client().ok("PUT", "/collections/q", {"vectors": {"size": 2, "distance": "Dot"}})
    s.restart()
    assert "collection q: 0 points" in s.stop()
    s = serve("--log-level", "error", data_dir=data)
    assert "collection q" not in s.stop()


# ---------------------------------------------------------------- access log


def read_log(path: pathlib.Path, count: int) -> list[dict[str, Any]]:
    """The first `count` lines, once written (the writer thread runs just behind the answers)."""
    wait_for(lambda: path.exists() and path.read_text().count("\n") >= count, f"{count} access log lines")
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        assert set(r) == LOG_KEYS, r
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r
        at = datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        assert abs((datetime.now(timezone.utc) - at).total_seconds()) < 120, r
        assert re.fullmatch(r"127\.0\.0\.1:\d+", r["client"]), r
        assert isinstance(r["ms"], (int, float)) and 0 <= r["ms"] < 60000, r
    return records


def test_access_log_lines(serve: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "access.log"
    s = serve("--access-log", str(path), api_key="sekrit-key")
    c = s.client()
    create_collection(c, "logged", D)
    upsert(c, "logged", [1, 2], np.ones((2, D), dtype=np.float32))
    # One answer whose exact body size we know.
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    conn.request("POST", "/collections/logged/points/search?timeout=5",
                 body=json.dumps({"vector": [1, 1, 1, 1], "limit": 1}), headers={"api-key": "sekrit-key"})
    search = conn.getresponse()
    search_bytes = len(search.read())
    conn.close()
    assert search.status == 200
    assert s.client(api_key=None).get("/collections/logged")[0] == 401
    long_target = "/" + "x" * 3000 + "?q=1"
    assert c.get(long_target)[0] == 404
    assert c.get('/odd"path\\?q="x"')[0] == 404  # quotes and backslashes, escaped in the line
    reply = raw_exchange(s.port, b"GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
    assert reply.startswith(b"HTTP/1.1 400"), reply[:100]
    reply = raw_exchange(s.port, b"PUT /collections/big HTTP/1.1\r\nHost: x\r\napi-key: sekrit-key\r\n"
                                 b"Content-Length: 99999999999\r\n\r\n", timeout=5)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]

    # At least: create (1 + the probes'), upsert, search, 401, 404, 400, 413.
    wait_for(lambda: path.exists() and "413" in path.read_text(), "the 413's line")
    records = read_log(path, path.read_text().count("\n"))
    by_route: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_route.setdefault(r["route"], []).append(r)
    assert any(r["target"] == "/readyz" and r["status"] == 200 for r in by_route["/readyz"])
    create = by_route["PUT /collections/{name}"][0]
    assert (create["method"], create["target"], create["status"]) == ("PUT", "/collections/logged", 200)
    hit = by_route["POST /collections/{name}/points/search"][0]
    assert hit["target"] == "/collections/logged/points/search?timeout=5" and hit["bytes"] == search_bytes, hit
    assert by_route["unauthorized"][0]["status"] == 401
    missing = by_route["not found"]
    assert missing[0]["status"] == 404 and missing[0]["target"] == long_target[:1000] + "...", missing[0]
    assert missing[1]["target"] == '/odd"path\\?q="x"', missing[1]
    refused = by_route["refused before routing"]
    malformed = [r for r in refused if r["status"] == 400]
    assert malformed and malformed[0]["method"] is None and malformed[0]["target"] is None, refused
    too_big = [r for r in refused if r["status"] == 413]
    assert too_big and too_big[0]["method"] == "PUT" and too_big[0]["target"] == "/collections/big", refused
    assert "sekrit-key" not in path.read_text()  # headers, the key among them, are never logged
    # Nothing else goes to the log: every line is a request.
    s.stop()
    assert len(path.read_text().splitlines()) >= len(records)


def test_access_log_to_stdout(serve: Any) -> None:
    s = serve("--access-log", "-")
    assert s.client().get("/livez")[0] == 200
    s.stop()
    lines = s.stdout_path.read_text().splitlines()
    assert lines[0].startswith("listening on"), lines
    records = [json.loads(line) for line in lines[1:]]
    assert any(r["route"] == "/livez" and r["status"] == 200 for r in records), records


# ---------------------------------------------------------------- loading, probes, SIGTERM


def make_collections(serve: Any, rng: np.random.Generator, names: list[str], n: int = 300) -> Any:
    s = serve()
    c = s.client()
    for name in names:
        create_collection(c, name, D, "Euclid")
        upsert(c, name, range(n), rng.standard_normal((n, D)).astype(np.float32))
    s.stop()
    return s


def test_readyz_while_collections_load(serve: Any, rng: np.random.Generator) -> None:
    s = make_collections(serve, rng, ["a", "b"])
    s.env["SIMKIT_TEST_LOAD_DELAY_MS"] = "1500"
    s.start(wait_ready=False)
    c = s.client()
    status, headers, body = c.get("/readyz")
    assert status == 503 and body["status"]["error"] == "loading collections", body
    assert headers.get("retry-after") == "1"
    assert c.get("/livez")[0] == 200 and c.get("/livez")[2]["result"] == "ok"
    assert c.get("/healthz")[0] == 200
    assert c.get("/metrics")[0] == 200
    for method, path in [("GET", "/collections"), ("GET", "/collections/a"), ("GET", "/collections/a/points/1"),
                         ("PUT", "/collections/new")]:
        status, headers, body = c.request(method, path, {"vectors": {"size": D, "distance": "Dot"}} if method == "PUT" else None)
        assert status == 503 and headers.get("retry-after") == "1", (path, status, body)
        assert "loading its collections" in body["status"]["error"], body
    assert c.get("/no/such/route")[0] == 404  # an unknown path is unknown whether loading or not
    s.wait_ready()
    assert c.ok("GET", "/readyz") == "ok"
    assert points_count(c, "a") == 300 and points_count(c, "b") == 300
    err = s.stderr()
    assert re.search(r"ready: 2 collections loaded in \d+\.\d\d s", err), err
    # "listening" came first, at once: the collections loaded after it, not before.
    assert err.index("collection a:") < err.index("ready:"), err


def test_sigterm_while_loading_exits_cleanly(serve: Any, rng: np.random.Generator) -> None:
    s = make_collections(serve, rng, ["a", "b", "c"])
    s.env["SIMKIT_TEST_LOAD_DELAY_MS"] = "2000"
    # Before the first collection is open.
    s.start(wait_ready=False)
    t0 = time.monotonic()
    err = s.stop()
    assert time.monotonic() - t0 < 10, err
    assert "loading stopped by the drain after 0 collections" in err and "stopped" in err, err
    # With one open and the next waiting: the open one is closed (its index saved) as at any exit.
    s.start(wait_ready=False)
    wait_for(lambda: "collection a:" in s.stderr(), "collection a loaded")
    err = s.stop()
    assert "loading stopped by the drain after 1 collections" in err, err
    # Nothing was lost: every collection loads whole, a's from the index saved at that stop.
    s.env.pop("SIMKIT_TEST_LOAD_DELAY_MS")
    s.start()
    c = s.client()
    assert [points_count(c, n) for n in ("a", "b", "c")] == [300, 300, 300]
    assert re.search(r"collection a: 300 points, index flat \(index-\d+\.simkit \+ 0 replayed\)", s.stderr()), s.stderr()


def test_a_collection_that_cannot_load_stops_the_server(serve: Any, rng: np.random.Generator) -> None:
    s = make_collections(serve, rng, ["good", "bad"], n=20)
    (s.data_dir / "collections" / "bad" / "points.sqlite").write_bytes(b"this is not a database" * 100)
    for side in ("points.sqlite-wal", "points.sqlite-shm"):
        (s.data_dir / "collections" / "bad" / side).unlink(missing_ok=True)
    s.start(wait_ready=False)
    code = s.wait_exit()
    err = s.stderr()
    assert code == 2, err
    assert "loading the collections failed" in err and "simkit: error:" in err, err
