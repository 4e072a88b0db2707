// The bandwidth rules of kernel density estimation (gauss.hpp), shared by `simkit kde` and the
// Python package's simkit.kde.

#include <cmath>
#include <string>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

namespace simkit {

BandwidthRule parse_bandwidth_rule(const std::string& name) {
  if (name == "scott") return BandwidthRule::scott;
  if (name == "silverman") return BandwidthRule::silverman;
  throw Error(ErrorCode::invalid_argument, "bandwidth rule must be scott or silverman, got " + simkit::quoted(name));
}

double kde_bandwidth(MatrixView<const float> X, BandwidthRule rule) {
  const int64_t n = X.rows, d = X.cols;
  const char* name = rule == BandwidthRule::scott ? "scott" : "silverman";
  if (n < 2 || d < 1)
    throw Error(ErrorCode::invalid_argument, std::string("bandwidth ") + name + " needs at least 2 rows of data");
  // The mean over dimensions of the sample standard deviation, the mean subtracted first.
  double total = 0;
  for (int64_t k = 0; k < d; ++k) {
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += X(i, k);
    mean /= double(n);
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += (X(i, k) - mean) * (X(i, k) - mean);
    total += std::sqrt(ss / double(n - 1));
  }
  const double s = total / double(d);
  if (!(s > 0))
    throw Error(ErrorCode::invalid_argument,
                std::string("bandwidth ") + name + ": the data has zero spread; give sigma instead");
  const double shrink = std::pow(double(n), -1.0 / double(d + 4));
  if (rule == BandwidthRule::scott) return shrink * s;
  return std::pow(4.0 / double(d + 2), 1.0 / double(d + 4)) * shrink * s;
}

}  // namespace simkit
