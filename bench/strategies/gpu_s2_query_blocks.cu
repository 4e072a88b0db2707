// GPU strategy S2: a block per query row; its threads take the base rows in turn (stride =
// block size), each running a whole pair in sequence. Lanes of a warp read rows d floats
// apart: every load is a separate memory transaction.

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

template <StudyMetric M>
__global__ void s2_kernel(Problem p, float* out) {
  const int64_t i = blockIdx.x;
  for (int64_t j = threadIdx.x; j < p.n; j += blockDim.x)
    out[i * p.n + j] = pair_value<M>(p.Q + i * p.d, p.X + j * p.d, p.d);
}

}  // namespace

void run_s2(const Problem& p, StudyMetric metric, int block, float* out) {
  with_metric(metric, [&](auto M) {
    s2_kernel<M.value><<<unsigned(p.m), block>>>(p, out);
    check_launch("s2_query_blocks");
  });
}

}  // namespace simkit::strategies
