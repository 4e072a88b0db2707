#pragma once
// The one matrix product the dot family needs, through cuBLASLt in plain fp32
// (CUBLAS_COMPUTE_32F: no TF32, no reduced-precision shortcuts), and its half-precision form
// for k-means' candidate pass (half operands and result, float accumulation), whose results
// are certified in float64 afterwards (core/nearest_bound.hpp).
//
// With Q (m x d) and X (n x d) row-major, the row-major m x n result T(i, j) = alpha * q_i . x_j
// is, read column-major, the n x m matrix alpha * X Q^T: a "TN" product with M = n, N = m,
// K = d. Rows of T are query rows, so a query's scores over a base tile are contiguous.
//
// The algorithm for each shape is chosen once per process and device and then reused. With
// SIMKIT_GEMM_AUTOTUNE=1 in the environment, the first call of a shape times the
// heuristic's top candidates on the real buffers and keeps the fastest (the choice can then
// differ between processes, and with it the last bits of results); by default the heuristic's
// first choice is used, which is deterministic for a given device, library and shape.

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

/// out[i * ldo + j] = alpha * dot(Q row i, X row j), i < m, j < n; rows of Q and X are
/// contiguous with strides ldq and ldx (elements). Enqueued on `stream`; `workspace` may be null.
void dot_tile(Resources& r, cudaStream_t stream, int64_t m, int64_t n, int64_t d, float alpha, const float* Q,
              int64_t ldq, const float* X, int64_t ldx, float* out, int64_t ldo, void* workspace,
              size_t workspace_bytes);
/// The same over half rows, accumulated in float, rounded to half.
void dot_tile(Resources& r, cudaStream_t stream, int64_t m, int64_t n, int64_t d, float alpha, const __half* Q,
              int64_t ldq, const __half* X, int64_t ldx, __half* out, int64_t ldo, void* workspace,
              size_t workspace_bytes);

/// Workspace worth reserving for dot_tile under a budget.
size_t gemm_workspace_bytes(size_t budget);

}  // namespace simkit::detail::cuda
