// A warp per (query, candidate), each key from cuda/exact_key.cuh.
#include "cuda/rescore.hpp"

#include "cuda/check.hpp"
#include "cuda/exact_key.cuh"
#include "cuda/select/bitonic.cuh"

namespace simkit::detail::cuda {

namespace {

constexpr int kRescoreBlock = 256;

template <ExactForm F>
__global__ void __launch_bounds__(kRescoreBlock)
    rescore_kernel(const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d, const int64_t* ids,
                   int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc) {
  const int lane = threadIdx.x % 32;
  const int64_t pairs = rows * kc;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t p = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; p < pairs; p += warps) {
    const int64_t r = p / kc, c = p % kc;
    const int64_t id = ids[r * ids_stride + c];
    double key = __longlong_as_double(0x7ff0000000000000ll);  // +inf: an empty slot ranks last
    if (id != kNoId) key = exact_key<F>(Q + r * ldq, X + id * ldx, d, lane);
    if (lane == 0) keys[r * key_stride + c] = key;
  }
}

template <ExactForm F>
void launch(int grid, cudaStream_t s, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
            const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc) {
  rescore_kernel<F><<<grid, kRescoreBlock, 0, s>>>(Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
  check_launch("rescore_kernel");
}

}  // namespace

void rescore_keys(ExactForm form, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
                  const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc,
                  cudaStream_t stream) {
  const int64_t pairs = rows * kc;
  if (pairs <= 0) return;
  const int64_t want = (pairs + kRescoreBlock / 32 - 1) / (kRescoreBlock / 32);
  const int grid = int(want < 65536 ? want : 65536);
  switch (form) {
    case ExactForm::sqdist:
      return launch<ExactForm::sqdist>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::dot:
      return launch<ExactForm::dot>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::cosine:
      return launch<ExactForm::cosine>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::centred_cosine:
      return launch<ExactForm::centred_cosine>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows,
                                               kc);
    case ExactForm::none: break;
  }
}

}  // namespace simkit::detail::cuda
