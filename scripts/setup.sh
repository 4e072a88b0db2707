#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test simkit, and nothing else.
# Idempotent: packages already installed are left alone, and when none is missing apt is not run
# at all (so it needs neither the network nor root). Uses sudo when not run as root.
#
# The CUDA backend additionally needs NVIDIA's CUDA toolkit (nvcc, cuBLAS; 12.x or later), which
# Debian does not package in a usable version: without it the build is CPU-only.
set -euo pipefail

packages=(
  build-essential     # g++ 12 (C++20) with libgomp (OpenMP)
  cmake               # >= 3.25 (Debian 12 has 3.25.1)
  ninja-build
  pkg-config
  libopenblas-dev     # CBLAS for the CPU backend
  libcli11-dev        # the simkit command line
  libtbb-dev          # std::execution::par runs in parallel (the CPU peer of `bench primitives`)
  libgtest-dev libgmock-dev
  nlohmann-json3-dev libfmt-dev libbenchmark-dev
  clang-format        # the formatting test (scripts/check-format.sh)
  clang libclang-rt-14-dev libomp-dev  # scripts/fuzz.sh: libFuzzer + sanitizer runtimes, clang's OpenMP
  libboost1.81-dev libsqlite3-dev prometheus-cpp-dev  # `simkit serve`: Beast/Asio, the point store, /metrics
  libyaml-cpp-dev     # `simkit serve --config FILE`
  libsimdjson-dev     # `simkit serve`: the upsert bodies' fast reader
  python3-dev python3-venv  # the Python package: headers for the extension module, .venv below
  ocl-icd-opencl-dev opencl-clhpp-headers pocl-opencl-icd  # OpenCL merge sort: ICD loader, C++ bindings, PoCL (CPU)
  libopenmpi-dev openmpi-bin  # MPI ranks: libsimkit_mpi, `mpirun -n P simkit knn` and its tests
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
else
  if ! command -v apt-get >/dev/null; then
    echo "setup: apt-get not found; install these packages by other means: ${missing[*]}" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The Python side comes from PyPI (nanobind, scikit-build-core, numpy, pytest, mypy) into .venv/,
# which scripts/build.sh hands to CMake. pip contacts PyPI only for what is missing.
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/.venv/bin/python" ]; then
  echo "setup: creating $root/.venv"
  python3 -m venv "$root/.venv"
fi
"$root/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/python/requirements-dev.txt"
echo "setup: Python packages in .venv: $("$root/.venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null |
  awk '$1 ~ /^(nanobind|scikit_build_core|numpy|scipy|pytest|mypy)$/ {printf "%s %s  ", $1, $2}')"

if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  if nvidia-smi -L 2>/dev/null | grep -q "GPU 0"; then
    echo "setup: CUDA toolkit and a GPU found: the CUDA backend will be built for it"
  else
    echo "setup: CUDA toolkit found but no GPU: CPU-only build unless scripts/build.sh -DSIMKIT_CUDA=ON"
  fi
else
  echo "setup: no nvcc: the build will be CPU-only (install NVIDIA's CUDA toolkit for the GPU backend)"
fi
