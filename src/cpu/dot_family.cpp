#include "cpu/dot_family.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include <cblas.h>

#include <simkit/error.hpp>

#include "core/exact_metric.hpp"
#include "core/simd.hpp"

namespace simkit::detail::cpu {

double cancellation_threshold(int64_t d) {
  constexpr double u = 1.0 / (1 << 24);
  constexpr double eps = 1e-5;
  return std::min(2.0, 2.0 * u * std::sqrt(static_cast<double>(d)) / eps);
}

void cosine_epilogue(float* c, int64_t ldc, int64_t tq, int64_t tx, const double* q_inv, const double* x_inv) {
  for (int64_t i = 0; i < tq; ++i) {
    float* row = c + i * ldc;
    const double qi = q_inv[i];
    for (int64_t j = 0; j < tx; ++j) {
      double v = static_cast<double>(row[j]) * qi * x_inv[j];
      // The true cosine lies in [-1, 1]; rounding can step just outside.
      v = v > 1.0 ? 1.0 : v;
      v = v < -1.0 ? -1.0 : v;
      row[j] = static_cast<float>(v);
    }
  }
}

void sqdist_epilogue(float* c, int64_t ldc, int64_t tq, int64_t tx, const double* q_sq, const double* x_sq,
                     const float* q, const float* x, int64_t d, double tau, bool take_sqrt) {
  for (int64_t i = 0; i < tq; ++i) {
    float* row = c + i * ldc;
    const double a = q_sq[i];
    // Pass 1 (vectorisable): the expanded form everywhere, counting untrusted entries. An
    // entry is untrusted when its stored float value is below tau * S; pass 2 tests the same
    // expression on the same stored value, so both passes agree on which entries they are.
    int64_t untrusted = 0;
    for (int64_t j = 0; j < tx; ++j) {
      const double s = a + x_sq[j];
      const double e = s - 2.0 * static_cast<double>(row[j]);
      const float r = static_cast<float>(e > 0.0 ? e : 0.0);
      row[j] = r;
      untrusted += static_cast<double>(r) < tau * s;
    }
    // Pass 2 (rare): direct float64 sum of squared differences.
    if (untrusted > 0) {
      for (int64_t j = 0; j < tx; ++j) {
        const double s = a + x_sq[j];
        if (static_cast<double>(row[j]) < tau * s) row[j] = static_cast<float>(exact_sqdist(q + i * d, x + j * d, d));
      }
    }
    if (take_sqrt)
      for (int64_t j = 0; j < tx; ++j) row[j] = std::sqrt(row[j]);
  }
}

}  // namespace simkit::detail::cpu
