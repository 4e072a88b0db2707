// knn(method = tree) and radius_search: checks, the tree's build, its search (cpu/), and the
// automatic route's thresholds.

#include "core/tree_knn.hpp"

#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/radius.hpp>
#include <simkit/tree.hpp>

#include <chrono>
#include <cmath>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/validate.hpp"
#include "spatial/gpu_tree.hpp"
#include "spatial/tree_search.hpp"

namespace simkit {

namespace detail {

const char* tree_refusal(Metric metric, int64_t d, int64_t k, Device device) {
  if (metric != Metric::l2 && metric != Metric::sqeuclidean) return "the tree serves l2 and sqeuclidean";
  if (d > spatial::kMaxDim) return "the tree serves d <= 8";
  if (device == Device::gpu && k > spatial::gpu::kMaxK) return "the GPU tree serves k <= 128";
  return "";
}

namespace {

/// The packet size the options ask for, checked against what `device` takes.
int64_t packet_of(const TreeOptions& o, Device device) {
  const int64_t p = o.packet != 0 ? o.packet : device == Device::gpu ? spatial::gpu::kPacket : spatial::cpu::kPacket;
  if (device == Device::gpu)
    SIMKIT_EXPECTS(p >= 1 && p <= 32 && (p & (p - 1)) == 0, invalid_argument,
                   "tree packet on the GPU: a power of two from 1 to 32 (lanes of a warp), got ", p);
  else
    SIMKIT_EXPECTS(p >= 1 && p <= 64, invalid_argument, "tree packet on the CPU: 1 to 64 queries, got ", p);
  return p;
}

TreeReport report_of(const spatial::gpu::WalkReport& w) {
  TreeReport r;
  r.packets = w.packets, r.node_visits = w.node_visits, r.leaf_visits = w.leaf_visits;
  r.leaf_lanes = w.leaf_lanes, r.pairs = w.pairs;
  r.build_seconds = w.build_ms / 1e3, r.search_seconds = w.search_ms / 1e3;
  return r;
}

TreeReport report_of(const spatial::cpu::TreeSearchStats& s, double build, double search) {
  TreeReport r;
  r.packets = s.packets, r.node_visits = s.node_visits, r.pairs = s.pairs;
  r.build_seconds = build, r.search_seconds = search;
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TreeReport tree_knn(const Context& ctx, Device device, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                    const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids,
                    const TreeOptions& options) {
  const int64_t packet = packet_of(options, device);
  if (device == Device::gpu) return report_of(spatial::gpu::tree_knn(ctx, Q, X, k, plan, values, ids, int(packet)));
  const auto start = std::chrono::steady_clock::now();
  const spatial::PointTree tree = spatial::build_point_tree(ctx, X, spatial::kLeafSize);
  const double build = seconds_since(start);
  const auto walk = std::chrono::steady_clock::now();
  const spatial::cpu::TreeSearchStats s = spatial::cpu::tree_knn(ctx, tree, Q, k, plan, values.data, ids.data, packet);
  return report_of(s, build, seconds_since(walk));
}

}  // namespace detail

bool tree_knn_is_faster(const Context& ctx, int64_t m, int64_t n, int64_t d, Metric metric) {
  if (*detail::tree_refusal(metric, d) != '\0') return false;
  // Few queries do not repay the build on either backend (a fixed cost of a launch sequence on
  // the GPU, ~0.4 us a base row on the CPU).
  if (m < 256) return false;
  if (ctx.device == Device::gpu) {
    // Where brute force and the tree cross on the GPU (bench tree --crossover, uniform points,
    // 20,000 queries, k = 16, device-resident, 2026-11-26; brute / tree time, H200 then H100;
    // bench/results/2026-11-26-h200-tree-*.csv). d = 3: 2.0 / 2.0 at n = 1,024, 1.8 / 1.8 at
    // 4,096, 7.3 / 8.0 at 262,144, 54 / 59 at 4,194,304; d = 5: 1.7 / 1.7 at 1,024, 1.05 / 1.1
    // at 4,096, 0.94 / 1.0 at 16,384, 1.14 / 1.2 at 65,536, 2.2 / 2.4 at 262,144; d = 8: 1.4 /
    // 1.4 at 1,024, then 0.3 - 0.9 from 4,096 to 1,048,576, 1.6 / 1.8 at 4,194,304 (and 27 at
    // 10,000,000 rows with 1,000,000 queries, where the walk fills the GPU). The tree from n =
    // 1,024 for d <= 3, from 65,536 for d = 4, 5 (the dip at 16,384 is 6%), from 2^22 beyond
    // (dimensions 6 and 7 taken as 8 until measured).
    return d <= 3 ? n >= 1024 : d <= 5 ? n >= 65536 : n >= (int64_t(1) << 22);
  }
  // Where brute force and the tree cross on the CPU (2 threads, bench tree --crossover --m 2000,
  // uniform points, k = 16, packets of 64, 2026-11-26, a busy machine; brute / tree time): d = 3:
  // 9.7 at n = 1,024, 6.4 at 4,096, 25 at 65,536, 56 at 262,144; d = 8: 1.1 at 1,024, 1.5 at
  // 4,096, 2.7 at 16,384, 5.8 at 65,536. With the float32 prefilter the tree wins from the
  // smallest sizes in every dimension it serves (before it, d = 8 needed 131,072 rows).
  return n >= 1024;
}

RadiusResult radius_search(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                           Metric metric, int64_t max_neighbors, const TreeOptions& options, TreeReport* report) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  SIMKIT_EXPECTS(std::isfinite(radius) && radius >= 0, invalid_argument, "radius must be finite and >= 0, got ",
                 radius);
  SIMKIT_EXPECTS(max_neighbors >= 0, invalid_argument, "max_neighbors must be >= 0 (0: no cap), got ", max_neighbors);
  const char* why = detail::tree_refusal(metric, X.cols);
  SIMKIT_EXPECTS(*why == '\0', unsupported, "radius_search: ", why);
  detail::check_host_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const Device device = detail::backend_for(ctx, {Q.where, X.where}).device();
  detail::check_device_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const int64_t packet = detail::packet_of(options, device);
  const detail::MetricPlan plan = detail::plan_metric(metric);
  if (device == Device::gpu) {
    detail::spatial::gpu::WalkReport w;
    RadiusResult r = detail::spatial::gpu::tree_radius(ctx, Q, X, radius, plan, max_neighbors, int(packet), &w);
    if (report) *report = detail::report_of(w);
    return r;
  }
  const auto start = std::chrono::steady_clock::now();
  const detail::spatial::PointTree tree = detail::spatial::build_point_tree(ctx, X, detail::spatial::kLeafSize);
  const double build = detail::seconds_since(start);
  const auto walk = std::chrono::steady_clock::now();
  detail::spatial::cpu::TreeSearchStats walked;
  RadiusResult r =
      detail::spatial::cpu::tree_radius(ctx, tree, Q, radius, plan, max_neighbors, packet, nullptr, &walked);
  if (report) *report = detail::report_of(walked, build, detail::seconds_since(walk));
  return r;
}

RadiusResult radius_search(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                           Metric metric, int64_t max_neighbors) {
  return radius_search(ctx, Q, X, radius, metric, max_neighbors, TreeOptions{});
}

}  // namespace simkit
