// A warp per (query, candidate): lanes stride over d (coalesced), double accumulation, a
// butterfly reduction. The centred form makes two passes (the means first), as the host does,
// so that rows far from the origin lose nothing to cancellation.
#include "cuda/rescore.hpp"

#include "cuda/check.hpp"
#include "cuda/select/bitonic.cuh"

namespace simkit::detail::cuda {

namespace {

constexpr int kRescoreBlock = 256;

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double cosine_of(double ab, double aa, double bb) {
  if (!(aa > 0 && bb > 0)) return 0.0;
  const double c = ab / (sqrt(aa) * sqrt(bb));
  return c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
}

template <ExactForm F>
__device__ double exact_key(const float* q, const float* x, int64_t d, int lane) {
  if constexpr (F == ExactForm::sqdist) {
    double acc = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double e = double(q[t]) - double(x[t]);
      acc += e * e;
    }
    return warp_sum(acc);
  } else if constexpr (F == ExactForm::dot) {
    double acc = 0;
    for (int64_t t = lane; t < d; t += 32) acc += double(q[t]) * double(x[t]);
    return -warp_sum(acc);
  } else {
    double mq = 0, mx = 0;
    if constexpr (F == ExactForm::centred_cosine) {
      for (int64_t t = lane; t < d; t += 32) mq += q[t], mx += x[t];
      mq = warp_sum(mq) / double(d);
      mx = warp_sum(mx) / double(d);
    }
    double ab = 0, aa = 0, bb = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double a = double(q[t]) - mq, b = double(x[t]) - mx;
      ab += a * b, aa += a * a, bb += b * b;
    }
    return -cosine_of(warp_sum(ab), warp_sum(aa), warp_sum(bb));
  }
}

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
