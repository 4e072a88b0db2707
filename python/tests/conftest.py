"""Shared fixtures. The suite runs against the package on sys.path: the build tree's
(PYTHONPATH=<build>/python, as CTest runs it) or an installed wheel.

GPU tests carry the `gpu` marker and skip, saying why, unless this build has CUDA, a GPU is
visible and torch or CuPy is installed.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Iterator

import numpy as np
import pytest

import simkit

REPO = pathlib.Path(__file__).resolve().parents[2]


def _gpu_frameworks() -> list[str]:
    if not simkit.built_with_cuda() or not simkit.gpus():
        return []
    found = []
    try:
        import torch

        if torch.cuda.is_available():
            found.append("torch")
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            found.append("cupy")
    except Exception:  # noqa: BLE001 - no CuPy, or one without a driver
        pass
    return found


GPU_FRAMEWORKS = _gpu_frameworks()
GPU_SKIP_REASON = (
    "no GPU test: "
    + ("this simkit has no CUDA backend" if not simkit.built_with_cuda() else "no GPU visible or no torch/CuPy")
)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if GPU_FRAMEWORKS:
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    # Fresh inputs on every run; the seed is printed, and pytest shows it when a test fails.
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def digits_data() -> pathlib.Path:
    """The digits set, which ships with the repository (tests/data/README.md): never skipped."""
    path = pathlib.Path(os.environ.get("SIMKIT_TEST_DATA", REPO / "tests" / "data")) / "digits"
    assert (path / "digits_base.fvecs").exists(), f"{path}: the digits files ship with the repository"
    return path


@pytest.fixture(scope="session")
def wordnet_data() -> pathlib.Path:
    """The WordNet set, beside the checkout in ../shared/data; skipped where it is absent."""
    path = pathlib.Path(os.environ.get("SIMKIT_SHARED_DATA", REPO.parent / "shared" / "data")) / "wordnet"
    if not (path / "base_minilm_f16.npy").exists():
        pytest.skip(f"no WordNet data at {path}: run scripts/make-data.sh wordnet")
    return path


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("SIMKIT_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("SIMKIT_CLI is not set to the simkit binary (CTest sets it)")
    return path


@pytest.fixture(params=GPU_FRAMEWORKS or ["none"])
def gpu_framework(request: Any) -> Iterator[Any]:
    """The module ('torch' or 'cupy') whose GPU arrays a test feeds simkit."""
    if request.param == "none":
        pytest.skip(GPU_SKIP_REASON)
    yield __import__(request.param)
