"""simkit.read / simkit.write: every format round trips; damaged files raise OSError."""

from __future__ import annotations

import numpy as np
import pytest

import simkit


@pytest.mark.parametrize("ext", [".npy", ".fvecs"])
def test_float_round_trip(rng: np.random.Generator, tmp_path: object, ext: str) -> None:
    X = rng.standard_normal((33, 7), dtype=np.float32)
    path = f"{tmp_path}/x{ext}"
    simkit.write(path, X)
    Y = simkit.read(path)
    assert Y.dtype == np.float32
    np.testing.assert_array_equal(Y, X)


def test_bvecs_and_ids(rng: np.random.Generator, tmp_path: object) -> None:
    B = rng.integers(0, 256, (9, 16)).astype(np.float32)
    simkit.write(f"{tmp_path}/b.bvecs", B)
    np.testing.assert_array_equal(simkit.read(f"{tmp_path}/b.bvecs"), B)
    ids = rng.integers(0, 2**31 - 1, (5, 3))
    for ext in (".ivecs", ".npy"):
        simkit.write(f"{tmp_path}/i{ext}", ids)
        got = simkit.read(f"{tmp_path}/i{ext}")
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ids)
    with pytest.raises(ValueError):
        simkit.write(f"{tmp_path}/big.ivecs", np.array([[2**40]]))  # does not fit int32


def test_damaged_files_raise_oserror(rng: np.random.Generator, tmp_path: object) -> None:
    path = f"{tmp_path}/x.fvecs"
    simkit.write(path, rng.standard_normal((10, 4), dtype=np.float32))
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-3])  # truncated
    with pytest.raises(OSError, match="x.fvecs"):
        simkit.read(path)
    with pytest.raises(OSError):
        simkit.read(f"{tmp_path}/missing.npy")
    np.save(f"{tmp_path}/t.npy", np.zeros((10, 4), np.float32))
    raw = open(f"{tmp_path}/t.npy", "rb").read()
    open(f"{tmp_path}/t.npy", "wb").write(raw[:-8])
    with pytest.raises(OSError):
        simkit.read(f"{tmp_path}/t.npy")
    with pytest.raises(ValueError, match="extension|format"):
        simkit.read(f"{tmp_path}/x.csv")


def test_failed_write_leaves_previous_file(rng: np.random.Generator, tmp_path: object) -> None:
    path = f"{tmp_path}/keep.bvecs"
    B = np.ones((2, 2), np.float32)
    simkit.write(path, B)
    with pytest.raises(ValueError):
        simkit.write(path, np.full((2, 2), 300.0, np.float32))  # not a byte
    np.testing.assert_array_equal(simkit.read(path), B)
