#pragma once
// Fixed-radius neighbours: for each query, every base row within a distance r, nearest first.
//
// The answer is ragged, so it comes in compressed-sparse-row form: query i's neighbours are
// ids[offsets[i] .. offsets[i + 1]) with their values beside them, sorted by (float64 value, id)
// -- the order and the values knn() gives, so the first k of a query's neighbours are its k
// nearest whenever it has k within r. Served by the low-dimensional tree of knn.hpp (l2 and
// sqeuclidean, d <= 8) on the CPU or the GPU; the lists always come back to host memory.
//
//   simkit::RadiusResult r = simkit::radius_search(ctx, Q.view(), X.view(), 0.05);
//   for (int64_t i = 0; i < Q.rows(); ++i)
//     for (int64_t p = r.offsets[i]; p < r.offsets[i + 1]; ++p) use(i, r.ids[p], r.values[p]);

#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

struct RadiusResult {
  std::vector<int64_t> offsets;  // m + 1, rising from 0
  std::vector<int64_t> ids;      // row indices into X, query after query
  std::vector<float> values;     // the metric's value of each pair (a distance, or its square)
  /// Queries that had more than max_neighbors rows within the radius: they keep their
  /// max_neighbors nearest. 0 when nothing was cut.
  int64_t capped = 0;
};

/// The rows of X (n x d) within `radius` of each row of Q (m x d): value <= radius in the
/// metric's own units (l2: the distance; sqeuclidean: the squared distance), compared in float64.
/// `max_neighbors` (0: no cap) bounds each query's list, keeping its nearest. Inputs in host or
/// device memory. Throws Error(invalid_argument) for empty sets, dimensions that differ, NaN/Inf,
/// a negative or non-finite radius or a negative cap; Error(unsupported) for another metric or
/// d > 8.
RadiusResult radius_search(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                           Metric metric = Metric::l2, int64_t max_neighbors = 0);

}  // namespace simkit
