// GPU strategy S1: a block of one thread per pair (grid queries x base); the thread runs the
// whole pair in sequence. 31 of every warp's 32 lanes idle: the study's baseline.

#include <algorithm>

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

template <StudyMetric M>
__global__ void s1_kernel(Problem p, int64_t i0, float* out) {
  const int64_t j = blockIdx.x, i = i0 + blockIdx.y;
  out[i * p.n + j] = pair_value<M>(p.Q + i * p.d, p.X + j * p.d, p.d);
}

}  // namespace

void run_s1(const Problem& p, StudyMetric metric, int /*block*/, float* out) {
  with_metric(metric, [&](auto M) {
    for (int64_t i0 = 0; i0 < p.m; i0 += 65535) {  // gridDim.y's limit
      const dim3 grid(unsigned(p.n), unsigned(std::min<int64_t>(65535, p.m - i0)));
      s1_kernel<M.value><<<grid, 1>>>(p, i0, out);
      check_launch("s1_pair_blocks");
    }
  });
}

}  // namespace simkit::strategies
