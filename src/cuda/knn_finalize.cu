// The end of a k-NN query batch on the device: exact re-scoring of the l2 / sqeuclidean
// candidates, then one sort per query and the best k written out.
#include <cstdint>

#include "bitonic.cuh"
#include "check.hpp"
#include "select.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kRescoreBlock = 256;
constexpr int kSortBlock = 256;

// A warp per (query, candidate): lanes stride over d (coalesced), double accumulation.
template <bool SQRT>
__global__ void __launch_bounds__(kRescoreBlock)
    rescore_kernel(const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d, const int64_t* ids,
                   int64_t ids_stride, float* out, int64_t out_stride, int64_t rows, int64_t kc) {
  const int lane = threadIdx.x % 32;
  const int64_t pairs = rows * kc;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t p = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; p < pairs; p += warps) {
    const int64_t r = p / kc, c = p % kc;
    const int64_t id = ids[r * ids_stride + c];
    if (id == kNoId) {
      if (lane == 0) out[r * out_stride + c] = kInf;
      continue;
    }
    const float* q = Q + r * ldq;
    const float* x = X + id * ldx;
    double acc = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double diff = double(q[t]) - double(x[t]);
      acc += diff * diff;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) out[r * out_stride + c] = float(SQRT ? sqrt(acc) : acc);
  }
}

// A block per query: the kc pairs padded to a power of two, bitonic-sorted in shared memory.
__global__ void __launch_bounds__(kSortBlock)
    sort_output_kernel(const float* keys, const int64_t* ids, int64_t stride, int64_t kc, int64_t k, float sign,
                       float* out_values, int64_t* out_ids) {
  extern __shared__ __align__(16) unsigned char smem[];
  int P = 1;
  while (P < kc) P <<= 1;
  int64_t* si = reinterpret_cast<int64_t*>(smem);
  float* sk = reinterpret_cast<float*>(si + P);
  const int64_t r = blockIdx.x;
  for (int i = threadIdx.x; i < P; i += kSortBlock) {
    sk[i] = i < kc ? keys[r * stride + i] : kInf;
    si[i] = i < kc ? ids[r * stride + i] : kNoId;
  }
  __syncthreads();
  bitonic_sort<kSortBlock>(sk, si, P, int(threadIdx.x));
  for (int i = threadIdx.x; i < k; i += kSortBlock) {
    const bool empty = si[i] == kNoId;
    out_values[r * k + i] = empty ? __int_as_float(0x7fc00000) : sign * sk[i];  // NaN
    out_ids[r * k + i] = empty ? -1 : si[i];
  }
}

}  // namespace

void rescore_sq(const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d, const int64_t* ids,
                int64_t ids_stride, float* out, int64_t out_stride, int64_t rows, int64_t kc, bool take_sqrt,
                cudaStream_t stream) {
  const int64_t pairs = rows * kc;
  if (pairs <= 0) return;
  const int64_t want = (pairs + kRescoreBlock / 32 - 1) / (kRescoreBlock / 32);
  const int grid = int(want < 65536 ? want : 65536);
  if (take_sqrt)
    rescore_kernel<true>
        <<<grid, kRescoreBlock, 0, stream>>>(Q, ldq, X, ldx, d, ids, ids_stride, out, out_stride, rows, kc);
  else
    rescore_kernel<false>
        <<<grid, kRescoreBlock, 0, stream>>>(Q, ldq, X, ldx, d, ids, ids_stride, out, out_stride, rows, kc);
  check_launch("rescore_kernel");
}

void sort_output(const float* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k, float sign,
                 float* out_values, int64_t* out_ids, cudaStream_t stream) {
  if (rows <= 0) return;
  int64_t P = 1;
  while (P < kc) P <<= 1;
  const size_t smem = size_t(P) * (sizeof(float) + sizeof(int64_t));
  // kc <= 2048: at most 24 KiB, under the default limit. Rows go to blockIdx.x (2^31 - 1).
  sort_output_kernel<<<unsigned(rows), kSortBlock, smem, stream>>>(keys, ids, stride, kc, k, sign, out_values, out_ids);
  check_launch("sort_output_kernel");
}

}  // namespace simkit::detail::cuda
