#!/usr/bin/env bash
# Fails when a C++/CUDA source differs from what clang-format (.clang-format) makes of it.
#   scripts/check-format.sh          check      scripts/check-format.sh --fix    rewrite in place
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find include src apps tests fuzz -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh')
fi
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
  echo "clang-format: ${#files[@]} files clean"
fi
