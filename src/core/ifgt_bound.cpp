// The sup of delta_p(a, b) = (2ab)^p / p! exp(-(a - b)^2) over the box [0, A] x [0, B].
//
// In logs, f(a, b) = p ln(2ab) - ln p! - (a - b)^2. For fixed a, f is concave in b (a concave
// log plus a concave parabola) with its maximum where p / b = 2 (b - a), i.e. at
// b*(a) = (a + sqrt(a^2 + 2p)) / 2; symmetrically in a. An interior maximum of the box would need
// both p / a = 2 (a - b) > 0 and p / b = 2 (b - a) > 0, which cannot hold together, and f -> -inf
// on the edges a = 0 and b = 0; so the sup lies on the edge a = A or the edge b = B, where the
// concave one-variable problem is solved by clamping the stationary point into the edge.

#include "core/ifgt_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace simkit::detail {

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

double farthest_in_box(const double* c, const double* lo, const double* hi, int64_t d) {
  double s = 0;
  for (int64_t e = 0; e < d; ++e) {
    const double t = std::max(std::fabs(c[e] - lo[e]), std::fabs(c[e] - hi[e]));
    s += t * t;
  }
  return std::sqrt(s);
}

int smallest_order(const std::vector<double>& A, const std::vector<double>& B, double target, int max_p) {
  // T_p(A, B) falls with p once p exceeds 2AB-ish, but not before; so each cluster raises the
  // common p until its own bound holds, and the clusters already passed are re-checked at the
  // end (a larger p can, at small p, give a larger bound).
  int p = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < A.size(); ++k)
      while (truncation_bound(p, A[k], B[k]) > target) {
        if (++p > max_p) return 0;
        changed = true;
      }
  }
  return p;
}

double clusters_truncation_bound(int p, const std::vector<double>& A, const std::vector<double>& B) {
  double t = 0;
  for (size_t k = 0; k < A.size(); ++k) t = std::max(t, truncation_bound(p, A[k], B[k]));
  return t;
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

}  // namespace simkit::detail
