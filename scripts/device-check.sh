#!/usr/bin/env bash
# On the lent GPU machine: configure with CUDA for sm_90, build, run the `gpu`-labelled tests,
# run compute-sanitizer (memcheck, racecheck) over them, then the benchmarks and the PyTorch
# peer script, and leave logs plus a short table under $OUT.
#
#   bash scripts/device-check.sh [all|tests|sanitize|bench|regression|wordnet|serve|serve-experiment]
#                                                                              (default: all)
#
# tests: the gpu tests, the digits run and compute-sanitizer; wordnet: `simkit kmeans` on the
# WordNet embeddings (re-embedded from a carried .wn bundle when the data is not there); serve:
# WordNet loaded into `simkit serve` on the GPU, then bench/server/serve_throughput.py (SERVE_*
# variables below the build); serve-experiment: scripts/serve-experiment.sh gpu (the seed's
# patterns and the sweep, SERVE_PHASE=all|patterns|sweep, its configurations side by side);
# sanitize: compute-sanitizer only
# (a second call when the first ran out of time); regression: BASE_SRC (another source tree,
# e.g. `git archive OLD | tar -x -C .wt/base-src`, carried) is built beside this one and
# `bench pairwise` / `bench knn` of both run alternately (scripts/bench-regression.sh,
# REGRESSION_ROUNDS rounds, default 3), after whatever else the mode runs, whenever BASE_SRC
# is set (`regression` alone runs nothing else).
#
# Environment: SIMKIT_DEVICE_TARGETS limits the build to those targets (e.g. simkit_cli); SANITIZER=0 skips compute-sanitizer; SANITIZER_TESTS (names of test executables,
# default all that hold gpu tests: the ones whose kernels changed), SANITIZER_EXCLUDE (gtest
# patterns, ':'-separated, left out of every run: the largest cases) and SANITIZER_TIMEOUT
# (seconds per run) bound it; BENCH_SUITES picks the suites, GAUSS_CASES
# and TORCH_GAUSS_ARGS the gauss cases (and arguments) of each side, PRIM_ARGS and TORCH_PRIM_ARGS
# extra arguments of `simkit bench primitives` and its PyTorch peer; KMEANS_CASES the kmeans
# cases (default synthetic; add wordnet when its data is there); ANN_CASES the ann cases (default
# synthetic,seed), ANN_ARGS / TORCH_ANN_ARGS extra arguments of each side; SIMKIT_COMMIT names the
# commit in the table. BENCH_SUITES=python times the Python binding against the same C++ call;
# BENCH_SUITES=strategies runs the similarity study (STRATEGIES_ARGS: extra arguments) and its peer;
# BENCH_SUITES=mergesort the merge sort study (MERGESORT_DEVICES, MERGESORT_ARGS); BENCH_SUITES=multi_gpu
# knn / flat / ivf_flat / ivf_pq / kmeans split over the host's GPUs (bench/multi_gpu/bench_multi_gpu.py,
# MULTI_GPU_ARGS; add "--workloads ...,beyond" for the base larger than one GPU).
#
# The device machine has CUDA, CMake and PyTorch but no Debian -dev packages; the ones simkit
# needs (OpenBLAS, CLI11, GoogleTest, the server's libraries) travel packed in .deps/root.tar.xz
# (scripts/fetch-device-deps.sh makes it; name `.deps` in the device tool's carry list), unpacked
# here into .deps/root on the first call.
set -uo pipefail
what=${1:-all}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SIMKIT_DEVICE_BUILD:-$root/build-device}  # inside the checkout: kept between device calls
deps=$root/.deps/root/usr
if [ -f "$root/.deps/root.tar.xz" ] && [ ! -d "$deps" ]; then
  tar -C "$root/.deps" -xJf "$root/.deps/root.tar.xz" || { echo "device-check: cannot unpack .deps/root.tar.xz" >&2; exit 1; }
fi
# The WordNet data is read from ../shared/data (beside the checkout); on the device machine it
# comes in .deps. The digits are in the working tree (tests/data).
if [ ! -d "$root/../shared/data" ] && [ -d "$root/.deps/shared/data" ]; then
  mkdir -p "$root/../shared" && cp -r "$root/.deps/shared/data" "$root/../shared/"
fi
log() { echo "[device-check] $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$OUT/summary.txt"
prefix=""
if [ -d "$deps" ]; then
  prefix="-DCMAKE_PREFIX_PATH=$deps -DCMAKE_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}"
fi
# The OpenCL loader finds drivers through ICD files; the GPU machine ships NVIDIA's OpenCL driver
# (libnvidia-opencl.so.1) but no /etc/OpenCL/vendors/nvidia.icd, so without this only PoCL shows.
if [ ! -e /etc/OpenCL/vendors/nvidia.icd ] && ldconfig -p | grep -q libnvidia-opencl.so.1; then
  icd=/tmp/simkit-opencl-vendors && mkdir -p "$icd"
  ldconfig -p | grep -o '/[^ ]*libnvidia-opencl.so.1' | head -1 >"$icd/nvidia.icd"
  cp /etc/OpenCL/vendors/*.icd "$icd/" 2>/dev/null || true
  export OCL_ICD_VENDORS=$icd
fi
base_build=$root/build-base
if [ -n "${BASE_SRC:-}" ]; then
  log "building BASE_SRC=$BASE_SRC beside (the command line only)"
  (cmake -S "$BASE_SRC" -B "$base_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMKIT_CUDA=ON \
     -DCMAKE_CUDA_ARCHITECTURES=90 -DSIMKIT_TESTS=OFF $prefix && cmake --build "$base_build" -j 8 --target simkit_cli) \
    >"$OUT/build-base.log" 2>&1 &
  base_pid=$!
fi
log "configure"
# The Python module is built with the python3 that holds PyTorch, CuPy and nanobind.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMKIT_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DPython_EXECUTABLE="$(command -v python3)" $prefix >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
log "build"
# -k 0: a target that fails to build does not stop the others (the tests still run).
status=0
targets=()
if [ -n "${SIMKIT_DEVICE_TARGETS:-}" ]; then read -ra targets <<<"--target $SIMKIT_DEVICE_TARGETS"; fi
cmake --build "$build" -j "$(nproc)" "${targets[@]}" -- -k 0 >>"$OUT/build.log" 2>&1 || {
  status=1
  log "build FAILED (continuing with what was built)"
  grep -B2 -A8 -m5 "error" "$OUT/build.log"
}
if [ "$what" = all ] || [ "$what" = tests ]; then
  log "gpu tests"
  (cd "$build" && ctest -L gpu --output-on-failure -j 4) >"$OUT/tests.log" 2>&1 || status=1
  tail -3 "$OUT/tests.log" | tee -a "$OUT/summary.txt"
  log "digits through the CLI on the GPU (recall@100 and ids row for row)"
  data="$root/tests/data/digits"
  if "$build/apps/cli/simkit" knn --base "$data/digits_base.fvecs" --queries "$data/digits_query.fvecs" -k 100 \
      --metric sqeuclidean --truth "$data/digits_groundtruth_sqeuclidean.ivecs" --ids /tmp/digits_gpu.ivecs \
      --device gpu >>"$OUT/tests.log" 2>&1 && cmp /tmp/digits_gpu.ivecs "$data/digits_groundtruth_sqeuclidean.ivecs"; then
    log "  $(grep -m1 recall "$OUT/tests.log"), ids identical to the ground truth"
  else
    log "  FAILED (see tests.log)"; status=1
  fi
fi
if { [ "$what" = all ] || [ "$what" = tests ] && [ "${SANITIZER:-1}" = 1 ]; } || [ "$what" = sanitize ]; then
  log "compute-sanitizer memcheck + racecheck over the gpu test executables (in parallel)"
  # The sanitizer slows kernels 10-100x; SANITIZER_EXCLUDE can leave the largest cases out.
  # test_knn, test_pairwise and test_primitives hold both backends' tests: their gpu ones only.
  pids=()
  rm -f /tmp/san-*
  for name in test_knn test_pairwise test_primitives test_kmeans test_index test_index_writes test_ivf_pq test_lsh test_gpu_ivf_pq \
    test_gpu_gauss test_gpu_ifgt test_gpu_stream test_nbody test_gpu_nbody test_gpu_tree test_mergesort_study; do
    exe=$build/tests/$name
    [ -x "$exe" ] || continue
    if [ -n "${SANITIZER_TESTS:-}" ] && [[ " $SANITIZER_TESTS " != *" $name "* ]]; then continue; fi
    positive='*'
    case $name in test_knn | test_pairwise | test_primitives | test_kmeans | test_index | test_index_writes | test_ivf_pq | test_lsh | test_nbody | test_mergesort_study)
      positive='*/gpu:*_gpu:*GpuOnly.*' ;;
    esac
    filter="$positive${SANITIZER_EXCLUDE:+-$SANITIZER_EXCLUDE}"
    # The primitives run CUB where it serves a call (cub_routes.hpp): memcheck both routes (our
    # scratch sizing feeds CUB), racecheck simkit's own kernels (CUB's shared memory is CUB's).
    runs="memcheck: racecheck:"
    if [ "$name" = test_primitives ]; then runs="memcheck: memcheck:own racecheck:own"; fi
    for run in $runs; do
      tool=${run%%:*} mode=${run#*:}
      own=(); if [ "$mode" = own ]; then own=(env SIMKIT_PRIMITIVES_OWN=1); fi
      tag="$name-$tool${mode:+-$mode}"
      # The study's GPU tests sort 360 small cases a version: memcheck takes ~6 minutes a version.
      limit=${SANITIZER_TIMEOUT:-300}
      if [ "$name" = test_mergesort_study ] && [ "$limit" -lt 900 ]; then limit=900; fi
      (timeout "$limit" "${own[@]}" compute-sanitizer --tool "$tool" --error-exitcode 3 "$exe" \
        --gtest_filter="$filter" >"/tmp/san-$tag.log" 2>&1
       echo "  $tag: exit $?" >"/tmp/san-$tag.rc") &
      pids+=($!)
    done
  done
  wait "${pids[@]}"
  for f in /tmp/san-*.rc; do
    # compute-sanitizer exits 0 when `timeout` stops it, so a run counts only with its summary.
    if grep -q "SUMMARY: 0 \(errors\|hazards\)" "${f%.rc}.log"; then
      log "$(cat "$f"), $(grep -o "[A-Z]* SUMMARY: .*" "${f%.rc}.log" | tail -1)"
    else
      log "$(cat "$f"), INCOMPLETE or with errors (no clean summary; raise SANITIZER_TIMEOUT?)"
      status=1
    fi
    cat "${f%.rc}.log" >>"$OUT/tests.log"
  done
  grep "ERROR SUMMARY" "$OUT/tests.log" | sort | uniq -c | tee -a "$OUT/summary.txt"
fi

# WordNet on the device: the 90 MB float16 base exceeds the carry, so it is re-embedded from the
# carried model and glosses (.wn, scripts/embed-wordnet.py) when they came along.
wordnet_npy=${WORDNET_NPY:-$root/../shared/data/wordnet/base_minilm_f16.npy}
KMEANS_CASES=${KMEANS_CASES:-synthetic}
if [ -d "$root/.wn" ] && [ ! -f "$wordnet_npy" ] && { [ "$what" = all ] || [ "$what" = bench ] || [ "$what" = wordnet ] || [ "$what" = serve ]; }; then
  log "re-embedding the WordNet glosses (scripts/embed-wordnet.py)"
  wordnet_npy=/tmp/wordnet_minilm_f16.npy
  PYTHONUNBUFFERED=1 python3 "$root/scripts/embed-wordnet.py" --bundle "$root/.wn" --out "$wordnet_npy" 2>&1 |
    tail -6 | tee -a "$OUT/summary.txt"
fi
if [ -f "$wordnet_npy" ] && { [ "$what" = all ] || [ "$what" = bench ] || [ "$what" = wordnet ]; }; then
  log "simkit kmeans on the WordNet embeddings, cosine, K = 1024, 25 iterations, GPU"
  /usr/bin/time -f "  wall %e s" "$build/apps/cli/simkit" kmeans --data "$wordnet_npy" -k 1024 --metric cosine \
    --iters 25 --seed 0 --centroids /tmp/wn_C.npy --labels /tmp/wn_L.npy --device gpu 2>&1 | tee -a "$OUT/summary.txt"
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  # BENCH_SUITES picks the suites (default: all four). Each side's CSVs are merged into one
  # file, simkit.csv and torch.csv, to stay within what comes back from the device.
  suites=${BENCH_SUITES:-pairwise knn gauss primitives kmeans}
  csv=/tmp/simkit-csv && rm -rf "$csv" && mkdir -p "$csv"
  cli="$build/apps/cli/simkit"
  for suite in $suites; do
    if [ "$suite" = python ]; then
      # What the Python binding adds to a knn call, beside the same call from C++.
      log "bench/python/call_overhead.py (GPU with torch tensors, then CPU with NumPy)"
      for dev in gpu cpu; do
        PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 python3 "$root/bench/python/call_overhead.py" \
          "$build/python/simkit_knn_call" --device $dev --csv "$OUT/python-overhead-$dev.csv" 2>&1 |
          tee -a "$OUT/summary.txt" || status=1
      done
      continue
    fi
    if [ "$suite" = multi_gpu ]; then
      # knn, flat, ivf_flat, ivf_pq and kmeans split over 1, 2, 4 GPUs of this host (MULTI_GPU_ARGS: extra arguments).
      log "bench/multi_gpu/bench_multi_gpu.py ($(nvidia-smi -L | wc -l) GPUs)"
      read -ra extra <<<"${MULTI_GPU_ARGS:-}"
      PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 python3 "$root/bench/multi_gpu/bench_multi_gpu.py" \
        "${extra[@]}" --csv "$OUT/multi-gpu.csv" --md "$OUT/multi-gpu.md" 2>&1 | tee -a "$OUT/summary.txt" || status=1
      continue
    fi
    if [ "$suite" = strategies ]; then
      # The similarity study: its own CSV columns and plot, the PyTorch peer on the same shapes.
      log "simkit bench strategies (the study's CPU/GPU strategies) and its PyTorch peer"
      "$build/tests/test_strategies" --gtest_filter='*GpuOnly*' 2>&1 | tail -3 | tee -a "$OUT/summary.txt" || status=1
      "$cli" bench strategies --device gpu ${STRATEGIES_ARGS:-} --csv "$OUT/strategies-gpu.csv" \
        --plot "$OUT/strategies-gpu.png" 2>&1 | tee "$OUT/strategies-gpu.txt" | tail -80 >>"$OUT/summary.txt" || status=1
      PYTHONUNBUFFERED=1 python3 "$root/bench/peers/strategies_torch.py" --csv "$OUT/strategies-torch.csv" 2>&1 |
        tee -a "$OUT/summary.txt" || status=1
      continue
    fi
    if [ "$suite" = mergesort ]; then
      # The merge sort study: CUDA and NVIDIA's OpenCL on this card (MERGESORT_ARGS: the sweeps;
      # the naive merge takes seconds a point, so long runs are split with --study).
      log "simkit bench mergesort --device ${MERGESORT_DEVICES:-gpu,opencl} ${MERGESORT_ARGS:-}"
      "$cli" bench mergesort --device "${MERGESORT_DEVICES:-gpu,opencl}" ${MERGESORT_ARGS:-} \
        --csv "$OUT/mergesort-gpu.csv" 2>&1 | tee "$OUT/mergesort-gpu.txt" | grep -v "^  size_i\|^  block" \
        >>"$OUT/summary.txt" || status=1
      continue
    fi
    if [ "$suite" = ann ]; then
      # Its own CSV columns (recall / QPS curves): simkit-ann.csv and torch-ann.csv, plotted.
      log "simkit bench ann (${ANN_CASES:-synthetic,seed})"
      rm -rf /tmp/ann-save && mkdir -p /tmp/ann-save
      "$cli" bench ann --device gpu --cases "${ANN_CASES:-synthetic,seed}" --save /tmp/ann-save \
        ${ANN_ARGS:-} --csv "$OUT/simkit-ann.csv" 2>&1 | tee -a "$OUT/bench.txt" || status=1
      log "PyTorch peer: ann (the seed's IVF, batched)"
      PYTHONUNBUFFERED=1 python3 "$root/bench/peers/ann_peers.py" --dir /tmp/ann-save --cases "${ANN_CASES:-synthetic,seed}" \
        --systems torch ${TORCH_ANN_ARGS:-} --csv "$OUT/torch-ann.csv" 2>&1 | tee -a "$OUT/bench.txt" || status=1
      python3 "$root/scripts/plot-ann.py" "$OUT/simkit-ann.csv" "$OUT/torch-ann.csv" --out "$OUT/ann-gpu.png" || true
      continue
    fi
    "$cli" bench "$suite" --help >/dev/null 2>&1 || { log "no 'simkit bench $suite' in this build"; continue; }
    log "simkit bench $suite"
    extra=()
    if [ "$suite" = gauss ] && [ -n "${GAUSS_CASES:-}" ]; then extra=(--cases "$GAUSS_CASES"); fi
    if [ "$suite" = primitives ] && [ -n "${PRIM_ARGS:-}" ]; then read -ra extra <<<"$PRIM_ARGS"; fi
    if [ "$suite" = kmeans ]; then
      rm -rf /tmp/km-save && mkdir -p /tmp/km-save
      extra=(--cases "$KMEANS_CASES" --save /tmp/km-save --data "$wordnet_npy")
    fi
    "$cli" bench "$suite" --device gpu "${extra[@]}" --csv "$csv/simkit_$suite.csv" 2>&1 | tee -a "$OUT/bench.txt" || status=1
    log "PyTorch peer: $suite"
    peer="$root/bench/peers/torch_peers.py"; args=(--suites "$suite")
    if [ "$suite" = gauss ]; then
      peer="$root/bench/peers/torch_gauss.py"; args=()
      if [ -n "${TORCH_GAUSS_ARGS:-}" ]; then read -ra args <<<"$TORCH_GAUSS_ARGS"; fi
    elif [ "$suite" = kmeans ]; then
      peer="$root/bench/peers/torch_kmeans.py"; args=(--dir /tmp/km-save --cases "$KMEANS_CASES")
    elif [ "$suite" = primitives ]; then
      peer="$root/bench/peers/torch_primitives.py"; args=()
      if [ -n "${TORCH_PRIM_ARGS:-}" ]; then read -ra args <<<"$TORCH_PRIM_ARGS"; fi
    fi
    if [ -f "$peer" ]; then
      PYTHONUNBUFFERED=1 python3 "$peer" "${args[@]}" --csv "$csv/torch_$suite.csv" 2>&1 | tee -a "$OUT/bench.txt" || status=1
    fi
  done
  for side in simkit torch; do
    first=1
    for f in "$csv/${side}"_*.csv; do
      [ -f "$f" ] || continue
      if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
    done >"$OUT/$side.csv"
  done
  python3 "$root/bench/compare.py" --out "$OUT/table.md" \
    --device-name "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    ${SIMKIT_COMMIT:+--commit "$SIMKIT_COMMIT"} "$OUT/simkit.csv" "$OUT/torch.csv" && cat "$OUT/table.md"
fi
if [ "$what" = serve ] && [ -f "$wordnet_npy" ]; then
  # `simkit serve` on the GPU: WordNet loaded through the REST API, then saturation throughput
  # and latency at half of it, batched and not (bench/server/serve_throughput.py).
  cli="$build/apps/cli/simkit"
  data=${SERVE_DATA:-$root/build-device/serve-data}
  queries=$root/../shared/data/wordnet/queries_minilm_f16.npy
  if [ ! -d "$data/collections/wordnet" ]; then
    log "loading the WordNet embeddings into a server (bench/server/load_npy.py)"
    "$cli" serve --data-dir "$data" --port 0 --device gpu >/tmp/load-serve.out 2>>"$OUT/serve.log" &
    spid=$!
    for _ in $(seq 100); do grep -q listening /tmp/load-serve.out && break; sleep 0.1; done
    url=$(grep -o 'http://[^ ]*' /tmp/load-serve.out)
    /usr/bin/time -f "  load wall %e s" python3 "$root/bench/server/load_npy.py" --url "$url" --collection wordnet \
      --vectors "$wordnet_npy" --batch 1000 2>&1 | grep -v '\r' | tail -2 | tee -a "$OUT/summary.txt"
    kill -TERM $spid; wait $spid; log "  loading server exited $?"
  fi
  log "serve_throughput: WordNet flat cosine, GPU, batched vs --max-batch 1"
  # SERVE_EXTRA_CONFIG: more NAME=ARGS configurations, separated by ';'.
  extra=()
  IFS=';' read -ra extra_configs <<<"${SERVE_EXTRA_CONFIG:-}"
  for c in "${extra_configs[@]}"; do [ -n "$c" ] && extra+=(--config "$c"); done
  python3 "$root/bench/server/serve_throughput.py" --simkit "$cli" --data-dir "$data" --collection wordnet \
    --queries "$queries" --device gpu --label "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    --config "batched=${SERVE_BATCHED_ARGS:---max-batch 64}" "${extra[@]}" --config "unbatched=--max-batch 1" \
    --overload "batched=${SERVE_OVERLOAD:-40000}" --overload "unbatched=${SERVE_OVERLOAD_1:-12000}" \
    --duration "${SERVE_DURATION:-15}" --loadgens "${SERVE_LOADGENS:-4}" --out "$OUT/serve-gpu.md" 2>&1 | tee -a "$OUT/summary.txt" || status=1
fi
if [ "$what" = serve-experiment ] && [ -f "$wordnet_npy" ]; then
  log "serve-experiment (${SERVE_PHASE:-all}): WordNet, the seed's arrival patterns and a sweep to saturation, GPU"
  SIMKIT_CLI="$build/apps/cli/simkit" DATA_DIR="${SERVE_DATA:-$root/build-device/serve-data}" WORDNET_NPY="$wordnet_npy" \
    OUT_PREFIX="$OUT/gpu-serve-experiment" PARALLEL=${PARALLEL:-1} \
    bash "$root/scripts/serve-experiment.sh" gpu "${SERVE_PHASE:-all}" 2>&1 | tee -a "$OUT/summary.txt" || status=1
fi
if [ -n "${base_pid:-}" ]; then
  if wait "$base_pid"; then
    log "before/after: $BASE_SRC (old) vs this tree (new), ${REGRESSION_ROUNDS:-3} rounds"
    bash "$root/scripts/bench-regression.sh" "$base_build/apps/cli/simkit" "$build/apps/cli/simkit" "$OUT" \
      "${REGRESSION_ROUNDS:-3}" "${REGRESSION_SUITES:-pairwise knn}" | tee -a "$OUT/summary.txt" || status=1
  else
    log "building BASE_SRC FAILED (see build-base.log)"; status=1
  fi
fi
log "done, status $status"
exit $status
