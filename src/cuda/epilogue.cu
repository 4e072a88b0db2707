#include "cuda/epilogue.hpp"

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kSpan = 256;  // columns per warp work unit: 8 coalesced passes of 32

template <bool SQRT>
__global__ void __launch_bounds__(kBlock)
    l2_epilogue_kernel(float* out, int64_t ldo, int64_t m, int64_t n, const float* qn, const float* xn, const float* Q,
                       int64_t ldq, const float* X, int64_t ldx, int64_t d) {
  const int lane = threadIdx.x % 32;
  const int64_t spans = (n + kSpan - 1) / kSpan;
  const int64_t units = m * spans;
  const int64_t warps = int64_t(gridDim.x) * (kBlock / 32);
  for (int64_t u = int64_t(blockIdx.x) * (kBlock / 32) + threadIdx.x / 32; u < units; u += warps) {
    const int64_t i = u / spans;
    const int64_t j0 = (u % spans) * kSpan;
    const float nq = qn[i];
    float* row = out + i * ldo;
    const float* q = Q + i * ldq;
    constexpr int P = kSpan / 32;
    // All loads of the span first, so that eight are in flight per lane.
    float v[P], scale[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int64_t j = j0 + p * 32 + lane;
      scale[p] = j < n ? nq + xn[j] : 0.f;
      v[p] = j < n ? row[j] : 0.f;
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int64_t j = j0 + p * 32 + lane;
      v[p] += scale[p];
      const bool redo = j < n && v[p] < kCancellationGuard * scale[p];
      v[p] = fmaxf(v[p], 0.f);
      if (SQRT) v[p] = sqrtf(v[p]);
      unsigned pending = __ballot_sync(0xffffffffu, redo);
      // The whole warp recomputes each flagged element: lanes stride over d, coalesced.
      while (pending != 0) {
        const int src = __ffs(pending) - 1;
        pending &= pending - 1;
        const float* x = X + (j0 + p * 32 + src) * ldx;
        double acc = 0;
        for (int64_t t = lane; t < d; t += 32) {
          const double diff = double(q[t]) - double(x[t]);
          acc += diff * diff;
        }
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == src) v[p] = float(SQRT ? sqrt(acc) : acc);
      }
      if (j < n) row[j] = v[p];
    }
  }
}

}  // namespace

void l2_epilogue(float* out, int64_t ldo, int64_t m, int64_t n, const float* qn, const float* xn, const float* Q,
                 int64_t ldq, const float* X, int64_t ldx, int64_t d, bool take_sqrt, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const int64_t units = m * ((n + kSpan - 1) / kSpan);
  const int64_t want = (units + kBlock / 32 - 1) / (kBlock / 32);
  const int grid = int(want < 16384 ? want : 16384);
  if (take_sqrt)
    l2_epilogue_kernel<true><<<grid, kBlock, 0, stream>>>(out, ldo, m, n, qn, xn, Q, ldq, X, ldx, d);
  else
    l2_epilogue_kernel<false><<<grid, kBlock, 0, stream>>>(out, ldo, m, n, qn, xn, Q, ldq, X, ldx, d);
  check_launch("l2_epilogue_kernel");
}

}  // namespace simkit::detail::cuda
