#include <simkit/error.hpp>
#include <simkit/knn.hpp>

#include <string>

#include "backend.hpp"
#include "validate.hpp"

namespace simkit {

void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  if (k < 1) throw Error(ErrorCode::invalid_argument, "k must be at least 1, got " + std::to_string(k));
  if (k > X.rows)
    throw Error(ErrorCode::invalid_argument,
                "k = " + std::to_string(k) + " exceeds the base size n = " + std::to_string(X.rows));
  detail::check_output_shape(values, Q.rows, k, "values");
  detail::check_output_shape(ids, Q.rows, k, "ids");
  // Host data is checked before the device is resolved, so bad input fails with its own
  // message alone (no "running on the CPU" notice ahead of it).
  if (Q.where == Memory::host) detail::check_finite(ctx, Q, "queries");
  if (X.where == Memory::host) detail::check_finite(ctx, X, "base");
  const Device dev = resolve_device(ctx);
  const bool any_on_device = Q.where == Memory::device || X.where == Memory::device || values.where == Memory::device ||
                             ids.where == Memory::device;
  if (dev == Device::cpu && any_on_device)
    throw Error(ErrorCode::invalid_argument, "the CPU backend needs host memory; pass host views or use the GPU");
  if (Q.where == Memory::device) detail::check_finite(ctx, Q, "queries");
  if (X.where == Memory::device) detail::check_finite(ctx, X, "base");
  if (dev == Device::gpu)
    detail::cuda::knn(ctx, Q, X, k, metric, values, ids);
  else
    detail::cpu::knn(ctx, Q, X, k, metric, values, ids);
}

KnnResult knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric) {
  // Validate k before allocating m x k outputs from it.
  if (k < 1 || k > X.rows) {
    MatrixView<float> none;
    knn(ctx, Q, X, k, metric, none, MatrixView<int64_t>{});
  }
  KnnResult r{Matrix<float>(Q.rows, k), Matrix<int64_t>(Q.rows, k)};
  knn(ctx, Q, X, k, metric, r.values.view(), r.ids.view());
  return r;
}

}  // namespace simkit
