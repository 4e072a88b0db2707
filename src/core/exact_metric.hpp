#pragma once
// Direct metrics in float64 arithmetic. exact_sqdist is the cancellation-free form used where
// the expanded ||q||^2 + ||x||^2 - 2 q.x is unreliable; all of them re-score k-NN candidates
// on the host (core/rescore.cpp, for both backends; cuda/rescore.cu is the device twin), because sgemm need not give
// equal bits for equal rows (OpenBLAS's AVX-512 kernels sum a row differently depending on its position in the tile),
// so equal rows would not tie. Differences of two floats are exact in double, each square is rounded once (relative
// 2^-53), and the sum of non-negative terms keeps a relative error of about d 2^-53, far below the float32 output
// rounding. Deterministic: same rows, same bits.

#include <cmath>
#include <cstdint>

#include "core/metric_plan.hpp"
#include "core/simd.hpp"

namespace simkit::detail {

inline double exact_sqdist(const float* a, const float* b, int64_t d) {
  using simd::d4;
  d4 acc0 = {0, 0, 0, 0}, acc1 = {0, 0, 0, 0};
  int64_t t = 0;
  for (; t + 8 <= d; t += 8) {
    const d4 e0 = simd::load4_as_double(a + t) - simd::load4_as_double(b + t);
    const d4 e1 = simd::load4_as_double(a + t + 4) - simd::load4_as_double(b + t + 4);
    acc0 += e0 * e0;
    acc1 += e1 * e1;
  }
  double s = simd::sum(acc0 + acc1);
  for (; t < d; ++t) {
    const double e = static_cast<double>(a[t]) - static_cast<double>(b[t]);
    s += e * e;
  }
  return s;
}

/// sum a_t b_t in float64 with four-lane vectors (each product exact, the sums rounded):
/// deterministic, and as accurate as exact_dot to within a few units in the last place.
inline double exact_dot_vector(const float* a, const float* b, int64_t d) {
  using simd::d4;
  d4 acc0 = {0, 0, 0, 0}, acc1 = {0, 0, 0, 0};
  int64_t t = 0;
  for (; t + 8 <= d; t += 8) {
    acc0 += simd::load4_as_double(a + t) * simd::load4_as_double(b + t);
    acc1 += simd::load4_as_double(a + t + 4) * simd::load4_as_double(b + t + 4);
  }
  double s = simd::sum(acc0 + acc1);
  for (; t < d; ++t) s += static_cast<double>(a[t]) * static_cast<double>(b[t]);
  return s;
}

/// sum a_t b_t in float64; `ma`, `mb` are subtracted first (the Pearson centring; 0 otherwise).
inline double exact_dot(const float* a, const float* b, int64_t d, double ma = 0, double mb = 0) {
  double s = 0;
  for (int64_t t = 0; t < d; ++t) s += (static_cast<double>(a[t]) - ma) * (static_cast<double>(b[t]) - mb);
  return s;
}

inline double exact_mean(const float* a, int64_t d) {
  double s = 0;
  for (int64_t t = 0; t < d; ++t) s += a[t];
  return d > 0 ? s / static_cast<double>(d) : 0.0;
}

/// Cosine of a and b after subtracting ma and mb (Pearson when they are the row means); 0 where
/// either side is all zeros, as in the blocked computation, and clamped to [-1, 1].
inline double exact_cosine(const float* a, const float* b, int64_t d, double ma = 0, double mb = 0) {
  const double ab = exact_dot(a, b, d, ma, mb), aa = exact_dot(a, a, d, ma, ma), bb = exact_dot(b, b, d, mb, mb);
  if (!(aa > 0 && bb > 0)) return 0.0;
  const double c = ab / (std::sqrt(aa) * std::sqrt(bb));
  return c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
}

/// The float64 selection key of a pair (smaller is better): the exact value of `form`, negated
/// for the similarities.
inline double exact_key(ExactForm form, const float* q, const float* x, int64_t d) {
  switch (form) {
    case ExactForm::sqdist: return exact_sqdist(q, x, d);
    case ExactForm::dot: return -exact_dot(q, x, d);
    case ExactForm::cosine: return -exact_cosine(q, x, d);
    case ExactForm::centred_cosine: return -exact_cosine(q, x, d, exact_mean(q, d), exact_mean(x, d));
    case ExactForm::none: break;
  }
  return 0.0;
}

/// l1 as the GPU k-NN computes it (and ranks by): a float32 sum in column order.
inline double l1_column_order(const float* q, const float* x, int64_t d) {
  float acc = 0.f;
  for (int64_t t = 0; t < d; ++t) acc += std::fabs(q[t] - x[t]);
  return double(acc);
}

}  // namespace simkit::detail
