#pragma once
// Per-row preparation of a block of rows (queries or base) before the matrix product.
//
//   sq_norms          norms[i] = sum_j x_ij^2                        (l2, sqeuclidean)
//   inv_norms         norms[i] = 1 / |x_i|, 0 for a zero row          (cosine, k-NN)
//   normalize         out_i = x_i / |x_i|, a zero row stays zero      (cosine)
//   centre_normalize  out_i = (x_i - mean_i) / |x_i - mean_i|, a constant row becomes zero
//                     (pearson: the cosine of the centred rows)
//   translate         out_i = x_i - c for a given point c, norms[i] = |out_i|^2 (optional): the
//                     expanded squared distance of data far from the origin, moved next to it
//
// Sums run in double so that the mean and norm of a row carry no rounding worth mentioning;
// rows are written back in float. `out` may equal `in` (each row is read whole before any
// element of it is written, by the same warp).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

enum class RowOp { sq_norms, inv_norms, normalize, centre_normalize, translate };

/// rows x d, row stride ld_in / ld_out. `norms` (rows floats) is written for the norm ops and
/// optional (may be null) for the others; `out` is unused for the norm ops. When `non_finite`
/// is given, *non_finite is set to 1 if any element is NaN or Inf: the float64 sum of squares
/// is finite exactly when every element is, so the check costs one comparison per row.
/// `centre` (d floats, device) is the point c of translate, unused by the other ops.
void row_prep(RowOp op, const float* in, int64_t ld_in, float* out, int64_t ld_out, float* norms, int64_t rows,
              int64_t d, cudaStream_t stream, int* non_finite = nullptr, const float* centre = nullptr);

/// Enqueues a scan of count floats that sets *flag to 1 if any is NaN or Inf (the flag is not
/// cleared first; read it after the stream synchronises).
void flag_non_finite(const float* p, int64_t count, int* flag, int multiprocessors, cudaStream_t stream);

/// Fills count keys with +inf and ids with INT64_MAX: an empty running top-k.
void fill_empty(float* keys, int64_t* ids, int64_t count, cudaStream_t stream);

}  // namespace simkit::detail::cuda
