#pragma once
// Exact k-nearest-neighbour search: by brute force, or, in low dimensions, through a tree.
//
// Brute force streams the database in tiles and each query keeps only its current best k, so
// memory stays bounded (by Context::gpu_memory_budget on the GPU) whatever the database size.
// The tree (l2 and sqeuclidean, d <= 8, both backends; simkit/tree.hpp) is a bounding-volume
// hierarchy over the base in Morton order, walked by packets of Morton-neighbouring queries; it
// returns exactly what brute force on the same backend returns (the same float64 keys, the same
// tie rule).

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

/// How knn() finds the neighbours; every method returns the same ids and values.
enum class KnnMethod {
  automatic,  // the tree where it was measured faster (tree_knn_is_faster), brute force elsewhere
  brute,      // every pair, through the fused product and selection kernels
  tree,       // the bounding-volume hierarchy: l2 / sqeuclidean, d <= 8, k <= 128 on the GPU (else Error(unsupported))
};

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
/// rounded to float. For l2, sqeuclidean, dot and cosine (on the GPU, k <= 1024) a query whose
/// candidates provably hold its best k (a float32 error bound) is done; one where more rows tie
/// at the k-th value than the candidates hold is ranked in float64 against every row. l1 is
/// summed directly in float32 and ranked on those values.
/// Throws Error(invalid_argument) when k < 1, k > n, sets are empty, dimensions differ,
/// output shapes are wrong, or an input holds NaN/Inf; Error(unsupported) for KnnMethod::tree
/// outside its domain.
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids, KnnMethod method = KnnMethod::automatic);

/// Convenience form returning host matrices.
KnnResult knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
              KnnMethod method = KnnMethod::automatic);

/// True where KnnMethod::automatic takes the tree on ctx.device (cpu or gpu): a metric and
/// dimension it serves, and enough queries and base rows to repay building it (the thresholds
/// are measured per backend, and written beside their measurements in src/spatial/tree_knn.cpp).
bool tree_knn_is_faster(const Context& ctx, int64_t m, int64_t n, int64_t d, Metric metric);

}  // namespace simkit
