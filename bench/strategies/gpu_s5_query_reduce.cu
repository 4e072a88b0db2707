// GPU strategy S5: a block per query row, the row cached in shared memory; for each base row
// the threads split the dimensions (consecutive lanes, consecutive floats: coalesced) and
// reduce their partial sums in a tree. Every pair pays a reduction of log2(block) levels with
// two barriers each.

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

template <StudyMetric M>
__global__ void s5_kernel(Problem p, float* out) {
  extern __shared__ float smem[];
  float* query = smem;
  Sums* partial = reinterpret_cast<Sums*>(smem + ((p.d + 3) / 4) * 4);
  const int64_t i = blockIdx.x;
  for (int64_t t = threadIdx.x; t < p.d; t += blockDim.x) query[t] = p.Q[i * p.d + t];
  __syncthreads();
  for (int64_t j = 0; j < p.n; ++j) {
    const float v = block_pair<M>(query, p.X + j * p.d, p.d, partial);
    if (threadIdx.x == 0) out[i * p.n + j] = v;
  }
}

}  // namespace

void run_s5(const Problem& p, StudyMetric metric, int block, float* out) {
  const size_t smem = size_t((p.d + 3) / 4 * 4) * sizeof(float) + size_t(block) * sizeof(Sums);
  with_metric(metric, [&](auto M) {
    set_dynamic_smem(s5_kernel<M.value>, smem);
    s5_kernel<M.value><<<unsigned(p.m), block, smem>>>(p, out);
    check_launch("s5_query_reduce");
  });
}

}  // namespace simkit::strategies
