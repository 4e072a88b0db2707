#pragma once
// The IFGT's monomials v^alpha, |alpha| < p, in graded lexicographic order, built by the
// recurrence that makes each degree from the previous one with a single multiplication per
// monomial (no pow).
//
// Order. Degree 0 is the single monomial 1. The monomials of degree g + 1 are made from those of
// degree g: for coordinate i = 0 .. d-1 in turn, v_i times every degree-g monomial whose first
// nonzero exponent is at index >= i. head[i] marks where, inside the previous degree's block,
// those monomials begin; multiplying by v_i only monomials from head[i] on makes each
// multi-index once (its first nonzero index is the coordinate last multiplied). For d = 2,
// p = 3: 1, v0, v1, v0^2, v0 v1, v1^2.

#include <cstdint>
#include <vector>

namespace simkit::detail::cpu {

/// Writes the monomials of total degree < p of kLanes vectors at once (monomial_count(d, p)
/// per vector): v[i * kLanes + l] is coordinate i of vector l, out[t * kLanes + l] its monomial
/// t. The innermost loop runs over lanes, so each recurrence step is a few vector multiplies.
/// head: scratch of d values.
constexpr int64_t kLanes = 8;
inline void graded_monomials_lanes(const double* v, int64_t d, int p, int64_t* head, double* out) {
  for (int64_t l = 0; l < kLanes; ++l) out[l] = 1.0;
  for (int64_t i = 0; i < d; ++i) head[i] = 0;
  int64_t t = 1;
  for (int g = 1; g < p; ++g) {
    const int64_t end = t;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t start = head[i];
      head[i] = t;
      const double* vi = v + i * kLanes;
      for (int64_t j = start; j < end; ++j, ++t) {
        const double* src = out + j * kLanes;
        double* dst = out + t * kLanes;
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = vi[l] * src[l];
      }
    }
  }
}

/// The lane-parallel recurrence fused with the evaluation's dot product:
/// result[l] = sum_t C[t] * (monomial t of vector l). mono is scratch of P * kLanes values. Two
/// interleaved sets of accumulators, kept in registers, so that consecutive FMAs do not wait
/// on each other.
inline void monomial_dot_lanes(const double* v, int64_t d, int p, int64_t* head, const double* C, double* mono,
                               double* result) {
  double acc0[kLanes], acc1[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) {
    mono[l] = 1.0;
    acc0[l] = C[0];
    acc1[l] = 0.0;
  }
  for (int64_t i = 0; i < d; ++i) head[i] = 0;
  int64_t t = 1;
  for (int g = 1; g < p; ++g) {
    const int64_t end = t;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t start = head[i];
      head[i] = t;
      const double* vi = v + i * kLanes;
      int64_t j = start;
      for (; j + 1 < end; j += 2, t += 2) {
        const double c0 = C[t], c1 = C[t + 1];
        const double* s0 = mono + j * kLanes;
        double* d0 = mono + t * kLanes;
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) {
          const double m0 = vi[l] * s0[l], m1 = vi[l] * s0[kLanes + l];
          d0[l] = m0;
          d0[kLanes + l] = m1;
          acc0[l] += c0 * m0;
          acc1[l] += c1 * m1;
        }
      }
      for (; j < end; ++j, ++t) {
        const double c0 = C[t];
        const double* s0 = mono + j * kLanes;
        double* d0 = mono + t * kLanes;
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) {
          const double m0 = vi[l] * s0[l];
          d0[l] = m0;
          acc0[l] += c0 * m0;
        }
      }
    }
  }
  for (int64_t l = 0; l < kLanes; ++l) result[l] = acc0[l] + acc1[l];
}

/// 2^|alpha| / alpha! for every multi-index in the same order, built by the same recurrence:
/// multiplying alpha by v_i raises alpha_i by one, so the factor gains 2 / (alpha_i + 1).
inline std::vector<double> taylor_factors(int64_t d, int p, int64_t count) {
  std::vector<double> factor(static_cast<size_t>(count));
  std::vector<int> alpha(static_cast<size_t>(count * d), 0);  // exponents, row per monomial
  std::vector<int64_t> head(static_cast<size_t>(d), 0);
  factor[0] = 1.0;
  int64_t t = 1;
  for (int g = 1; g < p; ++g) {
    const int64_t end = t;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t start = head[static_cast<size_t>(i)];
      head[static_cast<size_t>(i)] = t;
      for (int64_t j = start; j < end; ++j, ++t) {
        for (int64_t k = 0; k < d; ++k) alpha[static_cast<size_t>(t * d + k)] = alpha[static_cast<size_t>(j * d + k)];
        const int ai = ++alpha[static_cast<size_t>(t * d + i)];
        factor[static_cast<size_t>(t)] = factor[static_cast<size_t>(j)] * 2.0 / ai;
      }
    }
  }
  return factor;
}

}  // namespace simkit::detail::cpu
