#!/usr/bin/env bash
# Configures and builds simkit (library, `simkit` command line, tests) in build/ as Release.
# The CUDA backend is built whenever nvcc is found (SIMKIT_CUDA=AUTO), on PATH or in
# /usr/local/cuda/bin.
#
#   scripts/build.sh [more cmake options, e.g. -DSIMKIT_CUDA=OFF]
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
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSIMKIT_WERROR="${SIMKIT_WERROR:-OFF}" "$@"
cmake --build "$build" -j "$jobs"
