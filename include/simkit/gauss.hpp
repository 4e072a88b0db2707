#pragma once
// The discrete Gauss transform: for every target y_j,
//
//     G(y_j) = sum_i q_i exp(-||y_j - x_i||^2 / h^2)
//
// over n weighted sources x_i (weights q_i) in d dimensions, with bandwidth h. Kernel density
// estimation is this sum with q_i = 1 / n (times the Gaussian normalisation constant).
//
// Two methods:
//   direct  every (target, source) pair, O(m n d); exact up to floating-point rounding. The
//           sums are accumulated so that their error does not grow with n.
//   ifgt    the Improved Fast Gauss Transform: sources clustered (farthest-point k-center),
//           per-cluster truncated Taylor expansions of total degree < p, evaluated only for
//           clusters within the cut-off radius of a target. Parameters (K clusters, order p,
//           cut-off r) are chosen from the requested absolute error `eps`, so that
//           |G_ifgt(y) - G(y)| <= eps * sum_i |q_i| for every target. The bound used is
//           derived in src/core/ifgt_bound.hpp: per cluster, the sup of Lagrange's remainder
//           of exp(2 a.b) over the cluster's radius and the reach of its targets.
//   automatic  ifgt where its predicted cost beats direct on the device that runs it (each
//           backend has its own cost model), else direct.

#include <cstdint>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit {

enum class GaussMethod { direct, ifgt, automatic };

/// "direct", "ifgt", "auto"; throws Error(invalid_argument) otherwise.
GaussMethod parse_gauss_method(const std::string& name);
const char* to_string(GaussMethod method) noexcept;

struct GaussOptions {
  GaussMethod method = GaussMethod::automatic;
  /// ifgt / automatic: the guaranteed absolute error, as a fraction of sum_i |q_i|.
  double eps = 1e-6;
  /// ifgt: fix the number of clusters K and/or the order p instead of choosing them from eps
  /// (0 = choose). With a fixed p the error bound is whatever those parameters give, reported
  /// in GaussReport::error_bound and possibly above eps (the report's note says so); the cut-off
  /// r still comes from eps. For reproducing published runs; leave at 0 otherwise.
  int64_t ifgt_clusters = 0;
  int ifgt_order = 0;
};

/// What a call did, for `--verbose` and the benchmarks.
struct GaussReport {
  GaussMethod method = GaussMethod::direct;  // the method that ran (never automatic)
  int64_t clusters = 0;                      // ifgt: K
  int order = 0;                             // ifgt: p (monomials of total degree < p)
  double cutoff_radius = 0;                  // ifgt: r, in the units of the data
  double error_bound = 0;                    // ifgt: the bound on |error| / sum|q| that holds
  std::string note;                          // e.g. why automatic chose direct
};

/// G(y_j) for every row of Y (m x d), from sources X (n x d), weights q (n values, or empty for
/// all ones) and bandwidth h > 0; out must hold m values. Sources, targets and out may each be
/// on the host or (GPU backend) on the device; q is on the host.
/// Throws Error(invalid_argument) on empty sets, a dimension mismatch, q of the wrong length,
/// h <= 0 or non-finite, eps outside (0, 1), or NaN/Inf in any input.
GaussReport gauss_transform(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                            MatrixView<const float> Y, double h, MatrixView<double> out,
                            const GaussOptions& options = {});

/// Bandwidth rules of Gaussian kernel density estimation, density(y) = sum_i w_i N(y; x_i,
/// sigma^2 I) (the Gauss transform with h = sqrt(2) sigma, times (2 pi sigma^2)^(-d/2)). With s
/// the mean over dimensions of the sample standard deviation of X (n - 1 in the denominator,
/// unweighted, in float64):
///   scott      sigma = n^(-1/(d+4)) s
///   silverman  sigma = (4/(d+2))^(1/(d+4)) n^(-1/(d+4)) s
enum class BandwidthRule { scott, silverman };

/// "scott" or "silverman"; throws Error(invalid_argument) otherwise.
BandwidthRule parse_bandwidth_rule(const std::string& name);

/// sigma by `rule` for the n x d host rows of X. Throws Error(invalid_argument) when n < 2 or
/// the rows have no spread (s = 0).
double kde_bandwidth(MatrixView<const float> X, BandwidthRule rule);

/// Convenience form returning the m values.
std::vector<double> gauss_transform(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                                    MatrixView<const float> Y, double h, const GaussOptions& options = {},
                                    GaussReport* report = nullptr);

}  // namespace simkit
