// The automatic choice of the IFGT's parameters: cut-off r, number of clusters K and order p.
//
// r comes from eps alone: E_r = exp(-(r / h)^2) <= eps' (eps' = 0.99 eps, ifgt_params.hpp), the
// smallest such r. Then K and p are searched together, as in the seed's Algorithm 1 but with
// the real cluster radii instead of the estimate rx = K^(-1/d): the farthest-point clustering
// grows one centre at a time and after k centres its radius rx(k) is exact, so for each k the
// smallest p with T_p(rx(k) / h, (r + rx(k)) / h) <= eps' is known (ifgt_bound.hpp). Each
// feasible (k, p) is priced in the same units as the direct sum (operations: a coordinate
// difference, square and add are 3, an exp is 20, a monomial 1 and its use in a sum 2):
//
//   clustering   3 n k d                       (the transform rebuilds the clustering)
//   coefficients n (3d + 20 + 3P)              (distance, exp, monomials, accumulation)
//   evaluation   m (3 k d + nb(k) (3d + 20 + 3P))   (range test against every centre, and
//                                                    the expansions of nb clusters in range)
//   direct       m n (3d + 20)
//
// with P = C(p - 1 + d, d) and nb(k) the mean number of centres within r + rx(k) of a target,
// counted on a fixed sample of up to 256 targets (an overestimate: each cluster's own radius,
// which the transform uses, is at most rx(k)). The cheapest (k, p) wins. No k past the point
// where the clustering alone costs more than the best total found can win; the search stops
// well before that, once its own clustering work passes 5% of the best plan's predicted cost
// (kSearchBudget), accepting that a larger k might still be slightly cheaper so that planning
// stays a small part of the transform (at N = M = 1e5, d = 3, h = 0.5 the full search to
// k = 4096 took 0.72 s against a 0.3 s transform; with the budget it takes 0.06-0.1 s).
// Candidates are every k up to 32, then k growing by 8% (the cost changes slowly in k there).
//
// Calibration, measured on the 2-core x86-64-v3 build machine (uniform data, N = M = 65,536,
// h = 0.3 d, eps = 1e-6): the IFGT ran its predicted operations at 22-32 G/s for d = 3..8 and
// the direct sum (cpu/gauss_direct.cpp) at 27-40 G/s, so the two costs compare within ~1.5x
// and `auto` picked the faster one in each case (IFGT 0.10 s vs direct 3.6 s at d = 3; at
// d = 7 and 8 the IFGT's predicted cost exceeds the direct one, and it was indeed slower).

#include <simkit/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cpu/ifgt_bound.hpp"
#include "cpu/ifgt_cluster.hpp"
#include "cpu/ifgt_params.hpp"
#include "cpu/parallel.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kSampleTargets = 256;
constexpr double kSearchBudget = 0.05;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// The smallest p within the limits with T_p <= target, or 0.
int smallest_order(int64_t d, int64_t k, double A, double B, double target) {
  for (int p = 1; p <= kIfgtMaxOrder; ++p) {
    const int64_t P = monomial_count(d, p);
    if (P > kIfgtMaxMonomials || P > kIfgtMaxCoefficients / k) return 0;
    if (truncation_bound(p, A, B) <= target) return p;
  }
  return 0;
}

}  // namespace

IfgtChoice choose_ifgt(const Context& ctx, MatrixView<const float> X, const double* /*q*/, MatrixView<const float> Y,
                       double h, double eps) {
  const int64_t n = X.rows, m = Y.rows, d = X.cols;
  const double nd = static_cast<double>(n), md = static_cast<double>(m), dd = static_cast<double>(d);
  IfgtChoice best;
  best.direct_cost = md * nd * (3 * dd + 20);
  best.ifgt_cost = std::numeric_limits<double>::infinity();
  if (eps < kIfgtMinEps) {
    best.why = fmt("eps = %.3g is below %.0e, where floating-point rounding in the expansions is no longer negligible",
                   eps, kIfgtMinEps);
    return best;
  }
  const double target = kIfgtEpsShare * eps;
  const double r = h * std::sqrt(std::log(1.0 / target));

  std::vector<double> x, y_sample;
  translate_bad_alloc("IFGT parameter search", [&] { x = widen_rows(X); });
  const int64_t S = std::min(m, kSampleTargets);
  y_sample.resize(static_cast<size_t>(S * d));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t k = 0; k < d; ++k) y_sample[static_cast<size_t>(s * d + k)] = Y(s * m / S, k);

  const int64_t limit = ifgt_cluster_limit(n);
  FarthestPointClustering clustering(ctx, x.data(), n, d);
  // Distance from each sample target to each centre, appended as centres are added.
  std::vector<double> sample_dist(static_cast<size_t>(S * limit));
  double next_candidate = 1;
  double best_rx = 0;
  double smallest_rx = std::numeric_limits<double>::infinity();
  for (int64_t k = 1; k <= limit; ++k) {
    clustering.add_centre();
    const double* c = x.data() + clustering.centre_ids().back() * d;
    for (int64_t s = 0; s < S; ++s) {
      double t2 = 0;
      for (int64_t e = 0; e < d; ++e) {
        const double t = y_sample[static_cast<size_t>(s * d + e)] - c[e];
        t2 += t * t;
      }
      sample_dist[static_cast<size_t>(s * limit + k - 1)] = std::sqrt(t2);
    }
    const double rx = clustering.radius();
    smallest_rx = rx;
    const double cluster_cost = 3 * nd * static_cast<double>(k) * dd;
    if (cluster_cost >= kSearchBudget * best.ifgt_cost) break;
    const bool last = (k == limit || rx == 0);
    if (k <= 32 || k >= next_candidate || last) {
      next_candidate = std::max(next_candidate, static_cast<double>(k)) * 1.08;
      const int p = smallest_order(d, k, rx / h, (r + rx) / h, target);
      if (p > 0) {
        const double reach = r + rx;
        int64_t in_range = 0;
        for (int64_t s = 0; s < S; ++s)
          for (int64_t j = 0; j < k; ++j) in_range += sample_dist[static_cast<size_t>(s * limit + j)] <= reach;
        const double nb = static_cast<double>(in_range) / static_cast<double>(S);
        const double P = static_cast<double>(monomial_count(d, p));
        const double cost = cluster_cost + nd * (3 * dd + 20 + 3 * P) +
                            md * (3 * static_cast<double>(k) * dd + nb * (3 * dd + 20 + 3 * P));
        if (cost < best.ifgt_cost) {
          best.feasible = true;
          best.ifgt_cost = cost;
          best.clusters = k;
          best.order = p;
          best_rx = rx;
        }
      }
    }
    if (last) break;
  }

  best.cutoff_radius = r;
  if (!best.feasible) {
    best.ifgt_cost = 0;
    best.why =
        fmt("h = %.3g needs more than %.0f clusters (after %.0f the largest cluster radius is still %.3g) or "
            "an order p above the limit to meet the error bound",
            h, static_cast<double>(limit), static_cast<double>(clustering.centres()), smallest_rx);
    return best;
  }
  best.error_bound = ifgt_error_bound(best.order, best_rx, r, h);
  best.why =
      fmt("K = %.0f, p = %.0f, r = %.4g, largest cluster radius %.4g", static_cast<double>(best.clusters), best.order,
          r, best_rx) +
      fmt(", bound %.3g, predicted cost %.3g vs direct %.3g", best.error_bound, best.ifgt_cost, best.direct_cost);
  return best;
}

}  // namespace simkit::detail::cpu
