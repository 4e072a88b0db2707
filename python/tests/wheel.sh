#!/usr/bin/env bash
# `pip wheel .` from the source tree, then the wheel alone in a new virtualenv: it installs,
# imports, reports its version, carries its type stubs and py.typed, and computes a k-NN.
#
#   wheel.sh SOURCE_DIR PYTHON WORK_DIR
# PYTHON must have scikit-build-core and nanobind (scripts/setup.sh's .venv); the build runs
# without build isolation, so no network is needed for it. numpy for the new virtualenv comes
# from PyPI (or pip's cache): without either the test exits 77 (CTest: skipped).
set -u
src=$1
python=$2
work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1

echo "building the wheel (log: $work/wheel.log)"
if ! "$python" -m pip wheel "$src" --no-build-isolation --no-deps -w "$work/dist" >"$work/wheel.log" 2>&1; then
  tail -40 "$work/wheel.log"
  echo "FAIL: pip wheel"
  exit 1
fi
wheel=$(ls "$work"/dist/simkit-*.whl) || exit 1
echo "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"

"$python" -m venv "$work/fresh" || exit 1
"$work/fresh/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps "$wheel" ||
  { echo "FAIL: the wheel does not install"; exit 1; }
if ! "$work/fresh/bin/python" -m pip install -q --disable-pip-version-check "numpy>=1.22" >"$work/numpy.log" 2>&1; then
  echo "skipped: numpy could not be installed into the new virtualenv (no PyPI?): $(tail -1 "$work/numpy.log")"
  exit 77
fi

cd "$work" || exit 1  # away from the source tree, so that only the installed package can be imported
"$work/fresh/bin/python" - <<'PY' || { echo "FAIL: the installed package"; exit 1; }
import importlib.resources, numpy as np, simkit
files = {p.name for p in importlib.resources.files("simkit").iterdir()}
assert {"py.typed", "_simkit.pyi", "__init__.py"} <= files, files
assert simkit.__file__.startswith(__import__("sys").prefix), simkit.__file__
X = np.random.default_rng(0).standard_normal((1000, 32), dtype=np.float32)
D, I = simkit.knn(X[:5], X, 3)
assert I[:, 0].tolist() == [0, 1, 2, 3, 4], I
print(f"simkit {simkit.__version__} from {simkit.__file__}: knn ok, stubs and py.typed present")
PY
echo "wheel test passed"
