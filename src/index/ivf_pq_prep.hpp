#pragma once
// The row preparation of ivf_pq's coded space (index/ivf_pq_lists.hpp): what a stored row goes
// through before it meets the centroids and the code books, and what a query goes through
// before its lookup tables are built. Shared by the index (train, add) and the backends
// (search) so both sides of a table see the same preparation.

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

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

/// The largest list-term table made (bytes). Below it the terms replace a per-(query, list)
/// table build of m * ksub * dsub multiply-adds by m * ksub adds; at nlist = 1024, m = 48 they
/// take 48 MiB. Above it (nlist in the tens of thousands with large m) the terms would outgrow
/// the codes of most indexes and stop fitting any cache, so the search builds each table from
/// the residual instead (cpu/ivf/ivf_pq_search.cpp).
inline constexpr size_t kPqListTermsCap = size_t(256) << 20;

/// For the squared-distance form, |q' - c - e|^2 = |q' - c|^2 + (|e|^2 + 2 c_j.e) - 2 q'_j.e per
/// sub-space j and code book entry e: the middle term depends on the list alone. Returns it for
/// every (list, j, entry), each summed in float64 and rounded once; null for the other forms or
/// above the cap.
inline std::shared_ptr<const std::vector<float>> make_list_terms(const IvfPqLists& L) {
  const int64_t nlist = L.nlist, m = L.m, ks = L.ksub, ds = L.dsub(), d = L.dim;
  const size_t count = static_cast<size_t>(nlist * m * ks);
  if (L.table != PqTable::sqdist || count == 0 || count * sizeof(float) > kPqListTermsCap) return nullptr;
  auto terms = std::make_shared<std::vector<float>>(count);
  float* out = terms->data();
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < nlist; ++l)
    for (int64_t j = 0; j < m; ++j) {
      const float* c = L.centroids.data() + l * d + j * ds;
      for (int64_t s = 0; s < ks; ++s) {
        const float* e = L.codebooks.data() + (j * ks + s) * ds;
        double v = 0;
        for (int64_t t = 0; t < ds; ++t) v += double(e[t]) * (double(e[t]) + 2.0 * double(c[t]));
        out[(l * m + j) * ks + s] = static_cast<float>(v);
      }
    }
  return terms;
}

}  // namespace simkit::detail
