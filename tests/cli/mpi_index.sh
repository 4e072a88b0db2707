#!/usr/bin/env bash
# `mpirun -n P simkit index build` + `mpirun -n P simkit index search` against the one-process
# `simkit index build` + `simkit index search` (issue 35 part 2): the ids and distances files
# must be byte-identical, for flat, ivf_flat and ivf_pq (refine 0 and > 0), at nprobe = nlist and
# below, with a training sample drawn from the whole base (--train-sample), several metrics,
# awkward slices (rows not divisible by P, a rank with 0 rows, ranks with 1), and the digits
# set, whose whole-number pixels give exact ties. Then the refusals: a rank count that is not
# the manifest's, a missing shard, a truncated or lying manifest, index add / info under
# mpirun, a sharded index searched without mpirun, an allow-list the shards cannot serve.
# With DEVICE gpu the searches run on GPUs (each rank on its host's GPU, one process on GPU 0); the
# builds and the refusals run on the CPU either way (a k-means over GPU ranks agrees with one GPU
# only up to float64 rounding: core/kmeans_shards.hpp).
# Exits 77 (skipped) when mpirun is absent, the build has no MPI, or DEVICE is gpu without a GPU.
# Usage: mpi_index.sh SIMKIT DATA_DIR WORK_DIR [DEVICE]   (DEVICE: cpu, the default, or gpu)
set -euo pipefail
simkit=$1 data=$2 work=$3 device=${4:-cpu}
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 not found (the test edits manifests with it)"
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
digits=("$data/digits/digits_base.fvecs" "$data/digits/digits_query.fvecs")

"$simkit" gen --rows 1001 --dim 16 --distribution clustered --seed 3 --out mid.npy --queries 37 --queries-out mid_q.npy >/dev/null 2>&1
"$simkit" gen --rows 5 --dim 8 --distribution gaussian --seed 4 --out five.npy --queries 4 --queries-out five_q.npy >/dev/null 2>&1
"$simkit" gen --rows 2 --dim 4 --seed 5 --out two.npy --queries 3 --queries-out two_q.npy >/dev/null 2>&1

runs=0
fail=0
failed() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

# group NAME BASE QUERIES "BUILD OPTIONS" "RANKS" "SEARCH OPTIONS" ["SEARCH OPTIONS" ...]
# Builds the index once in one process and once per rank count, then runs every search both
# ways and compares the outputs byte for byte.
group() {
  local name=$1 base=$2 queries=$3 build=$4 ranks=$5
  shift 5
  # shellcheck disable=SC2086
  "$simkit" index build --base "$base" $build --device cpu --out "$name.simkit" 2>/dev/null ||
    { failed "$name: one-process build"; return; }
  for p in $ranks; do
    # shellcheck disable=SC2086
    "${mpi[@]}" -n "$p" "$simkit" index build --base "$base" $build --device cpu --out "$name.$p" 2>"$name.$p.err" ||
      { failed "$name: mpirun -n $p build:"; cat "$name.$p.err"; }
  done
  local s=0
  for search in "$@"; do
    s=$((s + 1))
    # shellcheck disable=SC2086
    "$simkit" index search --index "$name.simkit" --queries "$queries" $search --device "$device" \
      --ids "$name.s$s.1p.ids.npy" --distances "$name.s$s.1p.d.npy" 2>/dev/null ||
      { failed "$name: one-process search $search"; continue; }
    for p in $ranks; do
      local out="$name.s$s.$p"
      # shellcheck disable=SC2086
      if ! "${mpi[@]}" -n "$p" "$simkit" index search --index "$name.$p" --queries "$queries" $search --device "$device" \
        --ids "$out.ids.npy" --distances "$out.d.npy" 2>"$out.err"; then
        failed "$name ($search): mpirun -n $p search exited non-zero:"
        cat "$out.err"
      elif cmp -s "$name.s$s.1p.ids.npy" "$out.ids.npy" && cmp -s "$name.s$s.1p.d.npy" "$out.d.npy"; then
        runs=$((runs + 1))
      else
        failed "$name ($search): mpirun -n $p differs from one process"
      fi
    done
  done
}

# An allow-list of every third row of the digits set, as one .ivecs row: [count][ids...].
le32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) 0)"; }
{
  le32 599
  for ((i = 0; i < 1797; i += 3)); do le32 $i; done
} >allow.ivecs

# flat: every metric; k above a rank's rows and above n; a rank with 0 rows; the digits' ties.
group flat_l2 mid.npy mid_q.npy "--type flat --metric l2" "1 2 3" "-k 10"
for metric in sqeuclidean l1 dot cosine pearson; do
  group "flat_$metric" mid.npy mid_q.npy "--type flat --metric $metric" "3" "-k 10"
done
group flat_five five.npy five_q.npy "--type flat --metric l2" "3" "-k 4" "-k 7"  # ranks of 2, 2, 1 rows
group flat_two two.npy two_q.npy "--type flat --metric cosine" "3" "-k 2"         # ranks of 1, 1, 0 rows
group flat_digits "${digits[@]}" "--type flat --metric sqeuclidean" "3" "-k 25" "-k 25 --allowed allow.ivecs"

# ivf_flat: every list and 2 of 8, a sample of 300 of the 1,001 rows drawn for k-means.
for metric in l2 dot pearson; do
  group "ivf_$metric" mid.npy mid_q.npy "--type ivf_flat --nlist 8 --train-sample 300 --metric $metric" "3" \
    "-k 10 --nprobe 8" "-k 10 --nprobe 2"
done
group ivf_five five.npy five_q.npy "--type ivf_flat --nlist 2 --metric l1" "3" "-k 4 --nprobe 2" "-k 3 --nprobe 1"
group ivf_digits "${digits[@]}" "--type ivf_flat --nlist 16 --metric sqeuclidean" "2" "-k 25 --nprobe 16" \
  "-k 25 --nprobe 3" "-k 25 --nprobe 16 --allowed allow.ivecs"

# ivf_pq: codes only and re-ranked, every list and fewer, re-ranks deeper than a shard holds.
for metric in l2 l1 cosine; do
  group "pq0_$metric" mid.npy mid_q.npy "--type ivf_pq --nlist 8 --m 4 --refine 0 --train-sample 500 --metric $metric" \
    "3" "-k 10 --nprobe 8" "-k 10 --nprobe 2"
done
for metric in l2 l1 dot pearson; do  # l1: the GPU's re-rank keys are column-order float sums
  group "pq4_$metric" mid.npy mid_q.npy "--type ivf_pq --nlist 8 --m 8 --refine 4 --metric $metric" "3" \
    "-k 10 --nprobe 8" "-k 10 --nprobe 8 --refine 1" "-k 10 --nprobe 2 --refine 2" "-k 5 --nprobe 3 --refine 70"
done
group pq_five five.npy five_q.npy "--type ivf_pq --nlist 2 --m 2 --refine 2 --metric cosine" "3" "-k 3 --nprobe 2" \
  "-k 6 --nprobe 1"
group pq_two two.npy two_q.npy "--type ivf_pq --nlist 2 --m 2 --refine 2 --metric l2" "3" "-k 2 --nprobe 2" # 1, 1, 0
group pq_digits "${digits[@]}" "--type ivf_pq --nlist 16 --m 16 --refine 4 --metric sqeuclidean" "1 2" \
  "-k 25 --nprobe 16" "-k 25 --nprobe 4" "-k 25 --nprobe 16 --refine 1"

# The build's lines on rank 0, and the manifest's contents.
grep -q "simkit index build: 3 MPI ranks, base rows per rank 334, 334, 333" flat_l2.3.err ||
  failed "no ranks line in flat_l2.3.err"
# edit_manifest IN OUT PYTHON: OUT := the manifest IN after PYTHON ran on it as `m` (a dict).
edit_manifest() {
  python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=2)' "$@"
}
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["shards"][2]; sys.exit((s["first"], s["rows"]) != (668, 333))' \
  flat_l2.3/manifest.json || failed "flat_l2.3/manifest.json lacks shard 2's slice"
[ "$(ls -A flat_two.3)" = "$(printf 'manifest.json\nshard-0-of-3.simkit\nshard-1-of-3.simkit\nshard-2-of-3.simkit')" ] ||
  failed "flat_two.3 holds other files: $(ls -A flat_two.3)"

# refused NAME EXPECTED RANKS ARGS...: exit status 2, EXPECTED in the error, no output written.
refused() {
  local name=$1 expected=$2 p=$3
  shift 3
  local status try
  for try in 1 2 3; do
    rm -f out.ids.npy
    status=0
    "${mpi[@]}" -n "$p" "$simkit" "$@" 2>"$name.err" >/dev/null || status=$?
    # Open MPI 4.1's mpirun now and then crashes itself (SIGSEGV in PMIx_Finalize) while it
    # aborts a job whose ranks exited non-zero; that run says nothing of simkit: run it again.
    [ "$status" -eq 139 ] && grep -q "PMIx_Finalize" "$name.err" || break
  done
  if [ "$status" -ne 2 ]; then
    failed "$name: exit status $status, not 2:"
    cat "$name.err"
  elif ! grep -qF -- "$expected" "$name.err"; then
    failed "$name: the error does not say \"$expected\":"
    cat "$name.err"
  elif [ -e out.ids.npy ]; then
    failed "$name: wrote out.ids.npy"
  fi
}
S=(index search --queries mid_q.npy -k 5 --ids out.ids.npy --device cpu)
refused ranks_differ "has 3 shards; search it with mpirun -n 3 (this run has 2 ranks)" 2 "${S[@]}" --index pq4_l2.3
cp -r pq4_l2.3 missing && rm missing/shard-1-of-3.simkit
refused missing_shard "shard-1-of-3.simkit" 3 "${S[@]}" --index missing
cp -r pq4_l2.3 badshard && head -c 1000 pq4_l2.3/shard-2-of-3.simkit >badshard/shard-2-of-3.simkit
refused truncated_shard "shard-2-of-3.simkit" 3 "${S[@]}" --index badshard
cp -r pq4_l2.3 truncated && head -c 200 pq4_l2.3/manifest.json >truncated/manifest.json
refused truncated_manifest "not a usable sharded index manifest" 3 "${S[@]}" --index truncated
cp -r pq4_l2.3 lying && edit_manifest pq4_l2.3/manifest.json lying/manifest.json \
  'm["shards"][1]["rows"] = 333; m["shards"][2].update(first=667, rows=334)'
refused lying_manifest "does not match the manifest" 3 "${S[@]}" --index lying
cp -r pq4_l2.3 overcounting && edit_manifest pq4_l2.3/manifest.json overcounting/manifest.json 'm["total"] = 1002'
refused total_manifest "not the total 1002" 3 "${S[@]}" --index overcounting
refused no_manifest "not a sharded index" 3 "${S[@]}" --index pq4_l2.simkit
refused pq_allowed "allow-list over ivf_pq shards is not served" 3 "${S[@]}" --index pq4_l2.3 --allowed allow.ivecs
refused ivf_allowed "needs nprobe = nlist" 3 "${S[@]}" --index ivf_l2.3 --nprobe 2 --allowed allow.ivecs
refused lsh_build "cannot be sharded" 2 index build --base mid.npy --type lsh --metric cosine --out lsh.shards
refused nlist_build "exceeds the 5 vectors" 3 index build --base five.npy --nlist 6 --metric l2 --out nl.shards
refused add_mpi "\`simkit index add\` does not split its work over ranks" 2 index add --index pq4_l2.simkit --base mid.npy
refused info_mpi "\`simkit index info\` does not split its work over ranks" 2 index info --index pq4_l2.3
[ -e lsh.shards ] && failed "lsh_build left lsh.shards behind"
[ -e nl.shards ] && failed "nlist_build left nl.shards behind"
# Without mpirun: search refuses a sharded index, info reads its manifest.
if "$simkit" "${S[@]}" --index pq4_l2.3 2>one.err; then
  failed "index search without mpirun searched a sharded index"
elif ! grep -q "is a sharded index.*mpirun -n 3 simkit index search" one.err || [ -e out.ids.npy ]; then
  failed "index search without mpirun: unexpected error or output:"
  cat one.err
fi
"$simkit" index info --index pq4_l2.3 | grep -q "shards       3 (search with mpirun -n 3)" ||
  failed "index info does not describe the sharded index"

echo "mpi_index: $runs mpirun searches byte-identical to one process, $fail failures"
[ "$fail" -eq 0 ]
