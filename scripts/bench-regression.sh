#!/usr/bin/env bash
# Before/after timings of two simkit builds on the same GPU in one run: `simkit bench pairwise`
# and `simkit bench knn`, old and new alternately for a few rounds so that the GPU's clock and
# temperature drift hit both sides alike; then a table of each case's median over the rounds
# (every round is itself a median of the suite's timed runs) with new / old.
#
#   scripts/bench-regression.sh OLD_SIMKIT NEW_SIMKIT OUT_DIR [ROUNDS=3] [SUITES="pairwise knn"]
#
# Writes OUT_DIR/regression.csv (every run) and OUT_DIR/regression.md (the table).
set -euo pipefail
old=$1 new=$2 out=$3 rounds=${4:-3} suites=${5:-pairwise knn}
mkdir -p "$out"
csv="$out/regression.csv"
rm -f "$csv"
for ((round = 1; round <= rounds; round++)); do
  for suite in $suites; do
    for side in old new; do
      bin=$old; [ "$side" = new ] && bin=$new
      tmp=$(mktemp)
      "$bin" bench "$suite" --device gpu --csv "$tmp" >/dev/null
      if [ ! -s "$csv" ]; then echo "side,round,$(head -1 "$tmp")" >"$csv"; fi
      tail -n +2 "$tmp" | sed "s/^/$side,$round,/" >>"$csv"
      rm -f "$tmp"
    done
  done
done
python3 - "$csv" "$out/regression.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = {}
for r in rows:
    key = (r["suite"], r["case"], r["metric"])
    cases.setdefault(key, {"old": [], "new": []})[r["side"]].append(float(r["median_ms"]))
lines = ["| suite | case | metric | old ms | new ms | new / old | runs per side |", "|---|---|---|---:|---:|---:|---:|"]
for (suite, case, metric), t in cases.items():
    o, n = statistics.median(t["old"]), statistics.median(t["new"])
    lines.append(f"| {suite} | {case} | {metric} | {o:.3f} | {n:.3f} | {n / o:.3f} | {len(t['new'])} |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
