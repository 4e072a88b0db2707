// CPU strategy 3: the pairs in order, each pair's sums split over OpenMP threads with a
// reduction (the study's section 5.1.2). A parallel region per pair -- m x n of them, each a
// fork, a few hundred multiply-adds per thread and a join -- is what the study measured at
// 0.02-0.08x the serial loop: the fork and join cost more than the sums they share.

#include <cmath>

#include "pair_metrics.hpp"

namespace simkit::strategies {

namespace {

/// One pair, its sums reduced over `threads` threads; pearson's two passes each reduced.
template <StudyMetric M>
float reduced_pair(const float* a, const float* b, int64_t d, int threads) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  float ma = 0, mb = 0;
  if constexpr (M == StudyMetric::pearson) {
#pragma omp parallel for reduction(+ : s3, s4) num_threads(threads)
    for (int64_t t = 0; t < d; ++t) s3 += a[t], s4 += b[t];
    ma = s3 / float(d), mb = s4 / float(d);
    s3 = s4 = 0;
  }
#pragma omp parallel for reduction(+ : s0, s1, s2, s3, s4) num_threads(threads)
  for (int64_t t = 0; t < d; ++t) {
    Sums s;
    if constexpr (M == StudyMetric::pearson)
      accumulate<StudyMetric::cosine>(s, a[t] - ma, b[t] - mb);
    else
      accumulate<M>(s, a[t], b[t]);
    s0 += s.s0, s1 += s.s1, s2 += s.s2, s3 += s.s3, s4 += s.s4;
  }
  Sums total;
  total.s0 = s0, total.s1 = s1, total.s2 = s2, total.s3 = s3, total.s4 = s4;
  return finish<M>(total, d);
}

}  // namespace

void cpu_dim_reduction(const Problem& p, StudyMetric metric, float* out, int threads) {
  with_metric(metric, [&](auto M) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        out[i * p.n + j] = reduced_pair<M.value>(p.Q + i * p.d, p.X + j * p.d, p.d, threads);
  });
}

}  // namespace simkit::strategies
