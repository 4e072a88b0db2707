#!/usr/bin/env bash
# `simkit index`: build / add / remove / search / info as a program. Bad input exits 2 with one
# "simkit: error:" line, writes nothing, and leaves an existing index file byte for byte as it
# was (a failed add or remove never half-rewrites it); good runs print what they promise.
#
#   index_contract.sh SIMKIT_BINARY WORK_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
simkit=$1
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
keep=keep.simkit
# shellcheck source=contract_lib.sh
source "$here/contract_lib.sh"

"$simkit" gen --rows 400 --dim 8 --distribution clustered --seed 1 --out base.npy >/dev/null 2>&1 || exit 1
"$simkit" gen --rows 30 --dim 8 --seed 2 --out more.npy >/dev/null 2>&1 || exit 1
"$simkit" gen --rows 20 --dim 8 --seed 3 --out q.npy >/dev/null 2>&1 || exit 1
"$simkit" gen --rows 5 --dim 3 --seed 4 --out q3.npy >/dev/null 2>&1 || exit 1
# One row of d = 8 whose fourth value is a NaN (0x7fc00000), little-endian.
{ printf '\010\000\000\000'; head -c 12 /dev/zero; printf '\000\000\300\177'; head -c 16 /dev/zero; } >nan8.fvecs
"$simkit" gen --rows 2 --dim 8 --seed 5 --out two.npy >/dev/null 2>&1 || exit 1
# ids 0 and 5 as an .ivecs column (one id per row), and 3 ids for 30 rows.
printf '\001\000\000\000\000\000\000\000\001\000\000\000\005\000\000\000' >ids_0_5.ivecs
printf '\001\000\000\000\007\000\000\000\001\000\000\000\010\000\000\000\001\000\000\000\011\000\000\000' >ids3.ivecs
"$simkit" index build --base base.npy --type ivf_flat --nlist 16 --metric l2 --out keep.simkit --device cpu \
  >/dev/null 2>&1 || { echo "build failed"; exit 1; }
cp keep.simkit keep.orig
head -c 1000 keep.simkit >trunc.simkit

I() { "$simkit" index "$@"; }
bad "build: unknown type"       "--type must be"         -- I build --base base.npy --type graph --metric l2 --out out.simkit
bad "build: unknown metric"     "metric"                 -- I build --base base.npy --metric hamming --out out.simkit
bad "build: nlist > n"          "exceeds"                -- I build --base base.npy --nlist 401 --metric l2 --out out.simkit
bad "build: NaN rows"           "nan"                    -- I build --base nan8.fvecs --type flat --metric l2 --out out.simkit
bad "build: missing directory"  "does not exist"         -- I build --base base.npy --metric l2 --out nodir/out.simkit
bad "add: wrong dimension"      "dimension"              -- I add --index keep.simkit --base q3.npy
bad "add: NaN rows"             "nan"                    -- I add --index keep.simkit --base nan8.fvecs
bad "add: ids clash"            "already in the index"   -- I add --index keep.simkit --base two.npy --ids ids_0_5.ivecs
bad "add: id count"             "3 ids for 30"           -- I add --index keep.simkit --base more.npy --ids ids3.ivecs
bad "add: truncated index"      "trunc.simkit"           -- I add --index trunc.simkit --base more.npy
bad "search: k = 0"             "k must"                 -- I search --index keep.simkit --queries q.npy -k 0 --ids out.npy
bad "search: nprobe 0"          "nprobe"                 -- I search --index keep.simkit --queries q.npy -k 3 --nprobe 0 --ids out.npy
bad "search: wrong dimension"   "dimension"              -- I search --index keep.simkit --queries q3.npy -k 3 --ids out.npy
bad "search: bad output"        "extension"              -- I search --index keep.simkit --queries q.npy -k 3 --ids out.txt
bad "search: refine < 0"        "refine"                 -- I search --index keep.simkit --queries q.npy -k 3 --refine -1 --ids out.npy
bad "build: refine-on"          "refine-on"              -- I build --base base.npy --type ivf_pq --refine-on gpu --metric l2 --out out.simkit
bad "build: lsh bits 40"        "bits must be"           -- I build --base base.npy --description lsh,bits=40 --metric cosine --out out.simkit
bad "build: pq m divides d"     "divide"                 -- I build --base base.npy --type ivf_pq --nlist 8 --m 3 --metric l2 --out out.simkit
bad "build: tree cosine"        "l2 and sqeuclidean"     -- I build --base base.npy --type tree --metric cosine --out out.simkit
bad "info: truncated"           "truncated"              -- I info --index trunc.simkit
bad "info: missing"             "missing.simkit"         -- I info --index missing.simkit

# Good runs: search with every list probed finds each base row's own id first; add continues
# the ids; remove takes them out; info reports the size.
checks=$((checks + 1))
if I search --index keep.simkit --queries base.npy -k 1 --nprobe 16 --ids self.npy --device cpu >/dev/null 2>stderr.txt &&
   python3 -c "import numpy as n; a=n.load('self.npy'); assert (a[:,0]==n.arange(400)).all()" 2>/dev/null; then
  echo "ok   search: every row finds itself"
else
  command -v python3 >/dev/null && python3 -c "import numpy" 2>/dev/null && fail "search: rows do not find themselves"
fi
checks=$((checks + 1))
cp keep.simkit work.simkit
if I add --index work.simkit --base more.npy --device cpu >/dev/null 2>&1 &&
   I info --index work.simkit | grep -qE '^vectors +430$' && I info --index work.simkit | grep -qE '^next id +430$' &&
   I remove --index work.simkit --ids ids_0_5.ivecs | grep -q '^removed 2 of 2 ids$' &&
   I info --index work.simkit | grep -qE '^vectors +428$'; then
  echo "ok   add / remove / info"
else
  fail "add / remove / info: $(I info --index work.simkit 2>&1 | tr '\n' ' ')"
fi
# lsh with one table of 24 bits: most of the 20 queries find fewer than 3 rows in their bucket;
# their rows are padded (id -1) and the command says how many, with no full scan behind it.
checks=$((checks + 1))
if I build --base base.npy --description lsh,tables=1,bits=24 --metric cosine --out lsh.simkit --device cpu \
     >/dev/null 2>&1 &&
   I search --index lsh.simkit --queries q.npy -k 3 --ids lsh_ids.npy --device cpu 2>lsh.txt >/dev/null &&
   grep -qE 'of 20 queries had fewer than k = 3 candidates' lsh.txt; then
  echo "ok   lsh: short rows padded and reported"
else
  fail "lsh short rows: $(cat lsh.txt)"
fi
# ivf_pq with every list probed and every candidate re-ranked, lsh with every bucket probed, the
# tree, and hnsw keeping as many candidates as rows are exact: every base row finds itself.
for spec in "--type ivf_pq --nlist 8 --m 4 --refine 4|--nprobe 8 --refine 1000" \
            "--description lsh,tables=4,bits=3|--probes 1000000" "--type tree|" \
            "--type hnsw --m 8 --ef-construction 40|--ef 400"; do
  checks=$((checks + 1))
  if ! I build --base base.npy ${spec%%|*} --metric l2 --out exact.simkit --device cpu >/dev/null 2>&1 ||
     ! I search --index exact.simkit --queries base.npy -k 1 ${spec#*|} --ids self.npy --device cpu >/dev/null 2>&1; then
    fail "${spec}: build or search failed"
  elif ! python3 -c "import numpy" 2>/dev/null; then
    echo "skip build ${spec%%|*}, search ${spec#*|}: the python3 on PATH has no numpy to read the ids"
  elif python3 -c "import numpy as n; a=n.load('self.npy'); assert (a[:,0]==n.arange(400)).all()" 2>/dev/null; then
    echo "ok   build ${spec%%|*}, search ${spec#*|}: every row finds itself"
  else
    fail "${spec}: rows do not find themselves"
  fi
done
# bench ann, smoke size: the flat row and ivf_flat with every list probed find every truth id.
checks=$((checks + 1))
if "$simkit" bench ann --quick --device cpu --cases synthetic --indexes flat,ivf_flat --nlist 64 --nprobe 1,64 \
     --single 5 --repeat 1 --csv ann.csv >ann.txt 2>&1 &&
   grep -qE '^simkit,synthetic,flat,0,0,1\.00000,' ann.csv && grep -qE '^simkit,synthetic,ivf_flat,64,64,1\.00000,' ann.csv &&
   grep -qE '^simkit,synthetic,ivf_flat,64,1,0\.' ann.csv; then
  echo "ok   bench ann --quick: exact rows at recall 1"
else
  fail "bench ann --quick: $(tail -5 ann.txt; cat ann.csv 2>/dev/null)"
fi
# --allowed: the search returns only listed ids. The lists are written here as .npy without numpy
# (npy_ints FILE DESCR WIDTH SHAPE ID...: little-endian integers, non-negative, format 1.0) and
# the ids read back from .ivecs with od, so these checks run wherever bash does.
npy_ints() {
  local file=$1 descr=$2 width=$3 shape=$4 id hex bytes i
  shift 4
  local header="{'descr': '$descr', 'fortran_order': False, 'shape': ($shape), }"
  while [ $(((10 + ${#header} + 1) % 64)) -ne 0 ]; do header+=" "; done
  local len=$((${#header} + 1))
  {
    printf '\223NUMPY\001\000'
    printf '%b' "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    printf '%s\n' "$header"
    for id in "$@"; do
      hex=$(printf "%0$((2 * width))x" "$id") bytes=""
      for ((i = 2 * width - 2; i >= 0; i -= 2)); do bytes+="\\x${hex:i:2}"; done
      printf '%b' "$bytes"
    done
  } >"$file"
}
# allowed_rows IVECS K FULL ID...: every row holds K ids, none repeated, each one of ID... or -1;
# FULL=1: each row holds every ID (fewer than K of them, the rest -1), FULL=0: no -1 at all.
allowed_rows() {
  local file=$1 k=$2 full=$3
  shift 3
  od -An -v -t d4 "$file" | tr -s ' ' '\n' | grep -v '^$' |
    awk -v k="$k" -v full="$full" -v list="$*" '
      BEGIN { rows = 0; n = split(list, a, " "); for (j = 1; j <= n; ++j) ok[a[j]] = 1 }
      pos == 0 { if ($1 != k) { print "row " rows ": " $1 " ids, expected " k; bad = 1 } pos = k; delete seen; got = 0; pad = 0; next }
      {
        --pos
        if ($1 == -1) ++pad
        else if (!($1 in ok)) { print "row " rows ": id " $1 " is not allowed"; bad = 1 }
        else if ($1 in seen) { print "row " rows ": id " $1 " twice"; bad = 1 }
        else { seen[$1] = 1; ++got }
        if (pos == 0) {
          if (full && (got != n || pad != k - n)) { print "row " rows ": " got " of the " n " allowed ids"; bad = 1 }
          if (!full && pad > 0) { print "row " rows ": " pad " padded slots"; bad = 1 }
          ++rows
        }
      }
      END { if (rows == 0) { print "no rows"; bad = 1 } exit bad }'
}
few="3 50 77 120 200 311 399"
# shellcheck disable=SC2086
npy_ints few.npy '<i4' 4 '7,' $few
many=$(seq 0 399 | awk '$1 % 4 != 0' | tr '\n' ' ')  # 300 of the 400 ids
# shellcheck disable=SC2086
npy_ints many.npy '<i8' 8 '300,' $many
npy_ints unsorted.npy '<i8' 8 '4,' 3 9 7 12
npy_ints repeated.npy '<i8' 8 '3,' 3 7 7
npy_ints square.npy '<i8' 8 '2, 2' 1 2 3 4
npy_ints floats.npy '<f8' 8 '2,' 1 2
bad "search: --allowed unsorted"  "--allowed: 'unsorted.npy' must be sorted ascending without repeats; position 2 holds 7 after 9" \
                                                         -- I search --index keep.simkit --queries q.npy -k 3 --allowed unsorted.npy --ids out.npy
bad "search: --allowed repeated"  "without repeats; position 2 holds 7 after 7" -- I search --index keep.simkit --queries q.npy -k 3 --allowed repeated.npy --ids out.npy
bad "search: --allowed 2-D"       "one list of ids .*2 x 2" -- I search --index keep.simkit --queries q.npy -k 3 --allowed square.npy --ids out.npy
bad "search: --allowed floats"    "--allowed: .*integer"   -- I search --index keep.simkit --queries q.npy -k 3 --allowed floats.npy --ids out.npy
bad "search: --allowed missing"   "--allowed: .*nope.npy"  -- I search --index keep.simkit --queries q.npy -k 3 --allowed nope.npy --ids out.npy
bad "search: --refine on ivf_flat" "--refine applies to ivf_pq; this index is ivf_flat" -- I search --index keep.simkit --queries q.npy -k 3 --refine 4 --ids out.npy
bad "search: --probes on ivf_flat" "--probes applies to lsh; this index is ivf_flat" -- I search --index keep.simkit --queries q.npy -k 3 --probes 2 --ids out.npy
bad "search: --ef on ivf_flat"     "--ef applies to hnsw; this index is ivf_flat" -- I search --index keep.simkit --queries q.npy -k 3 --ef 64 --ids out.npy
bad "search: --ef negative"        "--ef must be >= 0"      -- I search --index keep.simkit --queries q.npy -k 3 --ef -1 --ids out.npy
checks=$((checks + 1))
# shellcheck disable=SC2086
if I search --index keep.simkit --queries q.npy -k 10 --nprobe 16 --allowed few.npy --ids few.ivecs --device cpu \
     >/dev/null 2>few.txt &&
   grep -qE "^simkit index search: --allowed 'few.npy': 7 ids allowed; (not )?gathered" few.txt &&
   grep -qE '20 of 20 queries had fewer than k = 10 candidates' few.txt &&
   allowed_rows few.ivecs 10 1 $few >rows.txt; then
  echo "ok   search --allowed (7 ids, int32 .npy): every row holds the 7 and pads 3"
else
  fail "search --allowed 7 ids: $(cat few.txt rows.txt 2>/dev/null | head -5)"
fi
checks=$((checks + 1))
# shellcheck disable=SC2086
if I search --index keep.simkit --queries base.npy -k 5 --nprobe 16 --allowed many.npy --ids many.ivecs --device cpu \
     >/dev/null 2>many.txt &&
   grep -qE "^simkit index search: --allowed 'many.npy': 300 ids allowed; (not )?gathered" many.txt &&
   allowed_rows many.ivecs 5 0 $many >rows.txt; then
  echo "ok   search --allowed (300 ids, int64 .npy): every id returned is allowed, no row padded"
else
  fail "search --allowed 300 ids: $(cat many.txt rows.txt 2>/dev/null | head -5)"
fi
expect_examples index "bench ann"
finish
