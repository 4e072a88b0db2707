#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (fuzz/README.md) in their own build directory and runs
# each for a while on a scratch copy of its checked-in seed corpus: the corpus in the repository
# is never written to. Fails when any harness crashes, leaks, runs out of memory or times out;
# prints one table line per harness: executions, corpus size (entries, bytes) and the result.
#
#   scripts/fuzz.sh [SECONDS-PER-HARNESS (default 30)] [HARNESS...]     (default: every harness)
#
# Environment: SIMKIT_BUILD_DIR (default: build-fuzz), JOBS (compile jobs; default: the number of
#   CPUs), FUZZ_PARALLEL (harnesses run at once; default 1), FUZZ_WORK (scratch directory for
#   the corpora, logs and findings; default: a new one under /tmp, kept when a harness fails),
#   FUZZ_ARGS (more libFuzzer flags, e.g. -dict=... or -max_len=8192).
# Needs clang with libFuzzer and libomp (scripts/setup.sh installs clang, libclang-rt-14-dev and
# libomp-dev). CI (.ci/run) runs `scripts/fuzz.sh 30`.
#
# A finding leaves crash-*/leak-*/timeout-*/oom-* files in FUZZ_WORK/<harness>/; reproduce it with
# build-fuzz/fuzz/<harness> FILE, and keep it as fuzz/regressions/<harness>/<name> (the CTest
# tests <harness>_corpus of the fuzz build run those once, with the corpus).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SIMKIT_BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}
seconds=${1:-30}
shift $(($# > 0 ? 1 : 0))
all=(fuzz_index_file fuzz_array_file fuzz_search_body fuzz_upsert_body fuzz_filter)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (scripts/setup.sh installs clang)" >&2; exit 1; }
done
generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
# Static library, so each harness is one instrumented program; the CLI stays configured (the
# server's library hangs off it) but only the harnesses are built.
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DSIMKIT_FUZZ=ON -DSIMKIT_SANITIZE=address,undefined -DSIMKIT_CUDA=OFF \
  -DSIMKIT_PYTHON=OFF -DSIMKIT_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DSIMKIT_INSTALL_CXX=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; rm -f "$build.configure.log"; exit 1; }
rm -f "$build.configure.log"
cmake --build "$build" -j "$jobs" --target "${harnesses[@]}"

work=${FUZZ_WORK:-$(mktemp -d /tmp/simkit-fuzz.XXXXXX)}
mkdir -p "$work"
# One thread each: the harnesses' searches are tiny, and threads would only share the cores the
# parallel harnesses need. Leaks are findings (libFuzzer's -detect_leaks=1 is the default).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

run_one() {
  local name=$1 dir=$work/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # The seeds, and the reproducers of past findings, which must stay fixed.
  local seeds
  for seeds in "$root/fuzz/corpus/$name" "$root/fuzz/regressions/$name"; do
    if [ -d "$seeds" ]; then cp -r "$seeds/." "$dir/corpus/"; fi
  done
  local rc=0
  # shellcheck disable=SC2086
  "$build/fuzz/$name" "$dir/corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$dir/artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

start=$(date +%s)
parallel=${FUZZ_PARALLEL:-1}
running=0
for name in "${harnesses[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
printf '%-18s %12s %9s %10s %9s  %s\n' harness executions exec/s corpus bytes result
for name in "${harnesses[@]}"; do
  dir=$work/$name
  rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  entries=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(du -sb "$dir/corpus" | cut -f1)
  findings=$(find "$dir/artifacts" -type f | wc -l)
  if [ "$rc" -eq 0 ] && [ "$findings" -eq 0 ]; then
    result=ok
  else
    result="FAILED (exit $rc, $findings finding(s) in $dir/artifacts; log: $dir/log)"
    status=1
  fi
  printf '%-18s %12s %9s %10s %9s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "$entries" "$bytes" "$result"
done
echo "fuzz: ${#harnesses[@]} harness(es), ${seconds} s each, $(($(date +%s) - start)) s in all; work: $work"
if [ "$status" -ne 0 ]; then
  for name in "${harnesses[@]}"; do
    [ "$(cat "$work/$name/rc" 2>/dev/null || echo 1)" -eq 0 ] && continue
    echo "==== $name (last 60 lines of $work/$name/log)"
    tail -60 "$work/$name/log"
  done
elif [ -z "${FUZZ_WORK:-}" ]; then
  rm -rf "$work"
fi
exit "$status"
