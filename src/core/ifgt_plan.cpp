// The IFGT's plan: cut-off r, clusters (K and their centres) and order p.
//
// r comes from eps alone: E_r = exp(-(r / h)^2) <= eps' (eps' = 0.99 eps, ifgt_plan.hpp), the
// smallest such r. Then K and p are searched together, as in the seed's Algorithm 1 but with
// measured cluster radii instead of the estimate rx = K^(-1/d):
//
//   * farthest-point clustering runs over a fixed sample of at most kSampleSources sources and
//     grows one centre at a time, so for each k the sample's clustering is known exactly;
//   * each cluster's centre is then moved to the midpoint of its sample members' bounding box
//     where that shrinks its radius (Gonzalez's centres are data points, often at the edge of
//     their cluster: one cluster over the unit cube has radius ~1.7 from a corner point and
//     0.87 from the middle, and the order p needed grows with the radius);
//   * per cluster, A_k = rx_k / h and B_k = min(r + rx_k, f_k) / h (ifgt_bound.hpp), and the
//     smallest p with every T_p(A_k, B_k) <= eps' is the candidate's order.
//
// Each candidate (k, p) is priced by the cost model of the device that will run it, in seconds,
// next to the direct sum on the same device; the cheapest wins, and `auto` compares it with
// direct. nb(k), the mean number of clusters within reach of a target, is counted on up to 256
// sample targets. Candidates are every k up to 32, then k growing by 8% (the cost changes
// slowly in k there). The search stops when the work that grows with k (assigning sources to
// centres, range tests) alone exceeds the best plan, or when the search's own predicted time
// passes kSearchBudget of the best plan's, accepting that a larger k might still be slightly
// cheaper so that planning stays a small part of the transform.
//
// The sample's radii can only underestimate the full data's; the transform assigns every
// source to its nearest centre, measures the exact radii and settles p and the bound
// (finalize_ifgt), so the guarantee never rests on the sample.
//
// CPU cost model: operations (a coordinate difference, square and add are 3, an exp is 20, a
// monomial 1 and its use in a sum 2) at kCpuOpsPerThread per second (one thread's time, so that
// the plan does not depend on the thread count):
//   assignment   3 n k d
//   coefficients n (3d + 20 + 3P)
//   evaluation   m (3 k d + nb (3d + 20 + 3P))
//   direct       m n (3d + 20)
// Calibration, measured on the 2-core x86-64-v3 build machine (uniform data, N = M = 65,536,
// h = 0.3 d, eps = 1e-6): the IFGT ran its predicted operations at 22-32 G/s for d = 3..8 and
// the direct sum (cpu/gauss_direct.cpp) at 27-40 G/s.
//
// GPU cost model (seconds), from the H100 measurements in bench/results/: the direct sum at
// 2.9e12 pairs/s at d = 1 falling to 1.24e12 at d = 8 (gauss_direct.cu). The IFGT's terms were
// fitted to its traced phases (SIMKIT_IFGT_TRACE, 2026-11-23, N = M = 65,536 at d = 3..8 and
// 10^6 at d = 3): ~1 ms of fixed host work (checks, sample, plan, tables, launches), the
// coefficient kernel at 1.0-2.5e-12 s per source x coefficient (~3.3e-13 d), the evaluation
// at 3e-13 s per target x coefficient x cluster in reach once the chip is full, and 1.75 ns
// per point of host weights and results crossing PCIe (which the direct sum pays as well).

#include "core/ifgt_plan.hpp"

#include <simkit/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/ifgt_bound.hpp"
#include "core/ifgt_cluster.hpp"

namespace simkit::detail {

namespace {

constexpr double kSearchBudget = 0.1;
constexpr double kGiveUpBudget = 0.05;
constexpr double kCpuOpsPerThread = 1.3e10;
// The search itself is scalar float64 code: measured 4.4e9 of its operations per second on the
// build machine (8.9 ms for the 20,000-point d = 3 plan).
constexpr double kPlanOpsPerSecond = 4e9;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0, double e = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
  return buf;
}

/// Predicted seconds for the direct sum and for one IFGT candidate on a device.
struct CostModel {
  Device device;
  double n, m, d;

  // Per thread: both methods spread over all threads alike, and a plan that depended on the
  // thread count would make results depend on it too.
  double cpu_seconds(double ops) const { return ops / kCpuOpsPerThread; }

  double direct() const {
    if (device == Device::cpu) return cpu_seconds(m * n * (3 * d + 20));
    return 2e-5 + host_traffic() + n * m * (2.8e-13 + 0.66e-13 * d);
  }
  /// GPU: host weights checked and uploaded, host results downloaded (both methods).
  double host_traffic() const { return 1.75e-9 * (n + m); }
  /// The part of a candidate's cost that grows with k alone (assignment and range tests).
  double per_centre(double k) const {
    if (device == Device::cpu) return cpu_seconds(3 * (n + m) * k * d);
    return 1.5e-14 * (n + m) * k * d;
  }
  double ifgt(double k, double P, double nb) const {
    if (device == Device::cpu)
      return per_centre(k) + cpu_seconds(n * (3 * d + 20 + 3 * P) + m * nb * (3 * d + 20 + 3 * P));
    // One thread per target: below ~2.7e5 targets the chip is not full and the evaluation's
    // time stops falling with m.
    const double occupancy = std::max(1.0, 2.7e5 / m);
    return 1e-3 + host_traffic() + per_centre(k) + 3.3e-13 * d * n * P + 3e-13 * m * nb * P * occupancy;
  }
  /// The search's own work (host, one thread) in the same units.
  double planning(double ops) const { return ops / kPlanOpsPerSecond; }
};

/// Centres for the first k farthest-point centres of the sample: per cluster the better (smaller
/// radius) of the Gonzalez centre and the midpoint of its members' bounding box; radius[c] is
/// the largest distance of a sample member to the centre kept.
void settle_centres(const FarthestPointClustering& fp, const std::vector<double>& x, int64_t S, int64_t d,
                    std::vector<double>& centres, std::vector<double>& radius) {
  const int64_t k = fp.centres();
  const std::vector<int32_t>& label = fp.labels();
  const std::vector<double>& dist2 = fp.dist2();
  std::vector<double> lo(static_cast<size_t>(k * d), std::numeric_limits<double>::infinity());
  std::vector<double> hi(static_cast<size_t>(k * d), -std::numeric_limits<double>::infinity());
  std::vector<double> own2(static_cast<size_t>(k), 0.0), mid2(static_cast<size_t>(k), 0.0);
  for (int64_t i = 0; i < S; ++i) {
    const auto c = static_cast<size_t>(label[static_cast<size_t>(i)]);
    own2[c] = std::max(own2[c], dist2[static_cast<size_t>(i)]);
    for (int64_t e = 0; e < d; ++e) {
      const double v = x[static_cast<size_t>(i * d + e)];
      lo[c * d + e] = std::min(lo[c * d + e], v);
      hi[c * d + e] = std::max(hi[c * d + e], v);
    }
  }
  std::vector<double> mid(static_cast<size_t>(k * d));
  for (size_t t = 0; t < mid.size(); ++t) mid[t] = 0.5 * (lo[t] + hi[t]);
  for (int64_t i = 0; i < S; ++i) {
    const auto c = static_cast<size_t>(label[static_cast<size_t>(i)]);
    double s = 0;
    for (int64_t e = 0; e < d; ++e) {
      const double t = x[static_cast<size_t>(i * d + e)] - mid[c * d + e];
      s += t * t;
    }
    mid2[c] = std::max(mid2[c], s);
  }
  centres.resize(static_cast<size_t>(k * d));
  radius.resize(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) {
    const auto cu = static_cast<size_t>(c);
    const bool use_mid = mid2[cu] < own2[cu];
    const double* src = use_mid ? mid.data() + c * d : x.data() + fp.centre_ids()[cu] * d;
    std::copy(src, src + d, centres.begin() + c * d);
    radius[cu] = std::sqrt(use_mid ? mid2[cu] : own2[cu]);
  }
}

/// A_k and B_k (ifgt_bound.hpp) for centres with the given radii. Returns whether any target
/// can lie beyond a cluster's reach r + rx_k, i.e. whether the cut-off's E_r enters the bound.
bool box_extents(const std::vector<double>& centres, const std::vector<double>& radius, const IfgtChoice& plan,
                 int64_t d, double h, std::vector<double>& A, std::vector<double>& B) {
  const size_t k = radius.size();
  A.resize(k);
  B.resize(k);
  bool cut = false;
  for (size_t c = 0; c < k; ++c) {
    const double far =
        farthest_in_box(centres.data() + c * static_cast<size_t>(d), plan.box_lo.data(), plan.box_hi.data(), d);
    A[c] = radius[c] / h;
    B[c] = std::min(plan.cutoff_radius + radius[c], far) / h;
    cut = cut || far > plan.cutoff_radius + radius[c];
  }
  return cut;
}

/// The bound for order p: the truncation's, and E_r where a cluster can be skipped.
double error_bound(int p, const std::vector<double>& A, const std::vector<double>& B, bool cut, double r_over_h) {
  return std::max(clusters_truncation_bound(p, A, B), cut ? cutoff_bound(r_over_h) : 0.0);
}

bool within_limits(int64_t d, int p, int64_t k) {
  const int64_t P = monomial_count(d, p);
  return P <= kIfgtMaxMonomials && P <= kIfgtMaxCoefficients / k;
}

}  // namespace

std::vector<double> sample_rows(MatrixView<const float> M, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count * M.cols));
  for (int64_t s = 0; s < count; ++s) {
    const float* row = M.data + (s * M.rows / count) * M.cols;
    std::copy(row, row + M.cols, out.begin() + s * M.cols);
  }
  return out;
}

void bounding_box(MatrixView<const float> M, std::vector<double>& lo, std::vector<double>& hi) {
  const auto d = static_cast<size_t>(M.cols);
  std::vector<float> l(d, std::numeric_limits<float>::infinity()), u(d, -std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < M.rows; ++j) {
    const float* row = M.data + j * M.cols;
    for (size_t e = 0; e < d; ++e) {
      l[e] = std::min(l[e], row[e]);
      u[e] = std::max(u[e], row[e]);
    }
  }
  lo.assign(l.begin(), l.end());
  hi.assign(u.begin(), u.end());
}

IfgtSample ifgt_sample(MatrixView<const float> X, MatrixView<const float> Y) {
  IfgtSample s;
  s.n = X.rows, s.m = Y.rows, s.d = X.cols;
  s.x = sample_rows(X, ifgt_sample_rows(X.rows, true));
  s.y = sample_rows(Y, ifgt_sample_rows(Y.rows, false));
  bounding_box(Y, s.lo, s.hi);
  return s;
}

IfgtChoice plan_ifgt(const Context& ctx, Device device, const IfgtSample& sample, double h,
                     const GaussOptions& options) {
  const int64_t n = sample.n, m = sample.m, d = sample.d;
  const double eps = options.eps;
  const CostModel cost{device, double(n), double(m), double(d)};
  IfgtChoice best;
  best.direct_cost = cost.direct();
  best.ifgt_cost = std::numeric_limits<double>::infinity();
  auto refuse = [&](std::string why) {
    best.feasible = false;
    best.ifgt_cost = 0;
    best.why = std::move(why);
    return best;
  };
  if (eps < kIfgtMinEps)
    return refuse(
        fmt("eps = %.3g is below %.0e, where floating-point rounding in the expansions is no longer "
            "negligible",
            eps, kIfgtMinEps));
  if (device == Device::gpu && d > kIfgtMaxGpuDims)
    return refuse(
        fmt("the GPU IFGT is built for d <= %.0f (here d = %.0f); beyond that its expansions are larger "
            "than the direct sum's work",
            double(kIfgtMaxGpuDims), double(d)));
  const int64_t limit = ifgt_cluster_limit(n);
  if (options.ifgt_clusters < 0 || options.ifgt_clusters > std::min(n, kIfgtMaxClusters))
    throw Error(ErrorCode::invalid_argument, "IFGT clusters must lie in [1, " +
                                                 std::to_string(std::min(n, kIfgtMaxClusters)) + "], got " +
                                                 std::to_string(options.ifgt_clusters));
  if (options.ifgt_order < 0 || options.ifgt_order > kIfgtMaxOrder)
    throw Error(ErrorCode::invalid_argument, "IFGT order p must lie in [1, " + std::to_string(kIfgtMaxOrder) +
                                                 "], got " + std::to_string(options.ifgt_order));
  best.target = kIfgtEpsShare * eps;
  best.cutoff_radius = h * std::sqrt(std::log(1.0 / best.target));
  best.fixed_order = options.ifgt_order > 0;

  best.box_lo = sample.lo;
  best.box_hi = sample.hi;
  const std::vector<double>& x = sample.x;
  const std::vector<double>& y = sample.y;
  const int64_t S = static_cast<int64_t>(x.size()) / d, T = static_cast<int64_t>(y.size()) / d;

  const int64_t max_k = options.ifgt_clusters > 0 ? options.ifgt_clusters : std::min(limit, S);
  Context one = ctx;
  one.threads = 1;  // the sample is small: threads would cost more than they save
  FarthestPointClustering fp(one, x.data(), S, d);
  const bool searching_for_auto = options.method == GaussMethod::automatic && options.ifgt_clusters == 0;
  bool gave_up = false;
  double planning_ops = 0, next_candidate = 1, smallest_rx = std::numeric_limits<double>::infinity();
  std::vector<double> centres, radius, A, B;
  for (int64_t k = 1; k <= max_k; ++k) {
    fp.add_centre();
    planning_ops += 3.0 * double(S * d);
    const bool last = k == max_k || fp.radius() == 0 || k == S;
    if (options.ifgt_clusters > 0 && !last) continue;
    if (!(k <= 32 || k >= next_candidate || last)) continue;
    next_candidate = std::max(next_candidate, double(k)) * 1.08;
    settle_centres(fp, x, S, d, centres, radius);
    const bool cut = box_extents(centres, radius, best, d, h, A, B);
    planning_ops += 6.0 * double(S * d) + 3.0 * double(T * k * d) + 40.0 * double(k);
    smallest_rx = *std::max_element(radius.begin(), radius.end());
    int p = options.ifgt_order;
    if (p == 0) p = smallest_order(A, B, best.target, kIfgtMaxOrder);
    if (p > 0 && within_limits(d, p, k)) {
      int64_t in_range = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < k; ++c) {
          double s = 0;
          for (int64_t e = 0; e < d; ++e) {
            const double u = y[static_cast<size_t>(t * d + e)] - centres[static_cast<size_t>(c * d + e)];
            s += u * u;
          }
          const double reach = best.cutoff_radius + radius[static_cast<size_t>(c)];
          in_range += s <= reach * reach;
        }
      const double nb = double(in_range) / double(T);
      const double c = cost.ifgt(double(k), double(monomial_count(d, p)), nb);
      if (c < best.ifgt_cost) {
        best.feasible = true;
        best.ifgt_cost = c;
        best.clusters = k;
        best.order = p;
        best.centres = centres;
        best.error_bound = error_bound(p, A, B, cut, best.cutoff_radius / h);
      }
    }
    if (last) break;
    if (cost.per_centre(double(k)) >= best.ifgt_cost) break;
    if (cost.planning(planning_ops) >= kSearchBudget * best.ifgt_cost) break;
    // `auto` gives up once more centres could only price the IFGT above the direct sum, or once
    // the search, still without a plan, has cost kGiveUpBudget of the direct sum: where no
    // plan is feasible (d = 8, h = 0.5 over 10^6 points), searching to the cluster limit took
    // ~25% of the direct time on the H100 before this cut.
    if (searching_for_auto && (cost.per_centre(double(k)) >= best.direct_cost ||
                               (!best.feasible && cost.planning(planning_ops) >= kGiveUpBudget * best.direct_cost))) {
      gave_up = true;
      break;
    }
  }
  if (!best.feasible && gave_up)
    return refuse(
        fmt("no plan within the search budget: after %.0f clusters the largest cluster radius is still %.3g "
            "(h = %.3g), and a larger search would cost more than it could save over the direct sum",
            double(fp.centres()), smallest_rx, h));
  if (!best.feasible)
    return refuse(
        fmt("h = %.3g needs more than %.0f clusters (after %.0f the largest cluster radius is still "
            "%.3g) or an order p above the limit to meet the error bound",
            h, double(max_k), double(fp.centres()), smallest_rx));
  best.ifgt_cost += cost.planning(planning_ops);
  best.why = fmt("K = %.0f, p = %.0f, r = %.4g", double(best.clusters), best.order, best.cutoff_radius) +
             fmt(", planned bound %.3g (sample of %.0f sources), predicted %.3g s vs direct %.3g s", best.error_bound,
                 double(S), best.ifgt_cost, best.direct_cost);
  return best;
}

IfgtFinal finalize_ifgt(const IfgtChoice& choice, const std::vector<double>& radius, int64_t d, double h) {
  std::vector<double> A, B;
  const bool cut = box_extents(choice.centres, radius, choice, d, h, A, B);
  IfgtFinal fin;
  fin.order = choice.fixed_order ? choice.order : smallest_order(A, B, choice.target, kIfgtMaxOrder);
  const int64_t K = static_cast<int64_t>(radius.size());
  if (fin.order == 0 || !within_limits(d, fin.order, K)) {
    const double rx = *std::max_element(radius.begin(), radius.end());
    throw Error(ErrorCode::invalid_argument,
                fmt("IFGT: with all sources clustered the largest radius is %.4g, and no order p within the limits "
                    "meets the bound (the sample's plan had p = %.0f); use --method direct",
                    rx, choice.order));
  }
  fin.error_bound = error_bound(fin.order, A, B, cut, choice.cutoff_radius / h);
  fin.reach.resize(radius.size());
  for (size_t c = 0; c < radius.size(); ++c) fin.reach[c] = choice.cutoff_radius + radius[c];
  return fin;
}

}  // namespace simkit::detail
