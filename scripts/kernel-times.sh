#!/usr/bin/env bash
# Per-kernel GPU time of any command, from Nsight Compute's duration counter: where the time of
# a simkit call (or a peer's) goes, kernel by kernel. Run on the lent GPU machine.
#
#   bash scripts/kernel-times.sh LABEL -- COMMAND...     (writes $OUT/kernels-LABEL.txt)
#
# ncu serialises kernels and adds a pause between them, so only the per-kernel durations mean
# anything here, not the command's wall time; keep the command short (few runs, no warm-up).
set -uo pipefail
label=$1
shift
[ "${1:-}" = "--" ] && shift
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
raw=/tmp/ncu-$label.csv
ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base "$@" >"$raw" 2>/tmp/ncu-$label.err
python3 - "$raw" "$label" >"$OUT/kernels-$label.txt" <<'PY'
import csv, sys, collections
path, label = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.startswith('"')]
rows = list(csv.DictReader(lines))
tot = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"][:90]
    tot[name][0] += 1
    tot[name][1] += float(r["Metric Value"].replace(",", "")) / 1e3  # ns -> us
print(f"# {label}: {len(rows)} kernel launches profiled")
print(f"{'calls':>7} {'total us':>11} {'mean us':>9}  kernel")
for name, (n, us) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
    print(f"{n:7d} {us:11.1f} {us / n:9.2f}  {name}")
PY
cat "$OUT/kernels-$label.txt"
