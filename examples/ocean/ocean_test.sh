#!/usr/bin/env bash
# The ocean example's CTest checks (CMakeLists.txt registers them):
#   ocean_test.sh OCEAN cpu|gpu|options WORKDIR
# cpu / gpu: solves small grids in both layouts with --check (max error <= 1e-6 against the
# exact discrete solution), SOR and plain Gauss-Seidel, block counts that do not divide n.
# options: --help, one-line errors with exit status 2, --field, --tol 0, not converging.
# gpu exits 77 (CTest: skipped) with a message where no GPU solver or no GPU is available.
ocean=$1 mode=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
status=0

# Runs ocean with the given options and expects exit status $expect.
run() {
  local expect=$1
  shift
  "$ocean" "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -ne "$expect" ]; then
    echo "FAIL: ocean $* exited $rc, expected $expect"
    cat out.txt err.txt
    status=1
    return 1
  fi
  return 0
}

# A solve that must converge and pass --check.
solve() {
  if run 0 "$@" --check; then
    grep -E "^(converged|check)" out.txt | sed "s/^/  /"
    echo "ok: ocean $*"
  fi
}

case $mode in
cpu)
  # Blocks must not share a wait-spinning core with each other more than needed on 2 cores.
  export OMP_WAIT_POLICY=passive
  for layout in row block; do
    solve --n 64 --layout $layout --threads 2
    solve --n 61 --layout $layout --threads 2 --tiles 2x1
    solve --n 48 --layout $layout --threads 2 --omega 1
    solve --n 37 --layout $layout --threads 4 --tiles 2x2
  done
  solve --n 64 --threads 1
  ;;
gpu)
  "$ocean" --device gpu --n 8 --tol 0 --max-sweeps 1 >probe.txt 2>&1
  rc=$?
  if [ $rc -eq 3 ]; then
    echo "skipped: $(cat probe.txt)"
    exit 77
  fi
  for layout in row block; do
    solve --device gpu --n 64 --layout $layout
    solve --device gpu --n 100 --layout $layout
    solve --device gpu --n 48 --layout $layout --omega 1
  done
  ;;
options)
  run 0 --help && grep -q -- "--layout" out.txt && echo "ok: --help"
  for bad in "--layout diagonal" "--device tpu" "--n 3" "--n 12x" "--omega 2" "--tol -1" "--max-sweeps 0" \
    "--bogus" "--n" "--check --n 1000" "--field out.txt" "--plot out.jpg" "--threads 2 --tiles 3x1" \
    "--tiles 2" "--bench --check" "--n 4 --threads 10"; do
    # shellcheck disable=SC2086  # each case is a list of words
    if run 2 $bad; then
      if [ "$(wc -l <err.txt)" -ne 1 ] || [ -s out.txt ]; then
        echo "FAIL: ocean $bad: want one line on stderr and nothing on stdout"
        cat out.txt err.txt
        status=1
      else
        echo "ok: ocean $bad -> 2: $(cat err.txt)"
      fi
    fi
  done
  run 1 --n 64 --threads 2 --max-sweeps 5 && grep -q "NOT converged" out.txt && echo "ok: not converged -> 1"
  run 0 --n 64 --threads 2 --tol 0 --max-sweeps 7 && grep -q "^ran 7 sweeps" out.txt && echo "ok: --tol 0"
  if run 0 --n 30 --threads 2 --field field.npy; then
    # 10 bytes of preamble + a 118-byte header (a multiple of 64 with them) + 32 x 32 float64.
    size=$(stat -c %s field.npy)
    if [ "$(head -c 6 field.npy | tail -c 5)" = NUMPY ] && [ "$size" -eq $((128 + 32 * 32 * 8)) ]; then
      echo "ok: --field wrote a $size-byte .npy"
    else
      echo "FAIL: field.npy is not a 32 x 32 float64 .npy ($size bytes)"
      status=1
    fi
  fi
  ;;
*)
  echo "usage: ocean_test.sh OCEAN cpu|gpu|options WORKDIR"
  exit 2
  ;;
esac
exit $status
