#pragma once
// The l2 / sqeuclidean epilogue of the expanded form |q - x|^2 = |q|^2 + |x|^2 - 2 q.x.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// On entry out[i * ldo + j] holds -2 q_i . x_j (the matrix product); on exit the squared
/// distance (sqeuclidean) or the distance (l2, take_sqrt), for i < m, j < n.
///
/// The expansion loses digits where |q - x|^2 is small next to |q|^2 + |x|^2: its rounding
/// error is a few ulp of |q|^2 + |x|^2, whatever the distance. Where the expanded value falls
/// below kCancellationGuard * (|q|^2 + |x|^2), the warp recomputes that element directly
/// (sum of squared differences in double), so near-duplicates and duplicates come out exact
/// (duplicates exactly 0) instead of as noise clamped at 0.
///
/// qn / xn are the squared norms; Q, X the raw rows (strides ldq, ldx) for the recomputation.
void l2_epilogue(float* out, int64_t ldo, int64_t m, int64_t n, const float* qn, const float* xn, const float* Q,
                 int64_t ldq, const float* X, int64_t ldx, int64_t d, bool take_sqrt, cudaStream_t stream);

/// 1/32: an fp32 expansion with error ~ 4 u (|q|^2 + |x|^2), u = 2^-24, stays under
/// 4 * 32 * 6e-8 ~ 8e-6 relative at the threshold, inside the 1e-5 contract; random pairs
/// (value ~ |q|^2 + |x|^2) never trigger it.
constexpr float kCancellationGuard = 1.0f / 32.0f;

}  // namespace simkit::detail::cuda
