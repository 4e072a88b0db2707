#pragma once
// The dot-product family (dot, cosine, pearson, l2, sqeuclidean) on the CPU: one float32
// matrix product per block through cblas_sgemm, then a per-row-norm epilogue.
//
//   dot          the product itself
//   cosine       q.x * (1/|q|) * (1/|x|), norms in float64; a zero-norm row gives 0
//   pearson      cosine of mean-centred rows: Q and X blocks are centred into scratch copies
//                (the mean computed in float64), so the accuracy does not depend on how far
//                the data sit from the origin; a constant row centres to zero and gives 0
//   sqeuclidean  ||q||^2 + ||x||^2 - 2 q.x in float64 from the float32 product, clamped at
//                0, with the entries that cancel badly recomputed directly (see
//                cancellation_threshold)
//   l2           the square root of sqeuclidean

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>
#include "core/metric_plan.hpp"
#include "core/row_stats.hpp"

namespace simkit::detail::cpu {

/// The fraction tau of ||q||^2 + ||x||^2 below which an expanded squared distance is not
/// trusted and is recomputed directly; see the derivation in dot_family.cpp.
double cancellation_threshold(int64_t d);

/// In place on a tq x tx block holding q.x: cosine (or pearson, given centred products).
void cosine_epilogue(float* c, int64_t ldc, int64_t tq, int64_t tx, const double* q_inv, const double* x_inv);

/// In place on a tq x tx block holding q.x: squared distances (square roots when take_sqrt).
/// q and x are the block's original rows (tq x d, tx x d), for the direct recomputation.
void sqdist_epilogue(float* c, int64_t ldc, int64_t tq, int64_t tx, const double* q_sq, const double* x_sq,
                     const float* q, const float* x, int64_t d, double tau, bool take_sqrt);

}  // namespace simkit::detail::cpu
