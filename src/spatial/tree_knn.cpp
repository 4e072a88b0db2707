// knn(method = tree) and radius_search: checks, the tree's build, its search (cpu/), and the
// automatic route's thresholds.

#include "core/tree_knn.hpp"

#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/radius.hpp>

#include <cmath>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/validate.hpp"
#include "spatial/tree_search.hpp"

namespace simkit {

namespace detail {

namespace {

/// Rows per leaf. Measured against SciPy's cKDTree (bench/peers/tree_peers.py, 200,000 uniform
/// rows, 20,000 queries, k = 16, 2 threads, queries/s relative to cKDTree's, d = 3 / d = 8):
/// leaves of 8: 0.73 / 0.52; 16: 0.83 / 0.62; 32: 0.89 / 0.79; 64: 0.88 / 0.77 (packets of 32,
/// and of 16 within 0.02 of it).
constexpr int64_t kLeafSize = 32;

}  // namespace

const char* tree_refusal(Metric metric, int64_t d) {
  if (metric != Metric::l2 && metric != Metric::sqeuclidean) return "the tree serves l2 and sqeuclidean";
  if (d > spatial::kMaxDim) return "the tree serves d <= 8";
  return "";
}

void tree_knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
              const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids) {
  const spatial::PointTree tree = spatial::build_point_tree(ctx, X, kLeafSize);
  spatial::cpu::tree_knn(ctx, tree, Q, k, plan, values.data, ids.data);
}

}  // namespace detail

bool tree_knn_is_faster(const Context& ctx, int64_t m, int64_t n, int64_t d, Metric metric) {
  if (*detail::tree_refusal(metric, d) != '\0' || ctx.device == Device::gpu) return false;
  // Where brute force and the tree cross on the CPU (2 threads, uniform points, k = 8 .. 16,
  // knn(method = brute) against knn(method = tree), 2026-11-26, first measurements on a busy
  // machine). d = 3, 2,000 queries: brute / tree 0.86 at n = 512, 1.33 at 2,048, 4.5 at 8,192,
  // 6.9 at 131,072. d = 8: 0.64 - 0.86 up to n = 32,768, 1.44 at 131,072 (dimensions between
  // are taken as 8 until measured). Few queries do not repay the build (~0.4 us a base row
  // against ~3 ns a brute-force pair): d = 3, 100 queries, 20,000 rows: tree 7 ms, brute 31;
  // 200,000 rows: tree 77 ms, brute 65; 1,000 queries there: 122 against 597.
  if (m < 256) return false;
  return d <= 4 ? n >= 4096 : n >= 131072;
}

RadiusResult radius_search(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                           Metric metric, int64_t max_neighbors) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  SIMKIT_EXPECTS(std::isfinite(radius) && radius >= 0, invalid_argument, "radius must be finite and >= 0, got ",
                 radius);
  SIMKIT_EXPECTS(max_neighbors >= 0, invalid_argument, "max_neighbors must be >= 0 (0: no cap), got ", max_neighbors);
  const char* why = detail::tree_refusal(metric, X.cols);
  SIMKIT_EXPECTS(*why == '\0', unsupported, "radius_search: ", why);
  SIMKIT_EXPECTS(Q.where == Memory::host && X.where == Memory::host, unsupported,
                 "radius_search takes host arrays in this version (the tree runs on the CPU)");
  detail::check_host_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const detail::spatial::PointTree tree = detail::spatial::build_point_tree(ctx, X, detail::kLeafSize);
  return detail::spatial::cpu::tree_radius(ctx, tree, Q, radius, detail::plan_metric(metric), max_neighbors);
}

}  // namespace simkit
