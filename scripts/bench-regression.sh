#!/usr/bin/env bash
# Before/after timings of two simkit builds on the same GPU in one run: `simkit bench pairwise`,
# `bench knn` and `bench ann` (the synthetic case: flat, ivf_flat and ivf_pq at nprobe 8 and 32),
# old and new alternately for a few rounds so that the GPU's clock and temperature drift hit
# both sides alike; then a table of each case's median over the rounds (every round is itself a
# median of the suite's timed runs) with new / old. ann's time is 1000 / QPS: milliseconds per
# query, batched.
#
#   scripts/bench-regression.sh OLD_SIMKIT NEW_SIMKIT OUT_DIR [ROUNDS=3] [SUITES="pairwise knn"]
#
# Writes OUT_DIR/regression-<suite>.csv (every run) and OUT_DIR/regression.md (the table).
set -euo pipefail
old=$1 new=$2 out=$3 rounds=${4:-3} suites=${5:-pairwise knn}
mkdir -p "$out"
rm -f "$out"/regression-*.csv
for ((round = 1; round <= rounds; round++)); do
  for suite in $suites; do
    csv="$out/regression-$suite.csv"
    args=()
    if [ "$suite" = ann ]; then
      args=(--cases synthetic --indexes flat,ivf_flat,ivf_pq --nprobe 8,32 --refine 4 --single 1 --repeat 10)
    fi
    for side in old new; do
      bin=$old; [ "$side" = new ] && bin=$new
      tmp=$(mktemp)
      "$bin" bench "$suite" --device gpu "${args[@]}" --csv "$tmp" >/dev/null
      if [ ! -s "$csv" ]; then echo "side,round,$(head -1 "$tmp")" >"$csv"; fi
      tail -n +2 "$tmp" | sed "s/^/$side,$round,/" >>"$csv"
      rm -f "$tmp"
    done
  done
done
python3 - "$out/regression.md" "$out"/regression-*.csv <<'PY'
import csv, statistics, sys
cases = {}
for path in sys.argv[2:]:
    for r in csv.DictReader(open(path)):
        if "qps" in r:  # bench ann: one row per (index, nprobe, params) point
            key = ("ann", r["case"], f'{r["index"]} nprobe {r["nprobe"]} {r["params"]}'.strip())
            ms = 1000.0 / float(r["qps"])
        else:
            key = (r["suite"], r["case"], r["metric"])
            ms = float(r["median_ms"])
        cases.setdefault(key, {"old": [], "new": []})[r["side"]].append(ms)
lines = ["| suite | case | metric | old ms | new ms | new / old | runs per side |", "|---|---|---|---:|---:|---:|---:|"]
for (suite, case, metric), t in cases.items():
    o, n = statistics.median(t["old"]), statistics.median(t["new"])
    lines.append(f"| {suite} | {case} | {metric} | {o:.4g} | {n:.4g} | {n / o:.3f} | {len(t['new'])} |")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
