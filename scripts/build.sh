#!/usr/bin/env bash
# Configures and builds simkit (library, `simkit` command line, tests) in build/ as Release.
# The CUDA backend is built when nvcc is found (on PATH or in /usr/local/cuda/bin) and a GPU is
# visible (SIMKIT_CUDA=AUTO, for that GPU's architecture); -DSIMKIT_CUDA=ON builds it without a
# GPU, for the architectures 80;86;89;90 unless -DCMAKE_CUDA_ARCHITECTURES says otherwise.
#
#   scripts/build.sh [more cmake options, e.g. -DSIMKIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90]
# Environment: SIMKIT_BUILD_DIR (default: build), SIMKIT_WERROR=ON (warnings are errors),
#              JOBS (parallel compile jobs; default: the number of CPUs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SIMKIT_BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

if ! command -v nvcc >/dev/null && [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
# The Python module is built with the interpreter scripts/setup.sh prepared (nanobind lives there).
python=()
if [ -x "$root/.venv/bin/python" ]; then
  python=(-DPython_EXECUTABLE="$root/.venv/bin/python")
fi
cmake -S "$root" -B "$build" "${generator[@]}" "${python[@]}" -DCMAKE_BUILD_TYPE=Release -DSIMKIT_WERROR="${SIMKIT_WERROR:-OFF}" "$@"
cmake --build "$build" -j "$jobs"
