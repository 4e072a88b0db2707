#include <simkit/error.hpp>
#include <simkit/pairwise.hpp>

#include "backend.hpp"
#include "validate.hpp"

namespace simkit {

void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out) {
  detail::check_points(Q, "queries");
  detail::check_points(X, "base");
  detail::check_same_dim(Q, X);
  detail::check_output_shape(out, Q.rows, X.rows, "output");
  // Host data is checked here, before the device is resolved (so bad input fails with its
  // own message alone); device-resident inputs are checked by the CUDA backend inside its own
  // passes (src/cuda/pairwise.cpp).
  if (Q.where == Memory::host) detail::check_finite(ctx, Q, "queries");
  if (X.where == Memory::host) detail::check_finite(ctx, X, "base");
  const Device dev = resolve_device(ctx);
  const bool any_on_device = Q.where == Memory::device || X.where == Memory::device || out.where == Memory::device;
  if (dev == Device::cpu && any_on_device)
    throw Error(ErrorCode::invalid_argument, "the CPU backend needs host memory; pass host views or use the GPU");
  if (dev == Device::gpu)
    detail::cuda::pairwise(ctx, Q, X, metric, out);
  else
    detail::cpu::pairwise(ctx, Q, X, metric, out);
}

Matrix<float> pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric) {
  Matrix<float> out(Q.rows, X.rows);
  pairwise(ctx, Q, X, metric, out.view());
  return out;
}

}  // namespace simkit
