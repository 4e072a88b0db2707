#!/usr/bin/env bash
# The contract of `simkit bench primitives` on the CPU: bad options exit with status 2 and one
# stderr line naming the problem, writing no CSV; a --quick run times every case beside its
# std::execution::par peer, passes every check and writes one CSV row per measurement.
#
#   primitives_contract.sh SIMKIT_BINARY WORK_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before the script changes directory
simkit=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the script changes directory
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
keep=keep.csv
# shellcheck source=contract_lib.sh
source "$here/contract_lib.sh"
echo "an earlier result" >"$keep" && cp "$keep" keep.orig

P() { "$simkit" bench primitives --device cpu --quick "$@"; }
bad "unknown case" "not a primitives case" -- P --cases scan,heapsort --csv "$keep"
bad "empty case list" "empty" -- P --cases , --csv "$keep"
bad "size exponent out of range" "exponents go from 1 to 30" -- P --sizes 31 --csv "$keep"
bad "size not a number" "not an integer" -- P --sizes 2x --csv "$keep"
bad "trailing comma in sizes" "ends with a comma" -- P --sizes 10, --csv "$keep"
bad "unknown input order" "random, sorted, reverse" -- P --inputs shuffled --csv "$keep"

# A good run: every case, every row PASS, CSV rows = simkit rows + peer rows.
checks=$((checks + 1))
if P --csv out.csv >run.txt 2>&1; then
  rows=$(($(wc -l <out.csv) - 1))
  # scan 1 + merge 3 + sort 3 + sortpairs 3 each with a peer, spmv 1, select 2.
  [ "$rows" -eq 23 ] || fail "quick run: $rows CSV rows, expected 23"
  [ "$(grep -c ',PASS$' out.csv)" -eq "$rows" ] || fail "quick run: not every row passed: $(grep -v ',PASS$' out.csv)"
  [ "$(grep -c ',std-par,' out.csv)" -eq 10 ] || fail "quick run: expected 10 std-par peer rows"
  grep -q 'backend: ' run.txt || fail "quick run: the header does not name the std::execution backend"
  echo "ok   quick run: $rows rows, all PASS"
else
  fail "quick run exits non-zero: $(tail -5 run.txt)"
fi

checks=$((checks + 1))
expect_examples "bench primitives"
finish
