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

/// Writes the monomials of v (d values) of total degree < p into out (monomial_count(d, p)
/// values). head: scratch of d values.
inline void graded_monomials(const double* v, int64_t d, int p, int64_t* head, double* out) {
  out[0] = 1.0;
  for (int64_t i = 0; i < d; ++i) head[i] = 0;
  int64_t t = 1;
  for (int g = 1; g < p; ++g) {
    const int64_t end = t;  // one past the last monomial of degree g - 1
    for (int64_t i = 0; i < d; ++i) {
      const int64_t start = head[i];
      head[i] = t;
      const double vi = v[i];
      for (int64_t j = start; j < end; ++j) out[t++] = vi * out[j];
    }
  }
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
