#!/usr/bin/env bash
# On the lent GPU machine: builds simkit with other tile shapes of the primitives' kernels and
# times each build's `simkit bench primitives` beside CUB / cuSPARSE, to choose the shapes
# written in scan_kernels.cuh, merge_kernels.cuh and spmv.cu (each names the run that chose it).
#
#   bash scripts/tune-primitives.sh "NAME:FLAGS" ...     e.g. "scan24:-DSIMKIT_TUNE_SCAN_ITEMS=24"
#
# FLAGS are CUDA compiler flags overriding the SIMKIT_TUNE_* macros; one build per argument plus
# the default shapes ("base"). BENCH_ARGS (default: scan, merge, sort, spmv at 2^27, random)
# picks what each build runs. Logs go to $OUT/tune-NAME.txt, a summary to $OUT/tune.txt.
set -uo pipefail
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.deps/root/usr
prefix=()
if [ -d "$deps" ]; then
  prefix=(-DCMAKE_PREFIX_PATH="$deps" -DCMAKE_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu")
  export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}"
fi
read -ra bench_args <<<"${BENCH_ARGS:---cases scan,merge,sort,spmv --sizes 27 --inputs random}"
for spec in "base:" "$@"; do
  name=${spec%%:*} flags=${spec#*:}
  build=$root/build-tune-$name
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMKIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSIMKIT_TESTS=OFF -DCMAKE_CUDA_FLAGS="$flags" "${prefix[@]}" >"$OUT/tune-$name.txt" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target simkit_cli >>"$OUT/tune-$name.txt" 2>&1 ||
    { echo "$name: build failed" | tee -a "$OUT/tune.txt"; tail -20 "$OUT/tune-$name.txt"; continue; }
  echo "== $name ($flags)" | tee -a "$OUT/tune.txt"
  "$build/apps/cli/simkit" bench primitives --device gpu "${bench_args[@]}" 2>&1 | tee -a "$OUT/tune-$name.txt" |
    grep -E "^[a-z]|^ +(cub|cusparse)" | tee -a "$OUT/tune.txt"
done
