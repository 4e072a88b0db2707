#pragma once
// The row preparation of ivf_pq's coded space (index/ivf_pq_lists.hpp): what a stored row goes
// through before it meets the centroids and the code books, and what a query goes through
// before its lookup tables are built. Shared by the index (train, add) and the backends
// (search) so both sides of a table see the same preparation.

#include <cmath>
#include <cstdint>

#include "core/metric_plan.hpp"
#include "index/ivf_pq_lists.hpp"

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

/// For the squared-distance form, |q' - c - e|^2 = |q' - c|^2 + sum_j (|e_j|^2 + 2 c_j.e_j) -
/// 2 q'.e for a row coded as e in the list of c: the middle sum depends on the row alone, so it
/// is stored per row (4 bytes) and the search needs only the query's -2 q'_j.e_s table and
/// |q' - c|^2 per list. Sets L.row_terms for every row (empty for the other forms).
inline void make_row_terms(IvfPqLists& L) {
  L.row_terms.clear();
  if (L.table != PqTable::sqdist || L.offsets.empty()) return;
  const int64_t m = L.m, ks = L.ksub, ds = L.dsub(), d = L.dim;
  L.row_terms.resize(static_cast<size_t>(L.size()));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t l = 0; l < L.nlist; ++l) {
    const float* c = L.centroids.data() + l * d;
    for (int64_t r = L.offsets[size_t(l)]; r < L.offsets[size_t(l + 1)]; ++r) {
      const uint8_t* code = L.codes.data() + r * m;
      double v = 0;
      for (int64_t j = 0; j < m; ++j) {
        const float* e = L.codebooks.data() + (j * ks + code[j]) * ds;
        for (int64_t t = 0; t < ds; ++t) v += double(e[t]) * (double(e[t]) + 2.0 * double(c[j * ds + t]));
      }
      L.row_terms[size_t(r)] = static_cast<float>(v);
    }
  }
}

}  // namespace simkit::detail
