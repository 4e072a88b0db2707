// The sup of delta_p(a, b) = (2ab)^p / p! exp(-(a - b)^2) over the box [0, A] x [0, B].
//
// In logs, f(a, b) = p ln(2ab) - ln p! - (a - b)^2. For fixed a, f is concave in b (a concave
// log plus a concave parabola) with its maximum where p / b = 2 (b - a), i.e. at
// b*(a) = (a + sqrt(a^2 + 2p)) / 2; symmetrically in a. An interior maximum of the box would need
// both p / a = 2 (a - b) > 0 and p / b = 2 (b - a) > 0, which cannot hold together, and f -> -inf
// on the edges a = 0 and b = 0; so the sup lies on the edge a = A or the edge b = B, where the
// concave one-variable problem is solved by clamping the stationary point into the edge.

#include "cpu/ifgt_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace simkit::detail::cpu {

namespace {

/// log delta_p(a, b) for a, b > 0.
double log_delta(int p, double a, double b) {
  return p * std::log(2.0 * a * b) - std::lgamma(p + 1.0) - (a - b) * (a - b);
}

/// The maximiser over s in (0, S] of the concave p ln s - (t - s)^2.
double edge_argmax(int p, double t, double S) { return std::min(S, 0.5 * (t + std::sqrt(t * t + 2.0 * p))); }

}  // namespace

double truncation_bound(int p, double A, double B) {
  if (A <= 0 || B <= 0) return 0.0;  // every term's remainder vanishes (p >= 1)
  const double on_a_edge = log_delta(p, A, edge_argmax(p, A, B));
  const double on_b_edge = log_delta(p, edge_argmax(p, B, A), B);
  return std::exp(std::max(on_a_edge, on_b_edge));
}

double cutoff_bound(double r_over_h) { return std::exp(-r_over_h * r_over_h); }

double ifgt_error_bound(int p, double rx, double r, double h) {
  return std::max(truncation_bound(p, rx / h, (r + rx) / h), cutoff_bound(r / h));
}

int64_t monomial_count(int64_t d, int p) {
  // C(p - 1 + d, d) = prod_{k=1..p-1} (d + k) / k, exact at each step since the running product
  // is C(d + k, k).
  constexpr int64_t kCap = std::numeric_limits<int64_t>::max() / 2;
  int64_t c = 1;
  for (int k = 1; k < p; ++k) {
    if (c > kCap / (d + k)) return kCap;
    c = c * (d + k) / k;
  }
  return c;
}

}  // namespace simkit::detail::cpu
