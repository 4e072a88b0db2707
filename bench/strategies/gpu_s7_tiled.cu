// GPU strategy S7: 2-D tiling. A TILE x TILE block computes a TILE x TILE patch of the output,
// a pair per thread; the dimensions are walked TILE at a time, each step staging a TILE x TILE
// slice of the patch's query rows and of its base rows in shared memory, where every value is
// read by TILE threads instead of fetched TILE times from memory. The pair's sums stay in the
// thread's registers: no reduction.
//
// Bank conflicts decide the tile. Thread (ty, tx) reads base[tx][t]: consecutive lanes read
// words TILE apart, so TILE = 32 puts a warp's 32 reads in one bank (32-way serialised), 16
// in two banks' worth of pairs, while 30 and 31 (coprime-ish to 32) spread them -- the study's
// finding that 30 beat 32 on its RTX 3060. tests/test_strategies.cpp checks every TILE; the
// measured ranking on this project's GPUs is in bench/results/.

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

/// One pass over the dimensions: stages the slices and adds each coordinate pair to `s` (the
/// means pass of pearson when MEANS: sums of a and b only; centred when CENTRE).
template <int TILE, StudyMetric M, bool MEANS>
__device__ void tiled_pass(const Problem& p, int64_t i, int64_t j_row, float ma, float mb, Sums& s, float (*qs)[TILE],
                           float (*xs)[TILE]) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t k0 = 0; k0 < p.d; k0 += TILE) {
    qs[ty][tx] = i < p.m && k0 + tx < p.d ? p.Q[i * p.d + k0 + tx] : 0.f;
    xs[ty][tx] = j_row < p.n && k0 + tx < p.d ? p.X[j_row * p.d + k0 + tx] : 0.f;
    __syncthreads();
    const int steps = p.d - k0 < TILE ? int(p.d - k0) : TILE;
    for (int t = 0; t < steps; ++t) {
      const float a = qs[ty][t], b = xs[tx][t];
      if constexpr (MEANS) {
        s.s3 += a, s.s4 += b;
      } else if constexpr (M == StudyMetric::pearson) {
        accumulate<StudyMetric::cosine>(s, a - ma, b - mb);
      } else {
        accumulate<M>(s, a, b);
      }
    }
    __syncthreads();
  }
}

template <int TILE, StudyMetric M>
__global__ void __launch_bounds__(TILE* TILE) s7_kernel(Problem p, float* out) {
  __shared__ float qs[TILE][TILE], xs[TILE][TILE];
  const int64_t i = int64_t(blockIdx.y) * TILE + threadIdx.y;      // this thread's query
  const int64_t j = int64_t(blockIdx.x) * TILE + threadIdx.x;      // this thread's base row
  const int64_t j_row = int64_t(blockIdx.x) * TILE + threadIdx.y;  // the base row it stages
  Sums s;
  float ma = 0, mb = 0;
  if constexpr (M == StudyMetric::pearson) {
    Sums means;
    tiled_pass<TILE, M, true>(p, i, j_row, 0, 0, means, qs, xs);
    ma = means.s3 / float(p.d), mb = means.s4 / float(p.d);
  }
  tiled_pass<TILE, M, false>(p, i, j_row, ma, mb, s, qs, xs);
  if (i < p.m && j < p.n) out[i * p.n + j] = finish<M>(s, p.d);
}

template <int TILE>
void launch(const Problem& p, StudyMetric metric, float* out) {
  const dim3 block(TILE, TILE), grid(unsigned((p.n + TILE - 1) / TILE), unsigned((p.m + TILE - 1) / TILE));
  with_metric(metric, [&](auto M) {
    s7_kernel<TILE, M.value><<<grid, block>>>(p, out);
    check_launch("s7_tiled");
  });
}

}  // namespace

void run_s7(const Problem& p, StudyMetric metric, int tile, float* out) {
  switch (tile) {
    case 8: return launch<8>(p, metric, out);
    case 16: return launch<16>(p, metric, out);
    case 30: return launch<30>(p, metric, out);
    case 31: return launch<31>(p, metric, out);
    case 32: return launch<32>(p, metric, out);
    default: break;
  }
  throw std::invalid_argument("s7_tiled: TILE " + std::to_string(tile) + " is not compiled (8, 16, 30, 31, 32)");
}

}  // namespace simkit::strategies
