#pragma once
// The full similarity (or distance) matrix between two point sets.

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

/// out(i, j) = metric(Q row i, X row j), for an m x d query set Q and an n x d set X.
///
/// `out` must be m x n. Inputs and output may each live on the host or (GPU backend) on the
/// device; the GPU backend copies what it needs. Throws Error(invalid_argument) on empty sets,
/// a dimension mismatch, a wrongly shaped `out` or a NaN/Inf input, before any work starts --
/// except that NaN/Inf in a device-resident input is found during the GPU computation (in a
/// pass it makes anyway); the call then throws the same error and `out` holds no result.
///
/// Cosine of a zero row, and pearson of a constant row, is 0 (never NaN).
void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out);

/// Convenience form returning a host matrix.
Matrix<float> pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric);

}  // namespace simkit
