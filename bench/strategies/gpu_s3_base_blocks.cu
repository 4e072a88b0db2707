// GPU strategy S3: a block per base row; its threads take the query rows in turn, each
// running a whole pair in sequence. Ten times the blocks of S2 on the study's shapes (10,000
// base rows, 1,000 queries), the same uncoalesced reads, and writes a row of the output apart.

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

template <StudyMetric M>
__global__ void s3_kernel(Problem p, float* out) {
  const int64_t j = blockIdx.x;
  for (int64_t i = threadIdx.x; i < p.m; i += blockDim.x)
    out[i * p.n + j] = pair_value<M>(p.Q + i * p.d, p.X + j * p.d, p.d);
}

}  // namespace

void run_s3(const Problem& p, StudyMetric metric, int block, float* out) {
  with_metric(metric, [&](auto M) {
    s3_kernel<M.value><<<unsigned(p.n), block>>>(p, out);
    check_launch("s3_base_blocks");
  });
}

}  // namespace simkit::strategies
