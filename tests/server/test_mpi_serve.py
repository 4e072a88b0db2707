"""`mpirun -n 3 simkit serve`: the server sharded over MPI ranks (docs/API.md, "Sharded over MPI
ranks"). It must keep the lone server's REST contract -- the tests of test_api.py, test_errors.py,
test_ops.py and test_qdrant_client.py named below run here unchanged against three ranks
(SERVE_LAUNCHER makes conftest's serve() start them under mpirun) -- and lose no acknowledged
write when the whole job, or one rank of it, is killed with SIGKILL.

Also here: the data directory's layout (a folder per rank, points placed by the documented hash,
a directory written for another number of ranks refused), ties broken by id across ranks, the
routes a sharded server refuses (snapshots: 501), and SIGTERM to mpirun stopping every rank.

Skipped when Open MPI's mpirun is missing (the options below are Open MPI's) or the build has
no MPI. The servers run without `timeout`: each
mpirun dies with pytest (PR_SET_PDEATHSIG, conftest.py), and its ranks follow it.
"""

from __future__ import annotations

import http.client
import os
import pathlib
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import uuid as uuidlib
from typing import Any

import numpy as np
import pytest
import test_api
from conftest import Client, _wait_gone, create_collection, points_count, scroll_all, upsert

RANKS = 3
MPIRUN = shutil.which("mpirun")
# Loopback TCP between the ranks (no shared-memory transport needed); more ranks than cores is fine.
SERVE_LAUNCHER = ([MPIRUN, "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                   "-n", str(RANKS)] if MPIRUN else None)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # three ranks share the machine's cores
if hasattr(os, "geteuid") and os.geteuid() == 0:  # Open MPI refuses root without both
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


@pytest.fixture(autouse=True, scope="module")
def mpi_build(cli: str) -> None:
    if MPIRUN is None:
        pytest.skip("no mpirun on PATH (scripts/setup.sh installs Open MPI)")
    version = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True, timeout=60).stdout
    if "Open MPI" not in version and "OpenRTE" not in version:
        pytest.skip(f"mpirun is not Open MPI's ({version.strip()[:80]!r}); these tests pass it Open MPI's options")
    info = subprocess.run([cli, "info"], capture_output=True, text=True, timeout=60).stdout
    if not re.search(r"MPI:\s+on", info):
        pytest.skip("this build has no MPI (cmake/SimkitMPI.cmake)")


# ---------------------------------------------------------------- the lone server's contract
#
# Imported, these run here, their servers under SERVE_LAUNCHER. Left out: what tests a lone
# server's own folder layout (test_collection_lifecycle; the sharded one is tested below),
# snapshots (501 here: test_snapshots_are_refused_with_501), /metrics counts of points and short
# searches (each rank counts its own; GET /metrics is rank 0's), per-process log lines, the
# WordNet build (test_index_build_in_background_then_restart_loads_it: time), and the crash and
# load tests, which have their sharded counterparts below.

from test_api import (  # noqa: E402,F401
    test_a_vector_index_build_racing_a_delete_never_kills_the_server,
    test_delete_collection_answers_queued_searches,
    test_filters_equal_brute_force,
    test_filters_read_payload_text_as_a_parser_would,
    test_hnsw_index_serves_and_hnsw_ef_widens_the_search,
    test_index_build_failure_is_reported,
    test_payload_operations_and_selectors,
    test_pipelined_requests_are_answered_in_order,
    test_points_upsert_get_retrieve_delete_scroll,
    test_tree_index_serves_exactly_through_writes_and_restart,
    test_uuid_and_integer_ids_live_side_by_side,
)
from test_errors import (  # noqa: E402,F401
    fx,
    test_api_key,
    test_body_limit,
    test_collections_refused,
    test_filters_refused,
    test_garbage_on_the_socket,
    test_malformed_and_non_object_bodies,
    test_payload_indexes_refused,
    test_point_id_beyond_int64_in_the_path,
    test_points_refused,
    test_routes_and_methods,
    test_search_parameters_refused,
    test_unknown_fields,
)
from test_ops import test_access_log_lines, test_log_level_error_is_quiet, test_readyz_while_collections_load  # noqa: E402,F401,I001


@pytest.mark.parametrize("distance,workers", [("Cosine", 1), ("Manhattan", 1), ("Dot", 3)],
                         ids=["Cosine", "Manhattan", "Dot-3-batch-workers"])
def test_search_equals_exact_knn(serve: Any, rng: np.random.Generator, cli: str, tmp_path: pathlib.Path,
                                 distance: str, workers: int) -> None:
    test_api.test_search_equals_exact_knn(serve, rng, cli, tmp_path, distance, workers)


def test_acknowledged_writes_are_visible_at_once(serve: Any, rng: np.random.Generator) -> None:
    test_api.test_acknowledged_writes_are_visible_at_once(serve, rng, 1)


try:
    import qdrant_client  # noqa: F401
except ImportError:  # pragma: no cover - setup.sh installs it
    qdrant_client = None

if qdrant_client is not None:
    from test_qdrant_client import (  # noqa: F401 - the fixture, its server started under SERVE_LAUNCHER
        client,
        test_a_tutorial_session_equals_numpy,
        test_overload_answers_429_and_the_client_retries,
    )


# ---------------------------------------------------------------- what is particular to ranks


def splitmix64(x: int) -> int:
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def owner(point_id: Any, ranks: int = RANKS) -> int:
    """The documented placement: splitmix64 of an integer id; of splitmix64(hi) ^ lo for a UUID."""
    if isinstance(point_id, int):
        return splitmix64(point_id) % ranks
    u = uuidlib.UUID(point_id).int
    return splitmix64(splitmix64(u >> 64) ^ (u & ((1 << 64) - 1))) % ranks


def rank_dir(data_dir: pathlib.Path, r: int) -> pathlib.Path:
    return data_dir / f"rank-{r}-of-{RANKS}"


def test_layout_placement_and_other_rank_counts_refused(serve: Any, rng: np.random.Generator, cli: str) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "placed", 4, "Dot")
    ids: list[Any] = [int(i) for i in rng.choice(1 << 40, size=200, replace=False)]
    ids += [str(uuidlib.UUID(bytes=rng.bytes(16))) for _ in range(40)]
    X = rng.standard_normal((len(ids), 4)).astype(np.float32)
    c.ok("PUT", "/collections/placed/points", {"points": [{"id": i, "vector": x.tolist()} for i, x in zip(ids, X)]})
    info = c.ok("GET", "/collections/placed")
    want = [sum(owner(i) == r for i in ids) for r in range(RANKS)]
    assert info["points_count"] == len(ids) and info["config"]["params"]["shard_number"] == RANKS
    assert [x["points_count"] for x in info["shards"]] == want, info["shards"]
    assert c.ok("DELETE", "/collections/placed") is True  # from every rank
    assert not [r for r in range(RANKS) if (rank_dir(s.data_dir, r) / "collections" / "placed").exists()]
    create_collection(c, "placed", 4, "Dot")
    c.ok("PUT", "/collections/placed/points", {"points": [{"id": i, "vector": x.tolist()} for i, x in zip(ids, X)]})
    s.stop()
    # Each rank's folder holds exactly the points the documented hash gives it.
    for r in range(RANKS):
        db = rank_dir(s.data_dir, r) / "collections" / "placed" / "points.sqlite"
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            stored = {row[1] or row[0] for row in conn.execute("SELECT id, uuid FROM points")}
        assert stored == {i for i in ids if owner(i) == r}, f"rank {r}"
    print(f"points per rank: {want}")
    # Another number of ranks, and a lone server, refuse the directory, saying why.
    env = {**os.environ}
    two = subprocess.run(SERVE_LAUNCHER[:-1] + ["2", cli, "serve", "--data-dir", str(s.data_dir), "--port", "0",
                                                "--device", "cpu"], capture_output=True, text=True, timeout=60, env=env)
    assert two.returncode != 0 and "holds the shards of a server of 3 MPI ranks" in two.stderr, two.stderr
    assert "mpirun -n 3 simkit serve" in two.stderr
    one = subprocess.run([cli, "serve", "--data-dir", str(s.data_dir), "--port", "0", "--device", "cpu"],
                         capture_output=True, text=True, timeout=60)
    assert one.returncode == 2 and "holds the shards of a server of 3 MPI ranks" in one.stderr, one.stderr
    lone = s.data_dir.parent / "lone"
    (lone / "collections" / "x").mkdir(parents=True)
    three = subprocess.run(SERVE_LAUNCHER + [cli, "serve", "--data-dir", str(lone), "--port", "0", "--device", "cpu"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert three.returncode != 0 and "holds the collections of a one-process server" in three.stderr, three.stderr
    # The same ranks start again on it, every point where it was.
    s.start()
    assert points_count(s.client(), "placed") == len(ids)


def test_ties_break_by_id_across_ranks(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "ties", 3, "Euclid")
    ints = sorted(int(i) for i in rng.choice(1 << 40, size=40, replace=False))
    uuids = sorted(str(uuidlib.UUID(bytes=rng.bytes(16))) for _ in range(10))
    assert len({owner(i) for i in ints}) == RANKS  # the tied points are spread over every rank
    points = [{"id": i, "vector": [1.0, 2.0, 3.0]} for i in ints + uuids]
    points.append({"id": 7, "vector": [1.0, 2.0, 3.5]})  # one worse point
    c.ok("PUT", "/collections/ties/points", {"points": points})
    hits = c.ok("POST", "/collections/ties/points/search", {"vector": [1.0, 2.0, 3.0], "limit": 45})
    # Equal scores: integer ids in order, then UUIDs by their text; then the worse point.
    assert [h["id"] for h in hits] == ints + uuids[:5], hits
    page = c.ok("POST", "/collections/ties/points/search", {"vector": [1.0, 2.0, 3.0], "limit": 5, "offset": 38})
    assert [h["id"] for h in page] == ints[38:] + uuids[:3]
    last = c.ok("POST", "/collections/ties/points/query", {"query": [1.0, 2.0, 3.0], "limit": 3, "offset": 49})
    assert [h["id"] for h in last["points"]] == [uuids[9], 7]


def test_snapshots_are_refused_with_501(serve: Any) -> None:
    s = serve()
    c = s.client()
    create_collection(c, "snap", 3, "Dot")
    for method, path, body in [("POST", "/collections/snap/snapshots", None),
                               ("GET", "/collections/snap/snapshots", None),
                               ("PUT", "/collections/snap/snapshots/recover", {"location": "x.snapshot"}),
                               ("GET", "/collections/snap/snapshots/x.snapshot", None),
                               ("DELETE", "/collections/snap/snapshots/x.snapshot", None)]:
        status, _, b = c.request(method, path, body)
        assert status == 501 and "not served by a sharded server" in b["status"]["error"], (method, path, b)
    # Aliases reach every rank: a search, a count and a write through one.
    c.ok("POST", "/collections/aliases", {"actions": [{"create_alias": {"collection_name": "snap", "alias_name": "al"}}]})
    c.ok("PUT", "/collections/al/points", {"points": [{"id": i, "vector": [1.0, float(i), 0.0]} for i in range(30)]})
    assert c.ok("POST", "/collections/al/points/count", {})["count"] == 30
    assert c.ok("POST", "/collections/al/points/search", {"vector": [0.0, 1.0, 0.0], "limit": 1})[0]["id"] == 29


def test_sigterm_to_mpirun_stops_every_rank(serve: Any, rng: np.random.Generator) -> None:
    # mpirun SIGKILLs the ranks odls_base_sigkill_timeout seconds after its SIGTERM (1 by default,
    # which an idle server needs a fraction of); 3 here, so that a busy test machine cannot cut
    # the drain short. mpirun then waits out the whole timeout before it exits.
    assert SERVE_LAUNCHER is not None
    s = serve(launcher=SERVE_LAUNCHER[:-2] + ["--mca", "odls_base_sigkill_timeout", "3"] + SERVE_LAUNCHER[-2:])
    c = s.client()
    create_collection(c, "term", 8, "Cosine")
    upsert(c, "term", range(500), rng.standard_normal((500, 8)).astype(np.float32))
    c.close()
    assert s.proc is not None
    s.proc.send_signal(signal.SIGTERM)  # mpirun: SIGTERM to every rank, SIGKILL 3 s later
    code = s.wait_exit()
    err = s.stderr()
    print(f"mpirun exited with {code} after SIGTERM")
    for r in range(RANKS):
        assert re.search(rf"rank {r} of {RANKS}\]: stopped", err), err
    s.start()
    for r in range(RANKS):  # each rank saved its index: nothing to replay
        assert re.search(rf"rank {r} of {RANKS}\]: collection term: \d+ points, index flat \(index-\d+\.simkit \+ 0 "
                         r"replayed\)", s.stderr()), s.stderr()
    assert points_count(s.client(), "term") == 500


# ---------------------------------------------------------------- kill -9


D = 6


def batch_points(b: int, rng: np.random.Generator) -> tuple[list[Any], np.ndarray]:
    """Batch b: integer ids b*8 .. b*8+size-1 and one UUID, so its points land on several ranks."""
    size = int(rng.integers(3, 7))
    ids: list[Any] = [b * 8 + j for j in range(size)] + [str(uuidlib.UUID(int=(b << 20) | 0xABC))]
    return ids, rng.standard_normal((len(ids), D)).astype(np.float32)


def write_until_killed(port: int, first: int, wrng: np.random.Generator, attempted: dict[int, Any], acked: set[int],
                       errors: list[str], stop: threading.Event) -> None:
    client = Client(port, timeout=30)
    try:
        for b in range(first, first + 3000):  # bounded; the kill or `stop` ends it sooner
            if stop.is_set():
                return
            ids, X = batch_points(b, wrng)
            attempted[b] = (ids, X)
            body = {"points": [{"id": i, "vector": x.tolist(), "payload": {"batch": b, "j": j}}
                               for j, (i, x) in enumerate(zip(ids, X))]}
            try:
                status, _, reply = client.put("/collections/crash/points?wait=true", body)
            except (OSError, http.client.HTTPException):
                return  # killed mid-request: this batch is unacknowledged
            if status != 200:
                errors.append(f"batch {b}: {status} {reply}")
                return
            acked.add(b)
    finally:
        client.close()


def test_kill9_loses_no_acknowledged_write(serve: Any, rng: np.random.Generator) -> None:
    s = serve()
    create_collection(s.client(), "crash", D, "Euclid")
    attempted: dict[int, tuple[list[Any], np.ndarray]] = {}
    acked: set[int] = set()
    errors: list[str] = []
    wrng = np.random.default_rng(rng.integers(1 << 63))
    kills = 4
    t0 = time.monotonic()
    for cycle in range(kills):
        stop = threading.Event()
        writer = threading.Thread(target=write_until_killed,
                                  args=(s.port, cycle * 3000, wrng, attempted, acked, errors, stop))
        writer.start()
        time.sleep(float(rng.uniform(0.4, 1.2)))
        if cycle % 2 == 0:
            s.kill()  # SIGKILL to mpirun and every rank at once
        else:
            # One rank dies: mpirun must end the job by itself (the other ranks with it).
            victim = s.rank_pids()[1 + cycle % (RANKS - 1)]
            ranks = list(s.rank_pids().values())
            os.kill(victim, signal.SIGKILL)
            assert s.proc is not None
            code = s.proc.wait(timeout=60)
            assert code != 0, "mpirun exited 0 although a rank was killed"
            for pid in ranks:
                try:
                    os.kill(pid, signal.SIGKILL)  # should be gone already; never leave one behind
                except ProcessLookupError:
                    pass
            _wait_gone(ranks)
            s.proc = None
        stop.set()
        writer.join(timeout=60)
        assert not writer.is_alive()
        s.start()
        c = s.client()
        stored = scroll_all(c, "crash")
        assert points_count(c, "crash") == len(stored)
        for b, (ids, X) in attempted.items():
            present = [i for i in ids if i in stored]
            if b in acked:
                assert len(present) == len(ids), f"acknowledged batch {b} lost {len(ids) - len(present)} points"
            for j, i in enumerate(ids):
                if i in stored:
                    p = stored[i]
                    assert p["payload"] == {"batch": b, "j": j}, (b, j, p)
                    assert np.array_equal(np.array(p["vector"], dtype=np.float32), X[j]), (b, j)
        assert not set(stored) - {i for ids, _ in attempted.values() for i in ids}, "points no request wrote"
        # The indexes each rank rebuilt find them: exact searches for sampled acknowledged points.
        for b in sorted(acked)[-3:]:
            ids, X = attempted[b]
            hit = c.ok("POST", "/collections/crash/points/search", {"vector": X[0].tolist(), "limit": 1})
            assert hit[0]["id"] == ids[0], (b, hit)
        c.close()
    assert not errors, errors[:3]
    points = sum(len(attempted[b][0]) for b in acked)
    print(f"kill -9: {kills} kills in {time.monotonic() - t0:.0f} s ({kills // 2} of the whole job, "
          f"{kills - kills // 2} of one rank); acknowledged writes: {len(acked)} ({points} points), lost: 0; "
          f"unacknowledged: {len(attempted) - len(acked)}")
    assert len(acked) >= 20, f"only {len(acked)} acknowledged writes: the writer hardly ran"
