#!/usr/bin/env bash
# The contract of `simkit gauss` and `simkit kde`: bad input exits with status 2, one stderr
# line "simkit: error: ..." naming the problem, and no output (nor staging) file; good input
# writes an m x 1 float64 .npy whose values match sums worked out by hand (awk, float64).
#
#   gauss_contract.sh SIMKIT_BINARY WORK_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before the script changes directory
export LC_ALL=C # awk's printf "%c" writes bytes, not characters
simkit=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the script changes directory
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
keep=keep.npy
# shellcheck source=contract_lib.sh
source "$here/contract_lib.sh"

# fvecs FILE D V1 V2 ...: rows of D floats (values with an exact float form), via awk + printf.
fvecs() {
  local file=$1 d=$2
  shift 2
  : >"$file"
  local i=0 v
  for v in "$@"; do
    if [ $((i % d)) -eq 0 ]; then printf "\\$(printf %03o "$d")\\000\\000\\000" >>"$file"; fi
    # IEEE float32 bits of v, little-endian, through awk's float64 (exact for these values).
    awk -v x="$v" 'BEGIN {
      if (x == 0) { b = 0 } else {
        s = x < 0 ? 1 : 0; if (s) x = -x; e = 0
        while (x >= 2) { x /= 2; e++ } while (x < 1) { x *= 2; e-- }
        b = s * 2^31 + (e + 127) * 2^23 + (x - 1) * 2^23 }
      for (k = 0; k < 4; k++) { printf "%c", b % 256; b = int(b / 256) } }' | LC_ALL=C cat >>"$file"
    i=$((i + 1))
  done
}

# npy_f8 FILE SHAPE HEXBYTES: a float64 .npy with the given shape text and raw little-endian data.
npy_f8() {
  local file=$1 shape=$2 data=$3
  local dict="{'descr': '<f8', 'fortran_order': False, 'shape': $shape, }"
  local pad=$(((64 - (10 + ${#dict} + 1) % 64) % 64))
  local hl=$((${#dict} + pad + 1))
  {
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o "$hl")\\000"
    printf '%s%*s\n' "$dict" "$pad" ""
    printf "$data"
  } >"$file"
}

# The float64 values of an .npy written by simkit, one per line.
values() {
  local hl
  hl=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
  od -A n -t f8 -v -j $((10 + hl)) "$1" | tr -s ' ' '\n' | grep -v '^$'
}

# expect LABEL FILE EXPECTED...: each value within 1e-6 relative (1e-300 absolute) of its expectation.
expect() {
  local label=$1 file=$2
  shift 2
  checks=$((checks + 1))
  [ -f "$file" ] || {
    fail "$label: no output $file"
    return
  }
  local got
  got=$(values "$file" | tr '\n' ' ')
  local shape
  shape=$(head -c 128 "$file" | tr -d '\000' | grep -ao "'shape': ([0-9]*, 1)")
  [ "$shape" = "'shape': ($#, 1)" ] || fail "$label: shape is '$shape', expected ($#, 1)"
  awk -v got="$got" -v want="$*" -v label="$label" 'BEGIN {
      n = split(got, g, " "); m = split(want, w, " ")
      if (n != m) { print "count " n " != " m; exit 1 }
      for (i = 1; i <= n; i++) {
        err = g[i] - w[i]; if (err < 0) err = -err; ref = w[i] < 0 ? -w[i] : w[i]
        if (err > 1e-6 * ref + 1e-300) { printf "value %d: got %.17g, expected %.17g\n", i, g[i], w[i]; exit 1 } } }' \
    >why.txt || {
    fail "$label: $(cat why.txt)"
    return
  }
  echo "ok   $label: $got"
}

e() { awk "BEGIN { printf \"%.17g\", $1 }"; }

# ---- fixtures
fvecs origin.fvecs 2 0 0
fvecs two.fvecs 2 0 0 1 0
fvecs targets.fvecs 2 0.5 0 0 0 0 1
fvecs targets3.fvecs 3 0 0 0
fvecs line.fvecs 1 0 1
fvecs at1.fvecs 1 0 0.5
fvecs same.fvecs 1 2 2 2
fvecs one.fvecs 1 0
printf '\002\000\000\000\000\000\000\000\000\000\300\177' >nan.fvecs   # (0, NaN)
npy_f8 q1.npy "(1,)" '\x00\x00\x00\x00\x00\x00\x04\x40'                 # 2.5
npy_f8 q2.npy "(2, 1)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xe0\xbf'  # 1, -0.5
npy_f8 q3.npy "(3,)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f'
npy_f8 qnan.npy "(2,)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf8\x7f'
npy_f8 qmat.npy "(2, 2)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f'
npy_f8 w13.npy "(2,)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x08\x40'  # 1, 3
npy_f8 wneg.npy "(2,)" '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xe0\xbf'
npy_f8 wzero.npy "(2,)" '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
echo "previous content" >keep.npy
cp keep.npy keep.orig

G() { "$simkit" gauss --device cpu "$@"; }
D() { "$simkit" kde --device cpu "$@"; }

# ---- gauss: bad input
bad "gauss: h = 0"              "bandwidth.*h > 0"     -- G --sources two.fvecs --targets targets.fvecs --bandwidth 0 --out out.npy
bad "gauss: h < 0"              "bandwidth.*h > 0"     -- G --sources two.fvecs --targets targets.fvecs --bandwidth -1 --out out.npy
bad "gauss: h = nan"            "bandwidth"            -- G --sources two.fvecs --targets targets.fvecs --bandwidth nan --out out.npy
bad "gauss: h = inf"            "bandwidth"            -- G --sources two.fvecs --targets targets.fvecs --bandwidth inf --out out.npy
bad "gauss: NaN in sources"     "nan|finite"           -- G --sources nan.fvecs --targets targets.fvecs --bandwidth 1 --out out.npy
bad "gauss: NaN in targets"     "nan|finite"           -- G --sources two.fvecs --targets nan.fvecs --bandwidth 1 --out out.npy
bad "gauss: d mismatch"         "dimension|d = 3"      -- G --sources two.fvecs --targets targets3.fvecs --bandwidth 1 --out out.npy
bad "gauss: weights length"     "weights.*3 weights"   -- G --sources two.fvecs --targets targets.fvecs --weights q3.npy --bandwidth 1 --out out.npy
bad "gauss: NaN weight"         "weights.*finite"      -- G --sources two.fvecs --targets targets.fvecs --weights qnan.npy --bandwidth 1 --out out.npy
bad "gauss: 2-D weights"        "weights.*vector"      -- G --sources two.fvecs --targets targets.fvecs --weights qmat.npy --bandwidth 1 --out out.npy
bad "gauss: missing weights"    "weights.*absent"      -- G --sources two.fvecs --targets targets.fvecs --weights absent.npy --bandwidth 1 --out out.npy
bad "gauss: eps = 0"            "eps"                  -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --eps 0 --out out.npy
bad "gauss: eps = 1"            "eps"                  -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --eps 1 --out out.npy
bad "gauss: eps = -1e-6"        "eps"                  -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --eps -1e-6 --out out.npy
bad "gauss: bad method"         "method|fmm"           -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --method fmm --out out.npy
bad "gauss: bad device"         "device 'tpu'"         -- "$simkit" gauss --sources two.fvecs --targets targets.fvecs --bandwidth 1 --device tpu --out out.npy
bad "gauss: missing sources"    "sources.*nope"        -- G --sources nope.fvecs --targets targets.fvecs --bandwidth 1 --out out.npy
bad "gauss: out extension"      "--out.*extension"     -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --out out.fvecs
bad "gauss: out dir missing"    "does not exist"       -- G --sources two.fvecs --targets targets.fvecs --bandwidth 1 --out no/dir/out.npy
bad "gauss: missing --bandwidth" "bandwidth"           -- G --sources two.fvecs --targets targets.fvecs --out out.npy
bad "gauss: keeps old output"   "weights"              -- G --sources two.fvecs --targets targets.fvecs --weights q3.npy --bandwidth 1 --out keep.npy

# ---- kde: bad input
bad "kde: bandwidth word"       "bandwidth.*wide"      -- D --data line.fvecs --at at1.fvecs --bandwidth wide -o out.npy
bad "kde: bandwidth 0"          "bandwidth.*sigma > 0" -- D --data line.fvecs --at at1.fvecs --bandwidth 0 -o out.npy
bad "kde: bandwidth < 0"        "bandwidth.*sigma > 0" -- D --data line.fvecs --at at1.fvecs --bandwidth -0.5 -o out.npy
bad "kde: d mismatch"           "dimension"            -- D --data line.fvecs --at targets.fvecs --bandwidth 1 -o out.npy
bad "kde: NaN in data"          "--data.*nan"          -- D --data nan.fvecs --at targets.fvecs --bandwidth 1 -o out.npy
bad "kde: NaN, scott"           "--data.*nan"          -- D --data nan.fvecs --at targets.fvecs -o out.npy
bad "kde: NaN in --at"         "--at.*nan"            -- D --data two.fvecs --at nan.fvecs --bandwidth 1 -o out.npy
bad "kde: negative weight"      "negative"             -- D --data line.fvecs --at at1.fvecs --weights wneg.npy --bandwidth 1 -o out.npy
bad "kde: zero weights"         "sum to 0"             -- D --data line.fvecs --at at1.fvecs --weights wzero.npy --bandwidth 1 -o out.npy
bad "kde: weights length"       "3 weights"            -- D --data line.fvecs --at at1.fvecs --weights q3.npy --bandwidth 1 -o out.npy
bad "kde: eps = 2"              "eps"                  -- D --data line.fvecs --at at1.fvecs --bandwidth 1 --eps 2 -o out.npy
bad "kde: bad method"           "method"               -- D --data line.fvecs --at at1.fvecs --bandwidth 1 --method fast -o out.npy
bad "kde: scott on one row"     "at least 2 rows"      -- D --data one.fvecs --at at1.fvecs --bandwidth scott -o out.npy
bad "kde: zero spread"          "zero spread"          -- D --data same.fvecs --at at1.fvecs --bandwidth silverman -o out.npy
bad "kde: out extension"        "--out.*extension"     -- D --data line.fvecs --at at1.fvecs --bandwidth 1 -o out.txt

# ---- gauss: values
rm -f g*.npy
for method in direct auto; do
  G --sources origin.fvecs --targets targets.fvecs --bandwidth 0.5 --method $method --out g1.npy 2>/dev/null
  expect "gauss $method: one source, unit weight" g1.npy "$(e 'exp(-1)')" 1 "$(e 'exp(-4)')"
done
G --sources origin.fvecs --targets targets.fvecs --weights q1.npy --bandwidth 0.5 --out g2.npy 2>/dev/null
expect "gauss: weight 2.5" g2.npy "$(e '2.5*exp(-1)')" 2.5 "$(e '2.5*exp(-4)')"
G --sources two.fvecs --targets targets.fvecs --weights q2.npy --bandwidth 0.5 --out g3.npy 2>/dev/null
expect "gauss: weights 1, -0.5" g3.npy "$(e '0.5*exp(-1)')" "$(e '1-0.5*exp(-4)')" "$(e 'exp(-4)-0.5*exp(-8)')"
G --sources two.fvecs --targets targets.fvecs --weights q2.npy --bandwidth 2 --method ifgt --eps 1e-8 --out g4.npy \
  --verbose >verbose.txt 2>&1
if [ -f g4.npy ]; then
  expect "gauss ifgt: weights 1, -0.5, h = 2" g4.npy "$(e '0.5*exp(-1/16)')" "$(e '1-0.5*exp(-1/4)')" \
    "$(e 'exp(-1/4)-0.5*exp(-2/4)')"
  checks=$((checks + 1))
  grep -q "^method: ifgt" verbose.txt || fail "gauss --method ifgt --verbose does not say ifgt: $(cat verbose.txt)"
else
  fail "gauss --method ifgt refused a case it must handle: $(cat verbose.txt)"
fi

# ---- kde: values
s=0.5
D --data one.fvecs --at at1.fvecs --bandwidth $s -o d1.npy 2>/dev/null
expect "kde: one point, sigma 0.5" d1.npy "$(e "1/sqrt(2*3.141592653589793*$s*$s)")" \
  "$(e "exp(-0.5)/sqrt(2*3.141592653589793*$s*$s)")"
D --data line.fvecs --at at1.fvecs --weights w13.npy --bandwidth $s -o d2.npy 2>/dev/null
n0="(0.25*1+0.75*exp(-2))/sqrt(2*3.141592653589793*0.25)"
n1="(0.25*exp(-0.5)+0.75*exp(-0.5))/sqrt(2*3.141592653589793*0.25)"
expect "kde: weights 1, 3 normalised" d2.npy "$(e "$n0")" "$(e "$n1")"
# Scott on {0, 1}: s = sqrt(1/2) (n - 1), sigma = 2^(-1/5) s.
sc="(2^(-1/5)*sqrt(0.5))"
D --data line.fvecs --at at1.fvecs --bandwidth scott -o d3.npy 2>/dev/null
expect "kde: scott" d3.npy "$(e "0.5*(1+exp(-1/(2*$sc^2)))/sqrt(2*3.141592653589793*$sc^2)")" \
  "$(e "exp(-0.125/$sc^2)/sqrt(2*3.141592653589793*$sc^2)")"
sv="((4/3)^(1/5)*2^(-1/5)*sqrt(0.5))"
D --data line.fvecs --at at1.fvecs --bandwidth silverman -o d4.npy 2>/dev/null
expect "kde: silverman" d4.npy "$(e "0.5*(1+exp(-1/(2*$sv^2)))/sqrt(2*3.141592653589793*$sv^2)")" \
  "$(e "exp(-0.125/$sv^2)/sqrt(2*3.141592653589793*$sv^2)")"
# d = 2: the normalisation is (2 pi sigma^2)^(-1).
D --data origin.fvecs --at targets.fvecs --bandwidth 1 -o d5.npy 2>/dev/null
expect "kde: d = 2" d5.npy "$(e 'exp(-0.125)/(2*3.141592653589793)')" "$(e '1/(2*3.141592653589793)')" \
  "$(e 'exp(-0.5)/(2*3.141592653589793)')"

# ---- kde on mixtures vs a float64 direct sum in awk: 2-d Old Faithful-like data (eruption
# minutes, waiting minutes; two clusters) and a 1-d three-component mixture. awk draws the points,
# rounds them to float32 (the values simkit reads), writes the .fvecs and sums in float64.
mixture() { # mixture KIND RULE: writes mix_data.fvecs, mix_at.fvecs, prints the expected densities
  awk -v kind="$1" -v rule="$2" '
    function f32(x,   s, e, m, t) {
      if (x == 0) return 0
      s = x < 0 ? -1 : 1; x = x < 0 ? -x : x; e = 0
      while (x >= 2) { x /= 2; e++ } while (x < 1) { x *= 2; e-- }
      m = int((x - 1) * 8388608 + 0.5); if (m == 8388608) { m = 0; e++ }
      bits[0] = (s < 0 ? 2147483648 : 0) + (e + 127) * 8388608 + m
      t = (1 + m / 8388608); while (e > 0) { t *= 2; e-- } while (e < 0) { t /= 2; e++ }
      return s * t }
    function put(file, v,   b, k) { f32(v); b = bits[0]; for (k = 0; k < 4; k++) { printf "%c", b % 256 > file; b = int(b / 256) } }
    function head(file, d) { printf "%c%c%c%c", d, 0, 0, 0 > file }
    function normal() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307179586 * rand()) }
    BEGIN {
      srand(7); pi = 3.141592653589793
      if (kind == "faithful") { d = 2; n = 272; m = 60 } else { d = 1; n = 500; m = 80 }
      for (i = 0; i < n; i++) {
        u = rand()
        if (kind == "faithful") {
          if (u < 0.35) { a = 2.0 + 0.3 * normal(); b = 54 + 6 * normal() } else { a = 4.3 + 0.4 * normal(); b = 80 + 6 * normal() }
          x[i, 0] = f32(a); x[i, 1] = f32(b)
        } else {
          x[i, 0] = f32(u < 0.5 ? -2 + 0.5 * normal() : (u < 0.8 ? 1 + 0.3 * normal() : 3 + 1.0 * normal()))
        }
        head("mix_data.fvecs", d); for (k = 0; k < d; k++) put("mix_data.fvecs", x[i, k])
      }
      # Evaluation points: every other one a data point, the rest spread over the data range.
      for (k = 0; k < d; k++) { lo[k] = x[0, k]; hi[k] = x[0, k]; for (i = 1; i < n; i++) { if (x[i, k] < lo[k]) lo[k] = x[i, k]; if (x[i, k] > hi[k]) hi[k] = x[i, k] } }
      for (j = 0; j < m; j++) {
        for (k = 0; k < d; k++) y[j, k] = j % 2 ? x[(j * 37) % n, k] : f32(lo[k] + (hi[k] - lo[k]) * (j + 0.5) / m)
        head("mix_at.fvecs", d); for (k = 0; k < d; k++) put("mix_at.fvecs", y[j, k])
      }
      s = 0
      for (k = 0; k < d; k++) { mu = 0; for (i = 0; i < n; i++) mu += x[i, k]; mu /= n; ss = 0; for (i = 0; i < n; i++) ss += (x[i, k] - mu)^2; s += sqrt(ss / (n - 1)) }
      s /= d
      sigma = n^(-1 / (d + 4)) * s; if (rule == "silverman") sigma *= (4 / (d + 2))^(1 / (d + 4))
      norm = (2 * pi * sigma * sigma)^(-d / 2)
      for (j = 0; j < m; j++) {
        acc = 0
        for (i = 0; i < n; i++) { r2 = 0; for (k = 0; k < d; k++) r2 += (y[j, k] - x[i, k])^2; acc += exp(-r2 / (2 * sigma * sigma)) }
        printf "%.17g\n", norm * acc / n
      } }'
}
for kind in faithful mix1; do
  for rule in scott silverman; do
    want=$(mixture $kind $rule | tr '\n' ' ')
    for method in direct auto; do
      rm -f dm.npy
      D --data mix_data.fvecs --at mix_at.fvecs --bandwidth $rule --method $method -o dm.npy 2>/dev/null
      # shellcheck disable=SC2086
      expect "kde $kind $rule $method vs float64" dm.npy $want >expect.txt
      cut -c 1-150 expect.txt
    done
  done
done

checks=$((checks + 1))
expect_examples gauss kde "bench gauss"

finish
