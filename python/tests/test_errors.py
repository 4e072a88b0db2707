"""Bad input raises the documented exception, naming the argument, and never crashes."""

from __future__ import annotations

import math
import signal
import threading
import time
from typing import Any, Callable

import numpy as np
import pytest

import simkit

Q = np.ones((3, 4), np.float32)
X = np.arange(40, dtype=np.float32).reshape(10, 4)
NAN = X.copy()
NAN[4, 2] = np.nan
INF = X.copy()
INF[0, 0] = np.inf


def _closed() -> simkit.Index:
    index = simkit.Index("flat", 4)
    index.close()
    return index


def _trained_twice() -> None:
    index = simkit.Index("ivf_flat,nlist=2", 4)
    index.train(X)
    index.add(X)
    index.train(X)


# (what, call, exception, a word the message must hold)
CASES: list[tuple[str, Callable[[], Any], type, str]] = [
    ("Q None", lambda: simkit.knn(None, X, 1), ValueError, "Q"),
    ("X None", lambda: simkit.knn(Q, None, 1), ValueError, "X"),
    ("Q strings", lambda: simkit.knn(np.array([["a"]]), X, 1), ValueError, "Q"),
    ("Q complex", lambda: simkit.knn(Q.astype(np.complex64), X, 1), ValueError, "Q"),
    ("Q object", lambda: simkit.knn([[1, "x"]], X, 1), ValueError, "Q"),
    ("Q 1-D", lambda: simkit.knn(np.ones(4, np.float32), X, 1), ValueError, "reshape"),
    ("Q 3-D", lambda: simkit.knn(np.ones((1, 3, 4), np.float32), X, 1), ValueError, "Q must be 2-D"),
    ("Q empty", lambda: simkit.knn(np.ones((0, 4), np.float32), X, 1), ValueError, "Q is empty"),
    ("X no columns", lambda: simkit.knn(Q, np.ones((10, 0), np.float32), 1), ValueError, "X is empty"),
    ("dims differ", lambda: simkit.knn(Q, np.ones((10, 5), np.float32), 1), ValueError, "dimension"),
    ("X NaN", lambda: simkit.knn(Q, NAN, 1), ValueError, "NaN"),
    ("Q Inf", lambda: simkit.knn(INF, X, 1), ValueError, "NaN or Inf"),
    ("k = 0", lambda: simkit.knn(Q, X, 0), ValueError, "k must be >= 1"),
    ("k > n", lambda: simkit.knn(Q, X, 11), ValueError, "exceeds"),
    ("k float", lambda: simkit.knn(Q, X, 2.5), ValueError, "k must be an integer"),
    ("k bool", lambda: simkit.knn(Q, X, True), ValueError, "k must be an integer"),
    ("metric", lambda: simkit.knn(Q, X, 1, "cosinus"), ValueError, "metric"),
    ("metric None", lambda: simkit.knn(Q, X, 1, None), ValueError, "metric"),
    ("device", lambda: simkit.knn(Q, X, 1, device="tpu"), ValueError, "device"),
    ("threads", lambda: simkit.knn(Q, X, 1, threads=-1), ValueError, "threads"),
    ("gpu_memory", lambda: simkit.knn(Q, X, 1, gpu_memory=0), ValueError, "gpu_memory"),
    ("context type", lambda: simkit.knn(Q, X, 1, context="cpu"), ValueError, "Context"),
    ("pairwise NaN", lambda: simkit.pairwise(NAN, X), ValueError, "NaN"),
    ("gauss h", lambda: simkit.gauss(X, Q, 0.0), ValueError, "h"),
    ("gauss h NaN", lambda: simkit.gauss(X, Q, math.nan), ValueError, "h"),
    ("gauss eps", lambda: simkit.gauss(X, Q, 1.0, method="ifgt", eps=2.0), ValueError, "eps"),
    ("gauss weights", lambda: simkit.gauss(X, Q, 1.0, np.ones(3)), ValueError, "weight"),
    ("gauss method", lambda: simkit.gauss(X, Q, 1.0, method="fast"), ValueError, "method"),
    ("kde bandwidth", lambda: simkit.kde(X, Q, bandwidth="wide"), ValueError, "bandwidth"),
    ("kde sigma", lambda: simkit.kde(X, Q, bandwidth=-1.0), ValueError, "bandwidth"),
    ("kde weights", lambda: simkit.kde(X, Q, weights=-np.ones(10)), ValueError, "weights"),
    ("kmeans k > n", lambda: simkit.kmeans(X, 11), ValueError, "k"),
    ("kmeans metric", lambda: simkit.kmeans(X, 2, "l1"), ValueError, "metric"),
    ("kmeans init", lambda: simkit.kmeans(X, 2, init="best"), ValueError, "init"),
    ("kmeans init shape", lambda: simkit.kmeans(X, 2, init=np.ones((3, 4))), ValueError, "init"),
    ("kmeans NaN", lambda: simkit.kmeans(NAN, 2), ValueError, "NaN"),
    ("kmeans seed", lambda: simkit.kmeans(X, 2, seed=-1), ValueError, "seed"),
    ("kcenter k", lambda: simkit.kcenter(X, 0), ValueError, "k"),
    ("scan op", lambda: simkit.scan(np.ones(3), "mean"), ValueError, "op"),
    ("scan dtype", lambda: simkit.scan(np.ones(3, np.int16)), ValueError, "x must hold"),
    ("scan 2-D", lambda: simkit.scan(np.ones((2, 2))), ValueError, "1-D"),
    ("scan keyword", lambda: simkit.scan(np.ones(3), exclusiv=True), TypeError, "exclusiv"),
    ("segmented both", lambda: simkit.segmented_scan(np.ones(3), heads=[1, 0, 0], offsets=[0, 3]), ValueError,
     "exactly one"),
    ("segmented offsets", lambda: simkit.segmented_scan(np.ones(3), offsets=np.array([0, 5])), ValueError, "offset"),
    ("sort values length", lambda: simkit.sort(np.ones(3, np.float32), np.ones(2)), ValueError, "values"),
    ("sort float64 keys", lambda: simkit.sort(np.ones(3)), ValueError, "keys must hold"),
    ("merge mixed", lambda: simkit.merge(np.ones(2, np.int32), np.ones(2, np.int64)), ValueError, "same type"),
    ("merge half values", lambda: simkit.merge(np.ones(2, np.int32), np.ones(2, np.int32), np.ones(2)), ValueError,
     "together"),
    ("select_k k", lambda: simkit.select_k(np.ones((2, 3), np.float32), 4), ValueError, "exceeds"),
    ("spmv indices", lambda: simkit.spmv_csr(np.array([0, 1]), np.array([7]), np.ones(1), np.ones(3)), ValueError,
     "outside"),
    ("index kind", lambda: simkit.Index("diskann", 4), ValueError, "diskann"),
    ("index option", lambda: simkit.Index("ivf_flat,nlist=0", 4), ValueError, "nlist"),
    ("index dim", lambda: simkit.Index("flat", 0), ValueError, "dim"),
    ("index add dim", lambda: simkit.Index("flat", 5).add(X), ValueError, "dimension"),
    ("index add NaN", lambda: simkit.Index("flat", 4).add(NAN), ValueError, "NaN"),
    ("index ids length", lambda: simkit.Index("flat", 4).add(X, ids=[1, 2]), ValueError, "ids"),
    ("index ids float", lambda: simkit.Index("flat", 4).add(X, ids=np.ones(10)), ValueError, "integers"),
    ("index ids repeated", lambda: simkit.Index("flat", 4).add(X, ids=np.zeros(10, np.int64)), ValueError, "id"),
    ("index untrained add", lambda: simkit.Index("ivf_flat,nlist=2", 4).add(X), ValueError, "train"),
    ("index train twice", _trained_twice, ValueError, "train"),
    ("index nprobe", lambda: simkit.Index("flat", 4).search(Q, 1, nprobe="all"), ValueError, "nprobe"),
    ("index nprobe 0", lambda: simkit.Index("flat", 4).search(Q, 1, nprobe=0), ValueError, "nprobe"),
    ("index k", lambda: simkit.Index("flat", 4).search(Q, 0), ValueError, "k"),
    ("index closed", lambda: _closed().search(Q, 1), ValueError, "closed"),
    ("index load missing", lambda: simkit.Index.load("/nonexistent/a.simkit"), OSError, "a.simkit"),
    ("read missing", lambda: simkit.read("/nonexistent/a.fvecs"), OSError, "a.fvecs"),
    ("write dir", lambda: simkit.write("/nonexistent/dir/a.npy", X), OSError, "nonexistent"),
    ("write dtype", lambda: simkit.write("/tmp/a.npy", np.array([["s"]])), ValueError, "numbers"),
    ("context device", lambda: simkit.Context(device="quantum"), ValueError, "device"),
]


@pytest.mark.parametrize("what,call,exc,word", CASES, ids=[c[0] for c in CASES])
def test_bad_input(what: str, call: Callable[[], Any], exc: type, word: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert word.lower() in str(info.value).lower(), f"{what}: '{info.value}' does not mention '{word}'"


def test_gpu_request_without_gpu() -> None:
    if simkit.built_with_cuda() and simkit.gpus():
        pytest.skip("a GPU is visible")
    with pytest.raises(RuntimeError):
        simkit.knn(Q, X, 1, device="gpu")


def test_corrupted_index_file_raises_oserror(tmp_path: object) -> None:
    index = simkit.Index("flat", 4)
    index.add(X)
    path = f"{tmp_path}/x.simkit"
    index.save(path)
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) // 2] ^= 0x40
    open(path, "wb").write(bytes(raw))
    with pytest.raises(OSError):
        simkit.Index.load(path)
    with pytest.raises(OSError):
        open(path, "wb").write(bytes(raw[:100]))
        simkit.Index.load(path)


class _Interrupted(Exception):
    pass


def test_ctrl_c_interrupts_a_long_call(rng: np.random.Generator) -> None:
    # A signal handler that raises, delivered while a ~10 s k-NN runs: the call must give up
    # between tiles, well before it would have finished.
    X = rng.standard_normal((200000, 256), dtype=np.float32)
    Qs = rng.standard_normal((8000, 256), dtype=np.float32)

    def handler(signum: int, frame: Any) -> None:
        raise _Interrupted()

    previous = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1))
    t0 = time.monotonic()
    try:
        timer.start()
        with pytest.raises(_Interrupted):
            simkit.knn(Qs, X, 10, device="cpu")
            time.sleep(5)  # the call ended before the signal: fail below, not in pytest
        elapsed = time.monotonic() - t0
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert elapsed < 2.0, f"the interrupt took {elapsed:.2f} s to stop the call"
    np.testing.assert_array_equal(simkit.knn(Qs[:2], X[:100], 1, device="cpu")[1][:, 0].shape, (2,))  # still usable
