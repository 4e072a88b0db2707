#!/usr/bin/env bash
# The command-line contract other tools script against:
#   - every bad input exits with status 2 and exactly one stderr line "simkit: error: ..." that
#     names the problem, and leaves no output file (nor a staging file) behind, and an existing
#     output file untouched;
#   - gen is reproducible whatever the thread count; knn/pairwise write the documented shapes.
#
#   contract.sh SIMKIT_BINARY WORK_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before the script changes directory
simkit=$1
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
keep=keep.ivecs
# shellcheck source=contract_lib.sh
source "$here/contract_lib.sh"

# Fixtures, made with simkit itself and plain shell tools (no Python).
"$simkit" gen --rows 50 --dim 8 --seed 1 --out base.fvecs >/dev/null 2>&1 || { echo "gen failed"; exit 1; }
"$simkit" gen --rows 5 --dim 8 --seed 2 --out q.fvecs >/dev/null 2>&1 || exit 1
"$simkit" gen --rows 5 --dim 3 --seed 3 --out q3.fvecs >/dev/null 2>&1 || exit 1
"$simkit" gen --rows 50 --dim 8 --seed 1 --out base.npy >/dev/null 2>&1 || exit 1
# 2 rows of d = 2; the second row holds a NaN (0x7fc00000) and 1.0f (0x3f800000), little-endian.
printf '\002\000\000\000\000\000\200\077\000\000\000\000\002\000\000\000\000\000\300\177\000\000\200\077' >nan2.fvecs
printf '\002\000\000\000\000\000\200\077\000\000\000\000' >ok2.fvecs
# +Inf (0x7f800000) in the base.
printf '\002\000\000\000\000\000\200\177\000\000\000\000' >inf2.fvecs
: >empty.fvecs
: >empty.npy
size=$(stat -c %s base.fvecs)
head -c $((size - 3)) base.fvecs >trunc.fvecs         # last row cut short
# Two rows of 36 bytes (so the size alone looks right) whose second header says d = 7.
{ head -c 36 base.fvecs; printf '\007\000\000\000'; head -c 32 /dev/zero; } >mixed.fvecs
nsize=$(stat -c %s base.npy)
head -c $((nsize - 5)) base.npy >trunc.npy
# A .fvecs whose first header claims a dimension far beyond the file.
printf '\377\377\377\177\000\000\000\000' >lying.fvecs
# A ground truth with 5 rows of 3 ids and one with 4 rows of 10 ids.
: >gt3.ivecs
for i in 0 1 2 3 4; do printf '\003\000\000\000\000\000\000\000\001\000\000\000\002\000\000\000' >>gt3.ivecs; done
: >gt_rows.ivecs
for i in 0 1 2 3; do
  printf '\012\000\000\000' >>gt_rows.ivecs
  for j in 0 1 2 3 4 5 6 7 8 9; do printf "\\$(printf %03o "$j")\\000\\000\\000" >>gt_rows.ivecs; done
done
mkdir -p adir.ivecs
echo "previous content" >keep.ivecs
cp keep.ivecs keep.orig

K() { "$simkit" knn "$@"; }
P() { "$simkit" pairwise "$@"; }

# ---- knn
bad "knn: missing base file"      "no-such.fvecs"            -- K --base no-such.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: missing queries file"   "missing-q.fvecs"          -- K --base base.fvecs --queries missing-q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: dimension mismatch"     "dimension|d = 3"          -- K --base base.fvecs --queries q3.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: k = 0"                  "-k|k must"                -- K --base base.fvecs --queries q.fvecs -k 0 --metric l2 --ids out.ivecs
bad "knn: k < 0"                  "-k|k must"                -- K --base base.fvecs --queries q.fvecs -k -4 --metric l2 --ids out.ivecs
bad "knn: k > n"                  "exceeds|k"                -- K --base base.fvecs --queries q.fvecs -k 51 --metric l2 --ids out.ivecs
bad "knn: NaN in queries"         "nan"                      -- K --base ok2.fvecs --queries nan2.fvecs -k 1 --metric l2 --ids out.ivecs
bad "knn: Inf in base"            "inf"                      -- K --base inf2.fvecs --queries ok2.fvecs -k 1 --metric cosine --ids out.ivecs
bad "knn: empty base"             "empty|no vectors|0 rows"  -- K --base empty.fvecs --queries q.fvecs -k 1 --metric l2 --ids out.ivecs
bad "knn: empty queries (.npy)"   "empty|npy|header|short"   -- K --base base.fvecs --queries empty.npy -k 1 --metric l2 --ids out.ivecs
bad "knn: tree for cosine"        "l2 and sqeuclidean"       -- K --base base.fvecs --queries q.fvecs -k 3 --metric cosine --method tree --ids out.ivecs --device cpu
bad "knn: method"                 "method"                   -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --method kd --ids out.ivecs
# radius: the same contract, CSR outputs written together.
R() { "$simkit" radius "$@"; }
bad "radius: negative radius"     "radius must be"           -- R --base base.fvecs --queries q.fvecs --radius -1 --offsets o.npy --ids i.npy
bad "radius: metric"              "l2 and sqeuclidean"       -- R --base base.fvecs --queries q.fvecs --radius 1 --metric dot --offsets o.npy --ids i.npy
bad "radius: dimension mismatch"  "dimension"                -- R --base base.fvecs --queries q3.fvecs --radius 1 --offsets o.npy --ids i.npy
bad "radius: NaN"                 "nan"                      -- R --base ok2.fvecs --queries nan2.fvecs --radius 1 --offsets o.npy --ids i.npy
bad "radius: same output twice"   "same|distinct|twice"      -- R --base base.fvecs --queries q.fvecs --radius 1 --offsets o.npy --ids o.npy
checks=$((checks + 1))
if R --base base.fvecs --queries base.fvecs --radius 0 --offsets o.npy --ids i.npy --device cpu >stdout.txt 2>stderr.txt &&
   grep -q "50 neighbours" stdout.txt && [ -s o.npy ] && [ -s i.npy ]; then
  echo "ok   radius 0 around each base row finds that row alone: $(tr -s ' ' <stdout.txt | cut -c1-90)"
else
  fail "radius: good run: $(cat stdout.txt stderr.txt | head -4)"
fi
bad "knn: bad metric"             "metric 'euclid'"          -- K --base base.fvecs --queries q.fvecs -k 3 --metric euclid --ids out.ivecs
bad "knn: bad device"             "device 'tpu'"             -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --device tpu
bad "knn: bad gpu list"           "gpu:0,1,... or gpu:all"   -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --device gpu:0,x
bad "knn: repeated gpu"           "names GPU 1 twice"        -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --device gpu:1,1
# serve and bench take the same device names (a list splits their searches over the GPUs).
bad "serve: repeated gpu"         "names GPU 0 twice"        -- "$simkit" serve --data-dir served --port 0 --device gpu:0,0
bad "bench: bad gpu list"         "gpu:0,1,... or gpu:all"   -- "$simkit" bench knn --device gpu:0,x
# A newline or an escape sequence in an argument is shown escaped, on the one line.
bad "knn: metric with a newline"  "metric 'l2\\\\n\\\\x1b\\[2J'" -- K --base base.fvecs --queries q.fvecs -k 3 --metric $'l2\n\e[2J' --ids out.ivecs
bad "knn: path with an escape"    "'q\\\\x1b\\[31m\\.fvecs'" -- K --base base.fvecs --queries $'q\e[31m.fvecs' -k 3 --metric l2 --ids out.ivecs
bad "knn: -k with an escape"      "convert.*x1b"             -- K --base base.fvecs --queries q.fvecs -k $'3\e[2J' --metric l2 --ids out.ivecs
bad "knn: truncated .fvecs"       "trunc"                    -- K --base trunc.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: mixed dimensions"       "mixed.fvecs"              -- K --base mixed.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: truncated .npy"         "trunc.npy"                -- K --base trunc.npy --queries q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: lying .fvecs header"    "lying.fvecs"              -- K --base lying.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs
bad "knn: truth too narrow"       "truth.*fewer than k"      -- K --base base.fvecs --queries q.fvecs -k 5 --metric l2 --ids out.ivecs --truth gt3.ivecs
bad "knn: truth row count"        "truth.*4 rows"            -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --truth gt_rows.ivecs
bad "knn: missing truth file"     "truth"                    -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --truth nope.ivecs
bad "knn: ids extension"          "--ids.*extension"         -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.txt
bad "knn: distances extension"    "--distances.*extension"   -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --distances out.ivecs
bad "knn: same file twice"        "same file"                -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.npy --distances out.npy
bad "knn: missing output dir"     "does not exist"           -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids no/dir/out.ivecs
bad "knn: output is a directory"  "directory"                -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids adir.ivecs
bad "knn: missing --ids"          "--ids"                    -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2
bad "knn: k not a number"         "-k|k"                     -- K --base base.fvecs --queries q.fvecs -k three --metric l2 --ids out.ivecs
bad "knn: negative threads"       "threads"                  -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --threads -1
bad "knn: k > n keeps old file"   "exceeds"                  -- K --base base.fvecs --queries q.fvecs -k 99 --metric l2 --ids keep.ivecs

# ---- pairwise
bad "pairwise: missing file"      "absent.npy"               -- P --base absent.npy --queries q.fvecs --metric cosine --out out.npy
bad "pairwise: dimension mismatch" "dimension|d = 3"         -- P --base base.fvecs --queries q3.fvecs --metric cosine --out out.npy
bad "pairwise: NaN"               "nan"                      -- P --base ok2.fvecs --queries nan2.fvecs --metric dot --out out.npy
bad "pairwise: empty set"         "empty|no vectors"         -- P --base empty.fvecs --queries q.fvecs --metric l1 --out out.npy
bad "pairwise: bad metric"        "metric 'cos'"             -- P --base base.fvecs --queries q.fvecs --metric cos --out out.npy
bad "pairwise: bad device"        "device 'cuda'"            -- P --base base.fvecs --queries q.fvecs --metric l2 --out out.npy --device cuda
bad "pairwise: truncated"         "trunc.fvecs"              -- P --base trunc.fvecs --queries q.fvecs --metric l2 --out out.npy
bad "pairwise: out extension"     "--out.*extension"         -- P --base base.fvecs --queries q.fvecs --metric l2 --out out.csv

# ---- gen and the command line itself
bad "gen: rows = 0"               "rows"                     -- "$simkit" gen --rows 0 --dim 4 --out out.npy
bad "gen: dim < 1"                "dim"                      -- "$simkit" gen --rows 4 --dim -2 --out out.npy
bad "gen: bad distribution"       "distribution 'normal'"    -- "$simkit" gen --rows 4 --dim 4 --distribution normal --out out.npy
bad "gen: clusters = 0"           "clusters"                 -- "$simkit" gen --rows 4 --dim 4 --distribution clustered --clusters 0 --out out.npy
bad "gen: negative std"           "std"                      -- "$simkit" gen --rows 4 --dim 4 --distribution clustered --std -1 --out out.npy
bad "gen: .bvecs refused"         "extension"                -- "$simkit" gen --rows 4 --dim 4 --out out.bvecs
bad "gen: queries without file"   "queries"                  -- "$simkit" gen --rows 4 --dim 4 --queries 2 --out out.npy
bad "unknown command"             "unknown command 'frobnicate'" -- "$simkit" frobnicate
bad "no command"                  "subcommand"               -- "$simkit"
bad "unknown option"              "--colour"                 -- K --base base.fvecs --queries q.fvecs -k 3 --metric l2 --ids out.ivecs --colour

# ---- what works: shapes, self-neighbours, reproducibility
checks=$((checks + 1))
"$simkit" knn --base base.fvecs --queries base.fvecs -k 1 --metric sqeuclidean --ids self.ivecs --distances self.fvecs \
  --device cpu >stdout.txt 2>stderr.txt || fail "knn self: exit $? ($(cat stderr.txt))"
: >self_expected.ivecs
for i in $(seq 0 49); do printf "\\001\\000\\000\\000\\$(printf %03o "$i")\\000\\000\\000" >>self_expected.ivecs; done
cmp -s self.ivecs self_expected.ivecs || fail "knn of the base against itself (k = 1) is not the identity"
# Each distance of a row to itself is exactly 0: 50 rows of (int32 1, float 0.0).
: >self_expected.fvecs
for i in $(seq 0 49); do printf '\001\000\000\000\000\000\000\000' >>self_expected.fvecs; done
cmp -s self.fvecs self_expected.fvecs || fail "self distances are not all exactly 0"
grep -q "simkit knn: 50 queries x 50 base" stderr.txt || fail "knn did not report its timing line: $(cat stderr.txt)"

checks=$((checks + 1))
"$simkit" knn --base base.fvecs --queries q.fvecs -k 50 --metric cosine --ids all.npy --distances alld.npy \
  --device cpu >/dev/null 2>stderr.txt || fail "knn k = n: $(cat stderr.txt)"
# .npy: 128-byte header (magic, version, padded dict) then the data: 5 x 50 int64 and float32.
[ "$(stat -c %s all.npy)" -eq $((128 + 5 * 50 * 8)) ] || fail "ids .npy size $(stat -c %s all.npy)"
[ "$(stat -c %s alld.npy)" -eq $((128 + 5 * 50 * 4)) ] || fail "distances .npy size $(stat -c %s alld.npy)"
grep -aq "'descr': '<i8'" all.npy || fail "ids .npy is not int64"
grep -aq "'shape': (5, 50)" all.npy || fail "ids .npy shape is not (5, 50)"

checks=$((checks + 1))
"$simkit" pairwise --base base.fvecs --queries q.fvecs --metric l1 --out S.fvecs --device cpu >/dev/null 2>stderr.txt ||
  fail "pairwise: $(cat stderr.txt)"
[ "$(stat -c %s S.fvecs)" -eq $((5 * (4 + 50 * 4))) ] || fail "pairwise .fvecs size $(stat -c %s S.fvecs)"
"$simkit" pairwise --base base.fvecs --queries q.fvecs --metric pearson --out S.npy --device cpu >/dev/null 2>&1 ||
  fail "pairwise .npy"
grep -aq "'shape': (5, 50)" S.npy || fail "pairwise .npy shape is not (5, 50)"

checks=$((checks + 1))
OMP_NUM_THREADS=1 "$simkit" gen --rows 3001 --dim 17 --distribution clustered --clusters 7 --seed 9 --out g1.fvecs \
  --queries 11 --queries-out g1q.fvecs >/dev/null 2>&1 || fail "gen (1 thread)"
OMP_NUM_THREADS=3 "$simkit" gen --rows 3001 --dim 17 --distribution clustered --clusters 7 --seed 9 --out g3.fvecs \
  --queries 11 --queries-out g3q.fvecs >/dev/null 2>&1 || fail "gen (3 threads)"
cmp -s g1.fvecs g3.fvecs || fail "gen differs between 1 and 3 threads"
cmp -s g1q.fvecs g3q.fvecs || fail "gen --queries-out differs between 1 and 3 threads"
[ "$(stat -c %s g1.fvecs)" -eq $((3001 * (4 + 17 * 4))) ] || fail "gen base size"
[ "$(stat -c %s g1q.fvecs)" -eq $((11 * (4 + 17 * 4))) ] || fail "gen queries size"
"$simkit" gen --rows 3001 --dim 17 --distribution clustered --clusters 7 --seed 10 --out g10.fvecs >/dev/null 2>&1
cmp -s g1.fvecs g10.fvecs && fail "gen gives the same data for seeds 9 and 10"
# The base rows do not depend on how many query rows follow them.
"$simkit" gen --rows 3001 --dim 17 --distribution clustered --clusters 7 --seed 9 --out g0.fvecs >/dev/null 2>&1
cmp -s g1.fvecs g0.fvecs || fail "gen base rows change with --queries"

# kmeans: bad input refused before any output; a good run writes both outputs, the inertia last.
M() { "$simkit" kmeans "$@"; }
bad "kmeans: k = 0"               "-k|k must"                -- M --data base.fvecs -k 0 --centroids out.npy
bad "kmeans: k > n"               "exceeds"                  -- M --data base.fvecs -k 51 --centroids out.npy --labels out.ivecs
bad "kmeans: metric l1"           "sqeuclidean or cosine"    -- M --data base.fvecs -k 3 --metric l1 --centroids out.npy
bad "kmeans: bad init"            "--init"                   -- M --data base.fvecs -k 3 --init best --centroids out.npy
bad "kmeans: NaN"                 "nan"                      -- M --data nan2.fvecs -k 1 --centroids out.npy
bad "kmeans: empty"               "empty|no vectors"         -- M --data empty.fvecs -k 1 --centroids out.npy
bad "kmeans: truncated"           "trunc.fvecs"              -- M --data trunc.fvecs -k 2 --centroids out.npy
bad "kmeans: same output twice"   "same"                     -- M --data base.fvecs -k 2 --centroids out.npy --labels out.npy
bad "kmeans: labels extension"    "--labels.*extension"      -- M --data base.fvecs -k 2 --centroids out.npy --labels out.csv
checks=$((checks + 1))
if M --data base.fvecs -k 4 --centroids km_c.npy --labels km_l.ivecs --device cpu >stdout.txt 2>stderr.txt; then
  tail -1 stdout.txt | grep -qE '^inertia = [0-9.e+-]+ after [0-9]+ iterations$' || fail "kmeans: last line: $(tail -1 stdout.txt)"
  [ "$(stat -c %s km_l.ivecs)" -eq $((50 * 8)) ] || fail "kmeans: labels file size"
  [ -s km_c.npy ] || fail "kmeans: no centroids file"
  echo "ok   kmeans: $(tail -1 stdout.txt)"
else
  fail "kmeans: good run failed: $(cat stderr.txt)"
fi

# kcenter: the same contract, the radius last.
KC() { "$simkit" kcenter "$@"; }
bad "kcenter: k = 0"              "k must"                   -- KC --data base.fvecs -k 0 --centers out.npy
bad "kcenter: k > n"              "exceeds"                  -- KC --data base.fvecs -k 51 --centers out.npy --labels out.ivecs
bad "kcenter: NaN"                "nan"                      -- KC --data nan2.fvecs -k 1 --centers out.npy
bad "kcenter: truncated"          "trunc.fvecs"              -- KC --data trunc.fvecs -k 2 --centers out.npy
bad "kcenter: same output twice"  "same"                     -- KC --data base.fvecs -k 2 --centers out.npy --labels out.npy
checks=$((checks + 1))
if KC --data base.fvecs -k 5 --centers kc_c.npy --labels kc_l.ivecs --device cpu >stdout.txt 2>stderr.txt; then
  tail -1 stdout.txt | grep -qE '^radius = [0-9.e+-]+$' || fail "kcenter: last line: $(tail -1 stdout.txt)"
  [ "$(stat -c %s kc_l.ivecs)" -eq $((50 * 8)) ] || fail "kcenter: labels file size"
  echo "ok   kcenter: $(tail -1 stdout.txt)"
else
  fail "kcenter: good run failed: $(cat stderr.txt)"
fi

# nbody accel: the same contract. Two unit masses one apart (fvecs: dim 4, then x y z m), written
# byte by byte: body 0 is pulled +1 along x, body 1 -1.
NB() { "$simkit" nbody accel "$@"; }
one='\x00\x00\x80\x3f' zero='\x00\x00\x00\x00'
printf "\x04\x00\x00\x00${zero}${zero}${zero}${one}\x04\x00\x00\x00${one}${zero}${zero}${one}" >pair.fvecs
printf "\x04\x00\x00\x00${zero}\x00\x00\xc0\x7f${zero}${one}" >nan4.fvecs
"$simkit" gen --rows 6 --dim 4 --distribution uniform --seed 5 --out negmass.fvecs >/dev/null 2>&1 || exit 1
bad "nbody: no masses"            "add the masses"           -- NB --bodies q3.fvecs --out out.npy
bad "nbody: 8 columns"            "n x 4"                    -- NB --bodies base.fvecs --out out.npy
bad "nbody: negative mass"        "mass -?[0-9.e-]+ .*>= 0"  -- NB --bodies negmass.fvecs --out out.npy
bad "nbody: NaN"                  "nan"                      -- NB --bodies nan4.fvecs --out out.npy
bad "nbody: method"               "direct .* or bh"          -- NB --bodies pair.fvecs --method fmm --out out.npy
bad "nbody: theta"                "theta"                    -- NB --bodies pair.fvecs --method bh --theta -1 --out out.npy
bad "nbody: softening"            "softening"                -- NB --bodies pair.fvecs --softening -1 --out out.npy
bad "nbody: targets n x 4"        "targets are m x 3"        -- NB --bodies pair.fvecs --targets pair.fvecs --out out.npy
checks=$((checks + 1))
if NB --bodies pair.fvecs --out nb_a.fvecs --potential nb_p.fvecs --device cpu >stdout.txt 2>stderr.txt; then
  # Row 0: dim 3, then ax = 1 (0x3f800000), 0, 0; row 1: ax = -1 (0xbf800000).
  want="00000003 3f800000 00000000 00000000 00000003 bf800000 00000000 00000000"
  got=$(od -An -tx4 -v nb_a.fvecs | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
  if [ "$got" = "$want" ] && grep -q "interactions/s" stdout.txt; then
    echo "ok   nbody accel: two bodies pull each other by G m / r^2 = 1"
  else
    fail "nbody: accelerations $got, expected $want; report: $(cat stdout.txt)"
  fi
else
  fail "nbody: good run failed: $(cat stderr.txt)"
fi

bad "nbody run: dt"               "dt must be"               -- "$simkit" nbody run --dt -1 --n 8 --steps 1
bad "nbody run: init"             "init"                     -- "$simkit" nbody run --init spiral --n 8 --steps 1
checks=$((checks + 1))
if "$simkit" nbody run --init plummer --n 64 --steps 20 --dt 0.005 --every 10 --device cpu >stdout.txt 2>stderr.txt &&
   [ "$(grep -cE '^ +(0|10|20) ' stdout.txt)" -eq 3 ]; then
  echo "ok   nbody run: $(grep -E '^ +20 ' stdout.txt | tr -s ' ')"
else
  fail "nbody run: $(cat stdout.txt stderr.txt | head -8)"
fi
bad "nbody run: theta"            "theta must be"            -- "$simkit" nbody run --method bh --theta -1 --n 8 --steps 1
checks=$((checks + 1))
if "$simkit" nbody run --init collision --n 64 --steps 10 --dt 0.005 --every 10 --method bh --device cpu \
     >stdout.txt 2>stderr.txt && grep -q "Barnes-Hut theta 0.5" stdout.txt &&
   [ "$(grep -cE '^ +(0|10) ' stdout.txt)" -eq 2 ]; then
  echo "ok   nbody run --method bh: $(grep -E '^ +10 ' stdout.txt | tr -s ' ')"
else
  fail "nbody run --method bh: $(cat stdout.txt stderr.txt | head -8)"
fi

checks=$((checks + 1))
expect_examples info gen pairwise knn radius kmeans kcenter demo "bench pairwise" "bench knn" "bench kmeans" "nbody accel" "nbody run"

finish
