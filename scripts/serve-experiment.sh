#!/usr/bin/env bash
# The seed's serving experiment (seed 001, sections 2.3-2.4) on `simkit serve`: the WordNet
# collection, the seed's three arrival patterns (constant 1 req/s, random gaps of 0.1-2.0 s,
# Poisson 1 req/s) for 60 s each against --max-batch 1, the seed's batching (4 requests or 1 s)
# and the measured best, then a constant-rate sweep of each to past its saturation. Tables,
# CSVs and plots go to bench/results/ (bench/server/serve_experiment.py does the runs).
#
#   scripts/serve-experiment.sh [cpu|gpu] [all|patterns|sweep]      (default: cpu all)
#
# Environment: SIMKIT_CLI (default build/apps/cli/simkit), DATA_DIR (the server's data
# directory, default build/serve-experiment-data; WordNet is loaded into it once, about a
# minute), WORDNET_NPY (default ../shared/data/wordnet/base_minilm_f16.npy), PATTERN_SECONDS
# (60), SWEEP_SECONDS (12), PARALLEL=1 (the configurations' pattern runs side by side, each on
# a copy of the data), OUT_PREFIX (default bench/results/DATE-DEVICE-serve-experiment), LABEL.
set -euo pipefail
device=${1:-cpu}
phase=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${SIMKIT_CLI:-$root/build/apps/cli/simkit}
data=${DATA_DIR:-$root/build/serve-experiment-data}
wordnet=$root/../shared/data/wordnet
npy=${WORDNET_NPY:-$wordnet/base_minilm_f16.npy}
py=$(command -v python3)
[ -x "$root/.venv/bin/python" ] && py=$root/.venv/bin/python
[ -x "$cli" ] || { echo "serve-experiment: no $cli (build it: scripts/build.sh, or set SIMKIT_CLI)" >&2; exit 2; }
[ -f "$npy" ] || { echo "serve-experiment: no WordNet embeddings at $npy" >&2; exit 2; }

case $device in
  cpu)
    best="batched=--max-batch 64"
    overload=(--overload unbatched=60 --overload batched=1200)
    loadgens=1
    label=${LABEL:-"$(nproc) CPU cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"} ;;
  gpu)
    # The best saturation measured on the H100 (bench/results/2026-11-24-serve.md, run 3).
    best="batched=--max-batch 256 --batch-workers 2"
    overload=(--overload unbatched=4000 --overload batched=80000)
    loadgens=6
    label=${LABEL:-"$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"} ;;
  *) echo "usage: scripts/serve-experiment.sh [cpu|gpu] [all|patterns|sweep]" >&2; exit 2 ;;
esac
out=${OUT_PREFIX:-$root/bench/results/$(date +%F)-$device-serve-experiment}

if [ ! -d "$data/collections/wordnet" ]; then
  echo "serve-experiment: loading WordNet into $data"
  mkdir -p "$data"
  "$cli" serve --data-dir "$data" --port 0 --device "$device" >"$data.load.out" 2>"$data.load.err" &
  spid=$!
  for _ in $(seq 300); do grep -q listening "$data.load.out" 2>/dev/null && break; sleep 0.1; done
  url=$(grep -o 'http://[^ ]*' "$data.load.out")
  texts=()  # the glosses as payloads, where docs.tsv is there (the searches do not ask for them)
  [ -f "$wordnet/docs.tsv" ] && texts=(--texts "$wordnet/docs.tsv")
  "$py" "$root/bench/server/load_npy.py" --url "$url" --collection wordnet --vectors "$npy" "${texts[@]}" --batch 2000
  kill -TERM "$spid"
  wait "$spid"
fi

parallel=()
[ "${PARALLEL:-0}" = 1 ] && parallel=(--parallel)
"$py" "$root/bench/server/serve_experiment.py" --simkit "$cli" --data-dir "$data" --collection wordnet \
  --queries "$wordnet/queries_minilm_f16.npy" --device "$device" --label "$label" --phase "$phase" \
  --config "unbatched=--max-batch 1" --config "seed-4x1s=--max-batch 4 --max-delay-us 1000000" --config "$best" \
  --sweep unbatched --sweep batched "${overload[@]}" --loadgens "$loadgens" \
  --pattern-seconds "${PATTERN_SECONDS:-60}" --sweep-seconds "${SWEEP_SECONDS:-12}" "${parallel[@]}" --out "$out"
