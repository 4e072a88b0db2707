# Shared by the CLI contract scripts (sourced): failure counting, the bad-input check and the
# --help check. The sourcing script sets `keep` to an existing output file (with a copy at
# keep.orig) that no failed command may touch.
failures=0
checks=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# bad LABEL PATTERN -- COMMAND...: status 2, one line "simkit: error: ..." matching PATTERN
# (case-insensitive extended regex) and free of raw control bytes, no out.* file and no staging
# file left in the work dir, and $keep unchanged.
bad() {
  local label=$1 pattern=$2
  shift 3
  checks=$((checks + 1))
  rm -f out.* .out.*
  "$@" >stdout.txt 2>stderr.txt
  local rc=$? lines left
  lines=$(wc -l <stderr.txt)
  [ "$rc" -eq 2 ] || fail "$label: exit status $rc, expected 2 (stderr: $(head -c 300 stderr.txt))"
  [ "$lines" -eq 1 ] || fail "$label: $lines stderr lines, expected 1: $(head -c 300 stderr.txt)"
  grep -q '^simkit: error: ' stderr.txt || fail "$label: stderr does not start with 'simkit: error: ': $(head -c 300 stderr.txt)"
  grep -qiE -- "$pattern" stderr.txt || fail "$label: stderr does not name the problem (/$pattern/): $(cat stderr.txt)"
  # Text from a file or the command line reaches the line escaped, never as a raw control byte.
  LC_ALL=C grep -q '[[:cntrl:]]' stderr.txt && fail "$label: stderr holds a raw control byte: $(od -c stderr.txt | head -5)"
  left=$(ls -A | grep -E '^\.?(out|keep)\.' | grep -vxF -e "$keep" -e keep.orig | tr '\n' ' ')
  [ -z "$left" ] || fail "$label: left files behind: $left"
  cmp -s "$keep" keep.orig || fail "$label: an existing output file was modified"
  echo "ok   $label: $(cat stderr.txt)"
}

# expect_examples CMD...: every `simkit CMD --help` succeeds and shows an example.
expect_examples() {
  local cmd
  for cmd in "$@"; do
    # shellcheck disable=SC2086
    "$simkit" $cmd --help >help.txt 2>&1 || fail "$cmd --help exits non-zero"
    grep -q "^Examples\?:" help.txt || fail "$cmd --help has no example"
  done
}

finish() {
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
}
