#include <simkit/error.hpp>
#include <simkit/knn.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/tree_knn.hpp"
#include "core/validate.hpp"

namespace simkit {

void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids, KnnMethod method) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  SIMKIT_EXPECTS(k >= 1, invalid_argument, "k must be at least 1, got ", k);
  SIMKIT_EXPECTS(k <= X.rows, invalid_argument, "k = ", k, " exceeds the base size n = ", X.rows);
  detail::check_output_shape(values, Q.rows, k, "values");
  detail::check_output_shape(ids, Q.rows, k, "ids");
  const detail::MetricPlan plan = detail::plan_metric(metric);
  // Host data is checked before the device is resolved, so bad input fails with its own
  // message alone (no "running on the CPU" notice ahead of it).
  detail::check_host_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const detail::Backend& backend = detail::backend_for(ctx, {Q.where, X.where, values.where, ids.where});
  detail::check_device_finite(ctx, {{Q, "queries"}, {X, "base"}});
  const bool on_cpu = backend.device() == Device::cpu;
  if (method == KnnMethod::tree) {
    const char* why = detail::tree_refusal(metric, X.cols);
    SIMKIT_EXPECTS(*why == '\0', unsupported, "knn: ", why, " (use method brute)");
    SIMKIT_EXPECTS(on_cpu, unsupported,
                   "knn: the tree runs on the CPU in this version (use --device cpu, or "
                   "method brute on the GPU)");
  }
  if (method == KnnMethod::tree ||
      (method == KnnMethod::automatic && on_cpu && tree_knn_is_faster(ctx, Q.rows, X.rows, X.cols, metric)))
    detail::tree_knn(ctx, Q, X, k, plan, values, ids);
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

}  // namespace simkit
