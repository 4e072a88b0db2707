#include <simkit/error.hpp>
#include <simkit/pairwise.hpp>

#include "core/backend.hpp"
#include "core/validate.hpp"

namespace simkit {

void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  detail::check_output_shape(out, Q.rows, X.rows, "output");
  const detail::MetricPlan plan = detail::plan_metric(metric);
  // Host data is checked here, before the device is resolved (so bad input fails with its
  // own message alone); device-resident inputs are checked by the CUDA backend inside its own
  // passes (src/cuda/pairwise.cpp).
  detail::check_host_finite(ctx, {{Q, "queries"}, {X, "base"}});
  detail::backend_for(ctx, {Q.where, X.where, out.where}).pairwise(ctx, detail::PairwiseArgs{Q, X, plan, out});
}

Matrix<float> pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric) {
  Matrix<float> out(Q.rows, X.rows);
  pairwise(ctx, Q, X, metric, out.view());
  return out;
}

}  // namespace simkit
