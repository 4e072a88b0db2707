#!/usr/bin/env bash
# simkit's indexes and their peers in one run on this machine's CPU: `simkit bench ann`, then
# bench/peers/ann_peers.py (faiss-cpu IndexFlat / IndexIVFFlat / IndexHNSWFlat / IndexIVFPQ +
# IndexRefineFlat / IndexLSH, hnswlib) on the files it saved, then the recall-QPS plot. CSVs,
# logs and the PNG land in OUTDIR.
#
#   bash scripts/bench-ann.sh OUTDIR [CASES] [NPROBE_LIST]     (defaults: wordnet, 4,...,128)
#
# Environment: SYSTEMS (default faiss,faiss_compressed,hnswlib), INDEXES (simkit's types, default
# all four), ANN_ARGS (more `simkit bench ann` options, e.g. "--pq-m 48 --refine 2,4 --lsh 6x2,16x8"),
# PEER_ARGS (more ann_peers.py options: "--pq-m 48 --refine 2,4").
# The GPU run is scripts/device-check.sh with BENCH_SUITES=ann (the PyTorch IVF as the peer).
set -euo pipefail
out=${1:?usage: bench-ann.sh OUTDIR [CASES] [NPROBE_LIST]}
cases=${2:-wordnet}
nprobe=${3:-4,8,16,24,32,48,64,96,128}
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${SIMKIT:-$root/build/apps/cli/simkit}
threads=${THREADS:-$(nproc)}
mkdir -p "$out/files"
"$cli" bench ann --device cpu --threads "$threads" --cases "$cases" --nprobe "$nprobe" --save "$out/files" \
  --indexes "${INDEXES:-flat,ivf_flat,ivf_pq,lsh}" ${ANN_ARGS:-} \
  --data "$root/../shared/data/wordnet" --csv "$out/simkit-ann.csv" 2>&1 | tee "$out/simkit-ann.txt"
python3 "$root/bench/peers/ann_peers.py" --dir "$out/files" --cases "$cases" \
  --systems "${SYSTEMS:-faiss,faiss_compressed,hnswlib}" ${PEER_ARGS:-} \
  --threads "$threads" --nprobe "$nprobe" --csv "$out/peers-ann.csv" 2>&1 | tee "$out/peers-ann.txt"
python3 "$root/scripts/plot-ann.py" "$out/simkit-ann.csv" "$out/peers-ann.csv" --out "$out/ann-cpu.png"
rm -rf "$out/files"
