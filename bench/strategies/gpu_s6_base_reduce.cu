// GPU strategy S6: S5 turned around -- a block per base row, cached in shared memory, the
// query rows taken in turn with the same split of dimensions and tree reduction. Ten times the
// blocks of S5 on the study's shapes, so the GPU is full; the queries (1,000 rows) stay in L2.

#include "gpu_common.cuh"
#include "gpu_strategies.hpp"

namespace simkit::strategies {

namespace {

template <StudyMetric M>
__global__ void s6_kernel(Problem p, float* out) {
  extern __shared__ float smem[];
  float* base = smem;
  Sums* partial = reinterpret_cast<Sums*>(smem + ((p.d + 3) / 4) * 4);
  const int64_t j = blockIdx.x;
  for (int64_t t = threadIdx.x; t < p.d; t += blockDim.x) base[t] = p.X[j * p.d + t];
  __syncthreads();
  for (int64_t i = 0; i < p.m; ++i) {
    // The pair's roles kept (query first) so that pearson_opt sums the same terms as S5.
    const float v = block_pair<M>(p.Q + i * p.d, base, p.d, partial);
    if (threadIdx.x == 0) out[i * p.n + j] = v;
  }
}

}  // namespace

void run_s6(const Problem& p, StudyMetric metric, int block, float* out) {
  const size_t smem = size_t((p.d + 3) / 4 * 4) * sizeof(float) + size_t(block) * sizeof(Sums);
  with_metric(metric, [&](auto M) {
    set_dynamic_smem(s6_kernel<M.value>, smem);
    s6_kernel<M.value><<<unsigned(p.n), block, smem>>>(p, out);
    check_launch("s6_base_reduce");
  });
}

}  // namespace simkit::strategies
