#!/usr/bin/env bash
# Builds simkit (scripts/build.sh, same options and environment) and runs every test through
# CTest: the GoogleTest suites, the command-line contract, the digits acceptance run and the
# installed-package consumer. Tests labelled `gpu` skip themselves where no GPU is visible.
#
#   scripts/test.sh [more cmake options]        .ci/run: SIMKIT_WERROR=ON scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" "$@"
ctest --test-dir "${SIMKIT_BUILD_DIR:-$root/build}" --output-on-failure -j "${JOBS:-$(nproc)}"
