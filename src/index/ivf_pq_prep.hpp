#pragma once
// The row preparation of ivf_pq's coded space (index/ivf_pq_lists.hpp): what a stored row goes
// through before it meets the centroids and the code books, and what a query goes through
// before its lookup tables are built. Shared by the index (train, add) and the backends
// (search) so both sides of a table see the same preparation.

#include <cmath>
#include <cstdint>

#include "core/metric_plan.hpp"

namespace simkit::detail {

/// out row r = row r of x prepared for the plan (n x d, both contiguous; out may equal x):
/// as given, unit norm (cosine), or centred then unit norm (pearson). Norms and means in
/// float64; a zero (or, for pearson, constant) row becomes all zeros, as in the k-NN epilogues.
inline void prepare_pq_rows(const MetricPlan& plan, const float* x, int64_t n, int64_t d, float* out) {
#pragma omp parallel for schedule(static) if (n * d > (int64_t(1) << 16))
  for (int64_t r = 0; r < n; ++r) {
    const float* a = x + r * d;
    float* o = out + r * d;
    double mean = 0;
    if (plan.prep == RowPrep::centre_normalize) {
      for (int64_t t = 0; t < d; ++t) mean += a[t];
      mean /= static_cast<double>(d);
    }
    double sq = 0;
    for (int64_t t = 0; t < d; ++t) {
      const double e = static_cast<double>(a[t]) - mean;
      sq += e * e;
    }
    const double scale = plan.prep == RowPrep::none ? 1.0 : (sq > 0 ? 1.0 / std::sqrt(sq) : 0.0);
    for (int64_t t = 0; t < d; ++t) o[t] = static_cast<float>((static_cast<double>(a[t]) - mean) * scale);
  }
}

}  // namespace simkit::detail
