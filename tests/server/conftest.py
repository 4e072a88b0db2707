"""Fixtures of the `simkit serve` integration tests (tests/server/README is this docstring).

Every test starts its own servers through `serve(...)`: `simkit serve --data-dir TMP --port 0
--device cpu [extra args]` on loopback, the port read from the "listening on http://HOST:PORT"
line. The server listens before its collections are open, so start() (and restart()) then waits
until GET /readyz answers 200: a test's server has its collections (serve(..., wait_ready=False)
returns at "listening" instead, for tests of the loading itself). At the end of the test each
server still running gets SIGTERM and must exit with status 0 (a clean drain); a test may stop(),
kill() (SIGKILL) and restart() one itself. serve(..., env={...}) adds environment variables.

A test module that sets SERVE_LAUNCHER (a command prefix such as ["mpirun", "-n", "3"]) gets its
servers started under it (test_mpi_serve.py: the sharded server). Then pid is rank 0's, SIGTERM
goes to rank 0 (the server drains and stops every rank; the launcher must exit 0), and kill()
SIGKILLs the launcher and every rank at once.

The binary is $SIMKIT_CLI (CTest sets it to the build's simkit). Inputs are fresh random
numbers on every run; the seed is printed (pytest shows it when a test fails) and
SIMKIT_TEST_SEED=<seed> replays one. Only the standard library talks HTTP (http.client).
"""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
from typing import Any, Iterator

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0  # to "listening", and again to ready: a restart loads every collection
STOP_TIMEOUT_S = 60.0


def cli_path() -> str:
    path = os.environ.get("SIMKIT_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SIMKIT_CLI must name the simkit binary (CTest sets it; e.g. SIMKIT_CLI=build/apps/cli/simkit)")
    return path


try:
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: no dlopen between fork and exec
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent() -> None:
    # A server outlives nothing: if pytest itself is killed (a CTest timeout), so is the server.
    # PR_SET_PDEATHSIG fires when the starting thread ends: servers are started from the main thread.
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Client:
    """One keep-alive HTTP/1.1 connection; JSON in, (status, headers, body) out.

    headers: a dict with lower-case names; body: the parsed JSON, or the text when it is not JSON.
    """

    def __init__(self, port: int, api_key: str | None = None, timeout: float = 60.0) -> None:
        self.port = port
        self.api_key = api_key
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        h = {"Content-Type": "application/json"}
        if self.api_key is not None:
            h["api-key"] = self.api_key
        h.update(headers or {})
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            self.conn.request(method, path, body=data, headers=h)
            r = self.conn.getresponse()
            payload = r.read()
        except Exception:
            self.close()
            raise
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if r.will_close:
            self.close()
        text = payload.decode("utf-8", errors="replace")
        try:
            parsed: Any = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return r.status, hdrs, parsed

    # Shorthands that expect success and return the "result".
    def ok(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        status, _, b = self.request(method, path, body)
        assert status == expect, f"{method} {path}: {status} {b}"
        assert isinstance(b, dict) and b.get("status") == "ok", b
        assert isinstance(b.get("time"), (int, float)) and b["time"] >= 0, b
        return b["result"]

    def get(self, path: str) -> tuple[int, dict[str, str], Any]:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        return self.request("PUT", path, body)

    def delete(self, path: str) -> tuple[int, dict[str, str], Any]:
        return self.request("DELETE", path)


class Server:
    """One `simkit serve` process on a data directory; restart() reuses the directory."""

    def __init__(self, data_dir: pathlib.Path, log_dir: pathlib.Path, args: list[str], api_key: str | None,
                 env: dict[str, str] | None = None, wait_ready: bool = True,
                 launcher: list[str] | None = None) -> None:
        self.launcher = list(launcher or [])  # e.g. mpirun -n 3: the server is rank 0 of its processes
        self.data_dir = data_dir
        self.log_dir = log_dir
        self.args = args
        self.api_key = api_key
        self.env = dict(env or {})  # added to this process's environment at each start
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0
        self.clients: list[Client] = []
        self.start(wait_ready=wait_ready)

    # --- lifecycle ---
    def start(self, wait_ready: bool = True) -> None:
        """Starts the process and returns once it listens and, with wait_ready, once /readyz is 200."""
        assert self.proc is None, "already running"
        self.starts += 1
        self.stdout_path = self.log_dir / f"serve-{self.starts}.out"
        self.stderr_path = self.log_dir / f"serve-{self.starts}.err"
        cmd = self.launcher + [cli_path(), "serve", "--data-dir", str(self.data_dir), "--port", "0"] + self.args
        if self.api_key is not None:
            cmd += ["--api-key", self.api_key]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         preexec_fn=_die_with_parent, env={**os.environ, **self.env})
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.stdout_path.read_text())
            if m:
                self.port = int(m.group(1))
                if wait_ready:
                    self.wait_ready()
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"simkit serve exited with {self.proc.returncode}: {self.stderr()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"simkit serve did not listen within {START_TIMEOUT_S} s: {self.stderr()}")
            time.sleep(0.01)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Polls GET /readyz (a fresh connection each time, closed) until it answers 200."""
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"simkit serve exited with {self.proc.returncode} before ready: {self.stderr()}")
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("GET", "/readyz", headers={"Connection": "close"})
                r = conn.getresponse()
                last = f"{r.status} {r.read()[:200]!r}"
                if r.status == 200:
                    return
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            finally:
                conn.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"simkit serve not ready within {timeout} s (last /readyz: {last}): {self.stderr()}")
            time.sleep(0.02)

    @property
    def pid(self) -> int:
        """The server's process: the launcher's rank 0 when there is a launcher."""
        assert self.proc is not None
        if not self.launcher:
            return self.proc.pid
        deadline = time.monotonic() + 10
        while True:
            ranks = self.rank_pids()
            if 0 in ranks:
                return ranks[0]
            assert time.monotonic() < deadline, f"no rank 0 under the launcher: {self.stderr()}"
            time.sleep(0.01)

    def rank_pids(self) -> dict[int, int]:
        """{rank: pid} of the launcher's processes (their OMPI_COMM_WORLD_RANK or PMI_RANK)."""
        assert self.proc is not None
        found: dict[int, int] = {}
        for pid in _descendants(self.proc.pid):
            try:
                env = pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            for var in env:
                name, _, value = var.partition(b"=")
                if name in (b"OMPI_COMM_WORLD_RANK", b"PMI_RANK") and value.isdigit():
                    found[int(value)] = pid
        return found

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stderr(self) -> str:
        """The stderr of the latest start."""
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def signal_term(self) -> None:
        """SIGTERM without waiting (wait_exit() collects the status)."""
        assert self.proc is not None
        if self.launcher:
            os.kill(self.pid, signal.SIGTERM)  # rank 0 drains, then stops every rank
        else:
            self.proc.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout: float = STOP_TIMEOUT_S) -> int:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"simkit serve did not exit within {timeout} s of SIGTERM: {self.stderr()}")
        self.proc = None
        self._close_clients()
        return code

    def stop(self) -> str:
        """SIGTERM, wait, assert exit status 0; returns that run's stderr."""
        self.signal_term()
        code = self.wait_exit()
        assert code == 0, f"simkit serve exited with {code} after SIGTERM: {self.stderr()}"
        return self.stderr()

    def kill(self) -> None:
        """SIGKILL: a crash at an arbitrary moment."""
        assert self.proc is not None
        ranks = list(self.rank_pids().values()) if self.launcher else []
        for pid in ranks:  # every process of the job at once, not only the launcher
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        assert self.proc.returncode == -signal.SIGKILL
        _wait_gone(ranks)
        self.proc = None
        self._close_clients()

    def restart(self, wait_ready: bool = True) -> None:
        if self.running():
            self.stop()
        self.proc = None
        self.start(wait_ready=wait_ready)

    def _close_clients(self) -> None:
        for c in self.clients:
            c.close()

    # --- talking to it ---
    def client(self, api_key: str | None = "default", timeout: float = 60.0) -> Client:
        c = Client(self.port, self.api_key if api_key == "default" else api_key, timeout)
        self.clients.append(c)
        return c

    def rss_kib(self, field: str = "VmRSS") -> int:
        for line in pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field} in /proc/{self.pid}/status")

    def metrics(self) -> str:
        status, _, body = self.client().get("/metrics")
        assert status == 200, body
        return str(body)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    # An assertion or error inside a helper thread fails its test instead of passing as a warning.
    here = pathlib.Path(__file__).parent
    for item in items:
        if pathlib.Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"))


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    """Waits until each process has died (gone, or a zombie its new parent has yet to reap)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            if stat[stat.rindex(")") + 2] == "Z":
                break
            assert time.monotonic() < deadline, f"process {pid} outlived SIGKILL"
            time.sleep(0.01)


@pytest.fixture
def serve(tmp_path: pathlib.Path, request: Any) -> Iterator[Any]:
    """serve(*args, api_key=None, data_dir=None, device="cpu", env=None, wait_ready=True, launcher=None) -> a
    running Server (under `launcher`, else the module's SERVE_LAUNCHER, if any); stopped (SIGTERM, status 0) at
    the end."""
    servers: list[Server] = []
    count = [0]

    def make(*args: str, api_key: str | None = None, data_dir: pathlib.Path | None = None, device: str = "cpu",
             env: dict[str, str] | None = None, wait_ready: bool = True, launcher: list[str] | None = None) -> Server:
        count[0] += 1
        root = tmp_path / f"server{count[0]}"
        logs = root / "logs"
        logs.mkdir(parents=True)
        extra = list(args)
        if device:
            extra += ["--device", device]
        s = Server(data_dir or root / "data", logs, extra, api_key, env=env, wait_ready=wait_ready,
                   launcher=launcher or getattr(request.module, "SERVE_LAUNCHER", None))
        servers.append(s)
        return s

    yield make
    failures = []
    for s in servers:
        if s.running():
            try:
                s.stop()
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, failures


@pytest.fixture
def rng() -> np.random.Generator:
    # Fresh inputs on every run; the seed is printed, and pytest shows it when a test fails.
    seed = int(os.environ.get("SIMKIT_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print(f"rng seed: {seed} (SIMKIT_TEST_SEED={seed} replays it)")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def cli() -> str:
    return cli_path()


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("SIMKIT_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not (path / "wordnet" / "base_minilm_f16.npy").exists():
        pytest.skip(f"no WordNet data at {path / 'wordnet'}: run scripts/make-data.sh wordnet")
    return path


# ---------------------------------------------------------------- helpers used by several files


def create_collection(c: Client, name: str, dim: int, distance: str = "Cosine", index: str | None = None) -> None:
    body: dict[str, Any] = {"vectors": {"size": dim, "distance": distance}}
    if index is not None:
        body["index"] = index
    assert c.ok("PUT", f"/collections/{name}", body) is True


def upsert(
    c: Client,
    name: str,
    ids: Any,
    vectors: np.ndarray,
    payloads: list[dict[str, Any] | None] | None = None,
    chunk: int = 2000,
) -> None:
    """Upserts in requests of at most `chunk` points, each acknowledged (wait=true)."""
    ids = [int(i) for i in ids]
    for lo in range(0, len(ids), chunk):
        points = []
        for j in range(lo, min(lo + chunk, len(ids))):
            p: dict[str, Any] = {"id": ids[j], "vector": vectors[j].astype(np.float32).tolist()}
            if payloads is not None and payloads[j] is not None:
                p["payload"] = payloads[j]
            points.append(p)
        r = c.ok("PUT", f"/collections/{name}/points?wait=true", {"points": points})
        assert r["status"] == "completed" and isinstance(r["operation_id"], int), r


def scroll_all(c: Client, name: str, with_vector: bool = True, page: int = 10000) -> dict[int, dict[str, Any]]:
    """Every point of the collection by id (scroll, page by page), bounded in pages."""
    out: dict[int, dict[str, Any]] = {}
    offset: int | None = None
    for _ in range(10000):
        body: dict[str, Any] = {"limit": page, "with_vector": with_vector, "with_payload": True}
        if offset is not None:
            body["offset"] = offset
        r = c.ok("POST", f"/collections/{name}/points/scroll", body)
        for p in r["points"]:
            assert p["id"] not in out, f"scroll returned {p['id']} twice"
            out[p["id"]] = p
        offset = r["next_page_offset"]
        if offset is None:
            return out
    raise AssertionError("scroll did not end")


def points_count(c: Client, name: str) -> int:
    return int(c.ok("GET", f"/collections/{name}")["points_count"])


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {'name{labels}': value} (labels as printed)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        out[key] = float(value)
    return out


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample: the sample named `name` whose labels include `labels`; 0 if absent."""
    for key, value in parse_metrics(text).items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
        if all(have.get(k) == v for k, v in labels.items()):
            return value
    return 0.0


def raw_exchange(port: int, data: bytes, timeout: float = 10.0, shut_write: bool = False) -> bytes:
    """Sends bytes on a fresh TCP connection and returns what comes back until the server closes
    it or `timeout` passes (a bounded read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):  # refused before all of it was sent
            pass
        if shut_write:
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:  # the server already closed it
                pass
        chunks = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                b = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        s.close()
