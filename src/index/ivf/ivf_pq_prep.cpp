// The row preparation and per-row terms of ivf_pq (ivf_pq_prep.hpp), compiled here, with
// OpenMP, rather than inline in every file that includes the header.

#include "index/ivf/ivf_pq_prep.hpp"

#include <cmath>

namespace simkit::detail {

void prepare_pq_rows(const MetricPlan& plan, const float* x, int64_t n, int64_t d, float* out) {
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

float pq_row_term(const IvfPqLists& L, int64_t list, const uint8_t* code) {
  const int64_t m = L.m, ks = L.ksub, ds = L.dsub();
  const float* c = L.centroids.data() + list * L.dim;
  double v = 0;
  for (int64_t j = 0; j < m; ++j) {
    const float* e = L.codebooks.data() + (j * ks + code[j]) * ds;
    for (int64_t t = 0; t < ds; ++t) v += double(e[t]) * (double(e[t]) + 2.0 * double(c[j * ds + t]));
  }
  return static_cast<float>(v);
}

void make_row_terms(IvfPqLists& L) {
  L.row_terms.clear();
  if (!L.has_row_terms() || !L.trained()) return;
  L.row_terms.resize(static_cast<size_t>(L.arena.arena_rows()));
  const ListArena& A = L.arena;
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t l = 0; l < L.nlist; ++l)
    for (int64_t r = A.begin[size_t(l)]; r < A.end[size_t(l)]; ++r)
      L.row_terms[size_t(r)] = pq_row_term(L, l, L.codes.data() + r * L.m);
}

}  // namespace simkit::detail
