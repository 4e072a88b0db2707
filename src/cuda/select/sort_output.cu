// The end of a k-NN query batch or a select_k row batch on the device: one sort per row of
// its (key, id) pairs -- float keys from the selection, or double keys from the re-score
// (cuda/rescore.cu) -- and the best k written out as values.
#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/select/bitonic.cuh"
#include "cuda/select/top_k_lists.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kSortBlock = 256;

// A block per row: the kc pairs padded to a power of two, bitonic-sorted in shared memory.
template <class K>
__global__ void __launch_bounds__(kSortBlock)
    sort_output_kernel(const K* keys, const int64_t* ids, int64_t stride, int64_t kc, int64_t k, KeyToValue to,
                       float* out_values, int64_t* out_ids) {
  extern __shared__ __align__(16) unsigned char smem[];
  int P = 1;
  while (P < kc) P <<= 1;
  int64_t* si = reinterpret_cast<int64_t*>(smem);
  K* sk = reinterpret_cast<K*>(si + P);
  const int64_t r = blockIdx.x;
  for (int i = threadIdx.x; i < P; i += kSortBlock) {
    sk[i] = i < kc ? keys[r * stride + i] : K(kInf);
    si[i] = i < kc ? ids[r * stride + i] : kNoId;
  }
  __syncthreads();
  bitonic_sort<kSortBlock>(sk, si, P, int(threadIdx.x));
  for (int i = threadIdx.x; i < k; i += kSortBlock) {
    const bool empty = si[i] == kNoId;
    const K key = sk[i];
    const K value = to.root ? sqrt(key) : (to.negate ? -key : key);
    out_values[r * k + i] = empty ? __int_as_float(0x7fc00000) : float(value);  // NaN
    out_ids[r * k + i] = empty ? -1 : si[i];
  }
}

template <class K>
void launch(const K* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k, KeyToValue to,
            float* out_values, int64_t* out_ids, cudaStream_t stream) {
  if (rows <= 0) return;
  int64_t P = 1;
  while (P < kc) P <<= 1;
  const size_t smem = size_t(P) * (sizeof(K) + sizeof(int64_t));
  // kc <= 2048: at most 32 KiB, under the default limit. Rows go to blockIdx.x (2^31 - 1).
  sort_output_kernel<K>
      <<<unsigned(rows), kSortBlock, smem, stream>>>(keys, ids, stride, kc, k, to, out_values, out_ids);
  check_launch("sort_output_kernel");
}

}  // namespace

void sort_output(const float* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k,
                 KeyToValue to, float* out_values, int64_t* out_ids, cudaStream_t stream) {
  launch(keys, ids, stride, rows, kc, k, to, out_values, out_ids, stream);
}

void sort_output(const double* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k,
                 KeyToValue to, float* out_values, int64_t* out_ids, cudaStream_t stream) {
  launch(keys, ids, stride, rows, kc, k, to, out_values, out_ids, stream);
}

}  // namespace simkit::detail::cuda
