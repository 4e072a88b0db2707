#pragma once
// Exact k-nearest-neighbour search by brute force.
//
// The database is streamed in tiles and each query keeps only its current best k, so memory
// stays bounded (by Context::gpu_memory_budget on the GPU) whatever the database size.

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

struct KnnResult {
  Matrix<float> values;  // m x k, the metric's own value (distance or similarity)
  Matrix<int64_t> ids;   // m x k, row indices into X
};

/// For each row of Q (m x d), the k rows of X (n x d) best under `metric`: smallest first for
/// distances, largest first for similarities; equal values are ordered by the lower id.
///
/// `values` and `ids` must be m x k (host or device). Both backends apply one rule: candidates
/// found through the fast float32 product (the ||q||^2 - 2 q.x + ||x||^2 expansion for the
/// distances) are re-scored directly in float64 and ranked by (float64 value, id), so the CPU
/// and the GPU return the same ids, also on near-ties, and the values are the float64 ones
/// rounded to float. l1 is summed directly in float32 and ranked on those values.
/// Throws Error(invalid_argument) when k < 1, k > n, sets are empty, dimensions differ,
/// output shapes are wrong, or an input holds NaN/Inf.
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids);

/// Convenience form returning host matrices.
KnnResult knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric);

}  // namespace simkit
