"""Same results as the simkit command line on real data (ids identical): the digits that ship in
tests/data, and the WordNet set of ../shared/data where it is present."""

from __future__ import annotations

import pathlib
import subprocess

import numpy as np

import simkit


def _run(cli: str, *args: str) -> None:
    done = subprocess.run([cli, *args, "--device", "cpu"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"simkit {' '.join(args)}: {done.stderr}"


def test_digits_knn_matches_cli_and_truth(cli: str, digits_data: pathlib.Path, tmp_path: pathlib.Path) -> None:
    base = digits_data / "digits_base.fvecs"
    queries = digits_data / "digits_query.fvecs"
    _run(cli, "knn", "--base", str(base), "--queries", str(queries), "-k", "100", "--metric", "sqeuclidean", "--ids", f"{tmp_path}/ids.npy",
         "--distances", f"{tmp_path}/d.npy")
    D, I = simkit.knn(simkit.read(queries), simkit.read(base), 100, device="cpu")
    np.testing.assert_array_equal(I, np.load(f"{tmp_path}/ids.npy"))
    np.testing.assert_array_equal(D, np.load(f"{tmp_path}/d.npy"))
    truth = simkit.read(digits_data / "digits_groundtruth_sqeuclidean.ivecs")
    np.testing.assert_array_equal(I, truth)


def test_wordnet_knn_and_index_match_cli(cli: str, wordnet_data: pathlib.Path, tmp_path: pathlib.Path) -> None:
    wn = wordnet_data
    X = np.load(wn / "base_minilm_f16.npy")  # float16: simkit converts once to float32
    Q = np.load(wn / "queries_minilm_f16.npy")[:300].astype(np.float32)
    np.save(tmp_path / "q.npy", Q)
    np.save(tmp_path / "x.npy", X.astype(np.float32))
    _run(cli, "knn", "--base", str(tmp_path / "x.npy"), "--queries", str(tmp_path / "q.npy"), "-k", "10",
         "--metric", "cosine", "--ids", f"{tmp_path}/ids.npy")
    D, I = simkit.knn(Q, X, 10, "cosine", device="cpu")
    np.testing.assert_array_equal(I, np.load(f"{tmp_path}/ids.npy"))
    truth = simkit.read(wn / "groundtruth_cosine.ivecs")[:300, :10]
    assert (I == truth).mean() > 0.999  # the truth is float64 over the float16 values: near-ties may swap

    _run(cli, "index", "build", "--base", str(tmp_path / "x.npy"), "--type", "ivf_flat", "--nlist", "128",
         "--metric", "cosine", "--out", f"{tmp_path}/wn.simkit")
    _run(cli, "index", "search", "--index", f"{tmp_path}/wn.simkit", "--queries", str(tmp_path / "q.npy"), "-k",
         "10", "--nprobe", "8", "--ids", f"{tmp_path}/ivf_ids.npy")
    index = simkit.Index("ivf_flat,nlist=128", 384, "cosine")
    index.train(X, device="cpu")
    index.add(X)
    _, Ii = index.search(Q, 10, nprobe=8, device="cpu")
    np.testing.assert_array_equal(Ii, np.load(f"{tmp_path}/ivf_ids.npy"))
    loaded = simkit.Index.load(tmp_path / "wn.simkit")  # the CLI's file, read from Python
    np.testing.assert_array_equal(loaded.search(Q, 10, nprobe=8, device="cpu")[1], Ii)
