#!/usr/bin/env bash
# `mpirun -n P simkit gauss` and `mpirun -n P simkit kmeans` against one process (issue 35 part
# 2), for P = 1, 2, 3:
#   gauss --method direct: every value within 1e-12 relative of the one-process output (with and
#     without --weights); --method ifgt within the bound it prints;
#   kmeans: the labels and centroids files byte-identical (cmp), for sqeuclidean and cosine,
#     kmeans++ and random init, --sample, k > 32 (two centres per k-means++ round), and a run
#     whose clusters empty (duplicate points drawn as centres) and are re-seeded.
# Sizes are awkward on purpose: rows not divisible by P, ranks of 2, 2, 1 rows and of 1, 1, 0.
# Exits 77 (skipped) when mpirun, python3 or a build with MPI is missing.
# Usage: mpi_gauss_kmeans.sh SIMKIT WORK_DIR
set -euo pipefail
simkit=$1 work=$2
for tool in mpirun python3; do
  command -v "$tool" >/dev/null || {
    echo "SKIP: $tool not found"
    exit 77
  }
done
if ! "$simkit" info | grep -q "MPI: *on"; then
  echo "SKIP: this simkit was built without MPI (cmake -DSIMKIT_MPI=ON needs libopenmpi-dev)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 # P ranks on a 2-core machine
mpi=(timeout 60 mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo)

gen() { "$simkit" gen "$@" >/dev/null 2>&1; }
gen --rows 1001 --dim 5 --distribution clustered --clusters 6 --std 0.3 --seed 3 --out src.npy --queries 37 --queries-out tgt.npy
gen --rows 1001 --dim 2 --distribution clustered --clusters 6 --std 0.3 --seed 7 --out flat.npy --queries 37 --queries-out flat_t.npy
gen --rows 5 --dim 3 --distribution gaussian --seed 4 --out five.npy --queries 4 --queries-out five_t.npy
gen --rows 2 --dim 3 --seed 5 --out two.npy --queries 3 --queries-out two_t.npy
gen --rows 1001 --dim 16 --distribution clustered --clusters 8 --seed 6 --out mid.npy

# float64 .npy files: 1001 positive weights, and 301 points of which 270 repeat 3 distinct rows.
python3 - <<'PY'
import struct
def npy(path, shape, fmt, values):
    head = "{'descr': '<%s', 'fortran_order': False, 'shape': %s, }" % ({"d": "f8", "f": "f4"}[fmt], shape)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
npy("w.npy", "(1001,)", "d", [0.25 + (i * 37 % 101) / 13.0 for i in range(1001)])
rows = []
for i in range(301):
    rows += [float(i % 3), float(i % 3 * 2), 1.0] if i < 270 else [i / 7.0, -i / 11.0, i % 5 / 3.0]
npy("dup.npy", "(301, 3)", "f", rows)
PY

runs=0
fail=0
failed() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

# The largest relative difference between two m x 1 float64 .npy files (inf when the shapes differ).
max_rel() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
def read(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<H", data[8:10])[0]
    return struct.unpack("<%dd" % ((len(data) - 10 - hl) // 8), data[10 + hl:])
a, b = read(sys.argv[1]), read(sys.argv[2])
print("inf" if len(a) != len(b) else "%.3g" % max(abs(x - y) / abs(y) for x, y in zip(a, b)))
PY
}

worst=0
# gauss_check NAME SOURCES TARGETS "EXTRA ARGS" RANKS...
gauss_check() {
  local name=$1 src=$2 tgt=$3 extra=$4
  shift 4
  # shellcheck disable=SC2086
  "$simkit" gauss --sources "$src" --targets "$tgt" --bandwidth 0.8 --method direct $extra --device cpu \
    --out "$name.1p.npy" 2>/dev/null
  for p in "$@"; do
    # shellcheck disable=SC2086
    if ! "${mpi[@]}" -n "$p" "$simkit" gauss --sources "$src" --targets "$tgt" --bandwidth 0.8 --method direct \
      $extra --device cpu --out "$name.$p.npy" 2>"$name.$p.err"; then
      failed "gauss $name -n $p exited non-zero:" && cat "$name.$p.err"
      continue
    fi
    local rel
    rel=$(max_rel "$name.$p.npy" "$name.1p.npy")
    if python3 -c "import sys; sys.exit(0 if float('$rel') <= 1e-12 else 1)"; then
      runs=$((runs + 1))
      worst=$(python3 -c "print(max($worst, float('$rel')))")
    else
      failed "gauss $name: mpirun -n $p is $rel relative from one process"
    fi
  done
}
gauss_check plain src.npy tgt.npy "" 1 2 3
gauss_check weighted src.npy tgt.npy "--weights w.npy" 2 3
gauss_check five five.npy five_t.npy "" 3 # ranks of 2, 2, 1 sources
gauss_check two two.npy two_t.npy "" 3   # ranks of 1, 1, 0

# ifgt over 3 ranks (d = 2): within the bound it reports (eps * sum|q|, sum|q| = 1001) of the direct sum.
gauss_check flat flat.npy flat_t.npy "" 3
echo "gauss direct: max relative difference from one process $worst"
if "${mpi[@]}" -n 3 "$simkit" gauss --sources flat.npy --targets flat_t.npy --bandwidth 0.8 --method ifgt --eps 1e-6 \
  --verbose --device cpu --out ifgt.npy >ifgt.out 2>ifgt.err; then
  bound=$(sed -n 's/.*bound |error| <= \([^ ]*\) \* sum|q|.*/\1/p' ifgt.out)
  err=$(python3 - ifgt.npy flat.1p.npy <<'PY'
import struct, sys
def read(path):
    data = open(path, "rb").read()
    hl = struct.unpack("<H", data[8:10])[0]
    return struct.unpack("<%dd" % ((len(data) - 10 - hl) // 8), data[10 + hl:])
print(max(abs(x - y) for x, y in zip(read(sys.argv[1]), read(sys.argv[2]))) / 1001)
PY
  )
  if [ "$(grep -c '^method: ifgt' ifgt.out)" = 1 ] && [ -n "$bound" ] &&
    python3 -c "import sys; sys.exit(0 if $err <= $bound else 1)"; then
    runs=$((runs + 1))
    echo "gauss ifgt -n 3: error $err * sum|q| within the bound $bound"
  else
    failed "gauss ifgt -n 3: error $err * sum|q|, bound '$bound':" && cat ifgt.out ifgt.err
  fi
else
  failed "gauss ifgt -n 3 exited non-zero:" && cat ifgt.err
fi

# kmeans_check NAME DATA "ARGS" RANKS...
kmeans_check() {
  local name=$1 data=$2 args=$3
  shift 3
  # shellcheck disable=SC2086
  "$simkit" kmeans --data "$data" $args --device cpu --centroids "$name.1p.c.npy" --labels "$name.1p.l.npy" \
    >"$name.1p.out" 2>"$name.1p.err"
  for p in "$@"; do
    # shellcheck disable=SC2086
    if ! "${mpi[@]}" -n "$p" "$simkit" kmeans --data "$data" $args --device cpu --centroids "$name.$p.c.npy" \
      --labels "$name.$p.l.npy" >"$name.$p.out" 2>"$name.$p.err"; then
      failed "kmeans $name -n $p exited non-zero:" && cat "$name.$p.err"
      continue
    fi
    if cmp -s "$name.1p.c.npy" "$name.$p.c.npy" && cmp -s "$name.1p.l.npy" "$name.$p.l.npy" &&
      cmp -s "$name.1p.out" "$name.$p.out"; then
      runs=$((runs + 1))
    else
      failed "kmeans $name ($args): mpirun -n $p differs from one process"
    fi
  done
}
kmeans_check sq_pp mid.npy "-k 8 --metric sqeuclidean --seed 1" 1 2 3
kmeans_check cos_pp mid.npy "-k 8 --metric cosine --seed 2" 2 3
kmeans_check sq_random mid.npy "-k 8 --init random --seed 3" 2 3
kmeans_check cos_random mid.npy "-k 8 --metric cosine --init random --seed 4" 3
kmeans_check sample mid.npy "-k 8 --sample 300 --seed 5" 2 3
kmeans_check k40 mid.npy "-k 40 --iters 5 --seed 6" 3
kmeans_check five five.npy "-k 2" 3
kmeans_check two two.npy "-k 2" 3
kmeans_check reseed dup.npy "-k 6 --init random --seed 1" 2 3
grep -q "empty clusters re-seeded" reseed.1p.err || failed "the reseed case re-seeded no cluster"
grep -q "simkit kmeans: 3 MPI ranks, rows per rank 334, 334, 333" sq_pp.3.err ||
  { failed "no ranks line in sq_pp.3.err:" && cat sq_pp.3.err; }

# A bad input fails on every rank with one agreed error, exit status 2, and writes nothing.
set +e
"${mpi[@]}" -n 2 "$simkit" kmeans --data five.npy -k 6 --centroids bad.npy 2>bad.err
status=$?
set -e
if [ "$status" != 2 ] || ! grep -q "exceeds the 5 points" bad.err || [ -e bad.npy ]; then
  failed "kmeans k > n under mpirun: status $status:" && cat bad.err
fi

echo "mpi_gauss_kmeans: $runs mpirun runs match one process, $fail failures"
[ "$fail" -eq 0 ]
