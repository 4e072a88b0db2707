#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/tree.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/parallel.hpp"
#include "core/shards.hpp"
#include "core/tree_knn.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace {

/// knn's checks of its arguments and inputs; the backend the call runs on.
const detail::Backend& checked_backend(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X,
                                       int64_t k, MatrixView<float> values, MatrixView<int64_t> ids) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  SIMKIT_EXPECTS(k >= 1, invalid_argument, "k must be at least 1, got ", k);
  SIMKIT_EXPECTS(k <= X.rows, invalid_argument, "k = ", k, " exceeds the base size n = ", X.rows);
  detail::check_output_shape(values, Q.rows, k, "values");
  detail::check_output_shape(ids, Q.rows, k, "ids");
  // Host data is checked before the device is resolved, so bad input fails with its own
  // message alone (no "running on the CPU" notice ahead of it).
  detail::check_host_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const detail::Backend& backend = detail::backend_for(ctx, {Q.where, X.where, values.where, ids.where});
  detail::check_device_finite(ctx, {{Q, "queries"}, {X, "base"}});
  return backend;
}

}  // namespace

void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids, KnnMethod method) {
  const detail::Backend& backend = checked_backend(ctx, Q, X, k, values, ids);
  if (const std::vector<Context> shards = detail::gpu_shard_contexts(ctx, {Q.where, X.where, values.where, ids.where});
      !shards.empty()) {
    if (method == KnnMethod::tree) {  // refused here, not on every shard
      const char* why = detail::tree_refusal(metric, X.cols, k, Device::gpu);
      SIMKIT_EXPECTS(*why == '\0', unsupported, "knn: ", why, " (use method brute)");
    }
    detail::knn_over_shards(shards, Q, X, k, metric, values, ids, method, detail::cpu_threads(ctx));
    if (ctx.progress) ctx.progress(1.0);
    return;
  }
  const detail::MetricPlan plan = detail::plan_metric(metric);
  const Device device = backend.device();
  const char* why = detail::tree_refusal(metric, X.cols, k, device);
  if (method == KnnMethod::tree) SIMKIT_EXPECTS(*why == '\0', unsupported, "knn: ", why, " (use method brute)");
  Context on = ctx;
  on.device = device;
  if (method == KnnMethod::tree ||
      (method == KnnMethod::automatic && *why == '\0' && tree_knn_is_faster(on, Q.rows, X.rows, X.cols, metric)))
    detail::tree_knn(ctx, device, Q, X, k, plan, values, ids, TreeOptions{});
  else
    backend.knn(ctx, detail::KnnArgs{Q, X, k, plan, values, ids});
}

KnnResult knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
              KnnMethod method) {
  // Validate k before allocating m x k outputs from it.
  if (k < 1 || k > X.rows) {
    MatrixView<float> none;
    knn(ctx, Q, X, k, metric, none, MatrixView<int64_t>{}, method);
  }
  KnnResult r{Matrix<float>(Q.rows, k), Matrix<int64_t>(Q.rows, k)};
  knn(ctx, Q, X, k, metric, r.values.view(), r.ids.view(), method);
  return r;
}

TreeReport knn_tree(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
                    MatrixView<float> values, MatrixView<int64_t> ids, const TreeOptions& options) {
  const detail::Backend& backend = checked_backend(ctx, Q, X, k, values, ids);
  const char* why = detail::tree_refusal(metric, X.cols, k, backend.device());
  SIMKIT_EXPECTS(*why == '\0', unsupported, "knn_tree: ", why, " (use knn with method brute)");
  return detail::tree_knn(ctx, backend.device(), Q, X, k, detail::plan_metric(metric), values, ids, options);
}

}  // namespace simkit
