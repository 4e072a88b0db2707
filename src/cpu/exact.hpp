#pragma once
// Direct squared Euclidean distance with float64 arithmetic: the cancellation-free form used
// where the expanded ||q||^2 + ||x||^2 - 2 q.x is unreliable, and for the exact re-score of
// k-NN candidates. Differences of two floats are exact in double, each square is rounded once
// (relative 2^-53), and the sum of non-negative terms keeps a relative error of about d 2^-53,
// far below the float32 output rounding. Deterministic: same rows, same bits.

#include <cstdint>

#include "cpu/simd.hpp"

namespace simkit::detail::cpu {

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

}  // namespace simkit::detail::cpu
