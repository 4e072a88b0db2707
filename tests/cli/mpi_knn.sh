#!/usr/bin/env bash
# `mpirun -n P simkit knn` against the one-process `simkit knn` (issue 35 part 2): for P = 1, 2,
# 3, every metric, the ids and distances files must be byte-identical. Sizes are awkward on
# purpose: base rows not divisible by P, a rank with 0 rows and ranks with 1, k above one rank's
# rows, and the digits set, whose whole-number pixels give exact ties (broken by the lower id).
# With DEVICE gpu both sides run on GPUs: each rank on its host's GPU (local rank mod the GPUs),
# one process on GPU 0; the ranks line must name them.
# Exits 77 (skipped) when mpirun is absent, the build has no MPI, or DEVICE is gpu without a GPU.
# Usage: mpi_knn.sh SIMKIT DATA_DIR WORK_DIR [DEVICE]   (DEVICE: cpu, the default, or gpu)
set -euo pipefail
simkit=$1 data=$2 work=$3 device=${4:-cpu}
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
if ! "$simkit" info | grep -q "MPI: *on"; then
  echo "SKIP: this simkit was built without MPI (cmake -DSIMKIT_MPI=ON needs libopenmpi-dev)"
  exit 77
fi
if [ "$device" = gpu ] && ! "$simkit" info | grep -q "^    gpu 0:"; then
  echo "SKIP: no usable GPU is visible"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1  # P ranks on a 2-core machine
mpi=(timeout 60 mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo)

"$simkit" gen --rows 1001 --dim 16 --distribution clustered --seed 3 --out mid.npy --queries 37 --queries-out mid_q.npy >/dev/null 2>&1
"$simkit" gen --rows 5 --dim 6 --distribution gaussian --seed 4 --out five.npy --queries 4 --queries-out five_q.npy >/dev/null 2>&1
"$simkit" gen --rows 2 --dim 3 --seed 5 --out two.npy --queries 3 --queries-out two_q.npy >/dev/null 2>&1

runs=0
fail=0
# check NAME BASE QUERIES K METRIC RANKS...
check() {
  local name=$1 base=$2 queries=$3 k=$4 metric=$5
  shift 5
  local ext=npy
  "$simkit" knn --base "$base" --queries "$queries" -k "$k" --metric "$metric" --device "$device" \
    --ids "$name.1p.ids.$ext" --distances "$name.1p.d.$ext" 2>/dev/null
  for p in "$@"; do
    if ! "${mpi[@]}" -n "$p" "$simkit" knn --base "$base" --queries "$queries" -k "$k" --metric "$metric" \
      --device "$device" --ids "$name.$p.ids.$ext" --distances "$name.$p.d.$ext" 2>"$name.$p.err"; then
      echo "FAIL: $name -n $p exited non-zero:"
      cat "$name.$p.err"
      fail=$((fail + 1))
      continue
    fi
    if cmp -s "$name.1p.ids.$ext" "$name.$p.ids.$ext" && cmp -s "$name.1p.d.$ext" "$name.$p.d.$ext"; then
      runs=$((runs + 1))
    else
      echo "FAIL: $name (k = $k, $metric): mpirun -n $p differs from one process"
      fail=$((fail + 1))
    fi
  done
}

for metric in l2 sqeuclidean l1 dot cosine pearson; do
  check "mid_$metric" mid.npy mid_q.npy 10 "$metric" 1 2 3
  check "five_$metric" five.npy five_q.npy 4 "$metric" 2 3  # ranks of 2, 2, 1 rows: k above a rank's rows
  check "two_$metric" two.npy two_q.npy 2 "$metric" 3       # ranks of 1, 1, 0 rows
  check "digits_$metric" "$data/digits/digits_base.fvecs" "$data/digits/digits_query.fvecs" 25 "$metric" 2 3
done
check digits_k100 "$data/digits/digits_base.fvecs" "$data/digits/digits_query.fvecs" 100 sqeuclidean 3

# The line rank 0 prints, and rank 0 alone writes; on GPUs it names each rank's.
ranks_line="simkit knn: 3 MPI ranks, base rows per rank 334, 334, 333"
if [ "$device" = gpu ]; then
  gpus=$("$simkit" info | grep -c "^    gpu [0-9]*:")
  ranks_line="$ranks_line; GPU per rank 0, $((1 % gpus)), $((2 % gpus))"
fi
grep -qF "$ranks_line" mid_l2.3.err ||
  { echo "FAIL: no line \"$ranks_line\" in mid_l2.3.err:"; cat mid_l2.3.err; fail=$((fail + 1)); }
# A bad input fails on every rank with one agreed error, exit status 2.
if "${mpi[@]}" -n 2 "$simkit" knn --base five.npy --queries five_q.npy -k 6 --metric l2 --ids bad.npy 2>bad.err; then
  echo "FAIL: k > n succeeded under mpirun"
  fail=$((fail + 1))
elif ! grep -q "exceeds the 5 vectors" bad.err || [ -e bad.npy ]; then
  echo "FAIL: k > n under mpirun: unexpected error or output:"
  cat bad.err
  fail=$((fail + 1))
fi

# Every other command is refused under several ranks, before it writes anything.
if "${mpi[@]}" -n 2 "$simkit" gen --rows 10 --dim 3 --out gen.npy 2>gen.err; then
  echo "FAIL: simkit gen ran under mpirun -n 2"
  fail=$((fail + 1))
elif ! grep -q "\`simkit gen\` does not split its work over ranks" gen.err || [ -e gen.npy ]; then
  echo "FAIL: simkit gen under mpirun -n 2: unexpected error or output:"
  cat gen.err
  fail=$((fail + 1))
fi

echo "mpi_knn: $runs mpirun runs byte-identical to one process, $fail failures"
[ "$fail" -eq 0 ]
