#pragma once
// One pair's value with float32 sums, shared by every strategy: the sums a metric accumulates
// (Sums), how one coordinate adds to them, how partial sums combine (the reductions of S5, S6
// and the CPU reduction strategy), and the final value. Host and device.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "strategies.hpp"

#if defined(__CUDACC__)
#define STUDY_HD __host__ __device__ __forceinline__
#else
#define STUDY_HD inline
#endif

namespace simkit::strategies {

/// The running sums of one pair. euclidean: s0 = sum (a - b)^2. cosine and pearson's second
/// pass (centred coordinates): s0 = sum ab, s1 = sum a^2, s2 = sum b^2. pearson_opt: those
/// three of the raw coordinates plus s3 = sum a, s4 = sum b. pearson's first pass: s3, s4.
struct Sums {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
};

/// How many of Sums' fields a pass of metric M uses (the reductions move only those).
template <StudyMetric M>
constexpr int sums_used() {
  return M == StudyMetric::euclidean ? 1 : (M == StudyMetric::pearson_opt ? 5 : 3);
}

/// Adds one coordinate pair (for pearson: centred coordinates, its second pass).
template <StudyMetric M>
STUDY_HD void accumulate(Sums& s, float a, float b) {
  if constexpr (M == StudyMetric::euclidean) {
    const float t = a - b;
    s.s0 += t * t;
  } else {
    s.s0 += a * b;
    s.s1 += a * a;
    s.s2 += b * b;
    if constexpr (M == StudyMetric::pearson_opt) {
      s.s3 += a;
      s.s4 += b;
    }
  }
}

/// Partial sums of two parts of the dimensions, combined.
STUDY_HD void combine(Sums& into, const Sums& other) {
  into.s0 += other.s0;
  into.s1 += other.s1;
  into.s2 += other.s2;
  into.s3 += other.s3;
  into.s4 += other.s4;
}

/// A ratio whose zero denominator gives 0 (zero-norm or constant rows), as simkit's metrics.
STUDY_HD float safe_ratio(float num, float den) { return den > 0.f ? num / den : 0.f; }

/// The metric's value from the sums of all d coordinates.
template <StudyMetric M>
STUDY_HD float finish(const Sums& s, int64_t d) {
  if constexpr (M == StudyMetric::euclidean) {
    return sqrtf(s.s0);
  } else if constexpr (M == StudyMetric::pearson_opt) {
    const float D = float(d);
    // Rounding can leave D sum a^2 - (sum a)^2 a hair below zero for a constant row.
    const float va = fmaxf(D * s.s1 - s.s3 * s.s3, 0.f), vb = fmaxf(D * s.s2 - s.s4 * s.s4, 0.f);
    return safe_ratio(D * s.s0 - s.s3 * s.s4, sqrtf(va) * sqrtf(vb));
  } else {
    return safe_ratio(s.s0, sqrtf(s.s1) * sqrtf(s.s2));
  }
}

/// The whole pair, sequentially over the dimensions (a and b with unit stride). pearson runs
/// its two passes: the means, then the centred sums.
template <StudyMetric M>
STUDY_HD float pair_value(const float* a, const float* b, int64_t d) {
  Sums s;
  if constexpr (M == StudyMetric::pearson) {
    float sa = 0, sb = 0;
    for (int64_t t = 0; t < d; ++t) sa += a[t], sb += b[t];
    const float ma = sa / float(d), mb = sb / float(d);
    for (int64_t t = 0; t < d; ++t) accumulate<StudyMetric::cosine>(s, a[t] - ma, b[t] - mb);
  } else {
    for (int64_t t = 0; t < d; ++t) accumulate<M>(s, a[t], b[t]);
  }
  return finish<M>(s, d);
}

/// Calls f(std::integral_constant<StudyMetric, M>{}) for the runtime metric.
template <class F>
auto with_metric(StudyMetric metric, F&& f) {
  switch (metric) {
    case StudyMetric::euclidean: return f(std::integral_constant<StudyMetric, StudyMetric::euclidean>{});
    case StudyMetric::cosine: return f(std::integral_constant<StudyMetric, StudyMetric::cosine>{});
    case StudyMetric::pearson: return f(std::integral_constant<StudyMetric, StudyMetric::pearson>{});
    case StudyMetric::pearson_opt: break;
  }
  return f(std::integral_constant<StudyMetric, StudyMetric::pearson_opt>{});
}

}  // namespace simkit::strategies
