// A build without CUDA has no GPU point tree: the GPU is never chosen (backend_for refuses it
// first), and a call that reaches here is refused.

#include <simkit/error.hpp>

#include "spatial/gpu_tree.hpp"

namespace simkit::detail::spatial::gpu {

WalkReport tree_knn(const Context&, MatrixView<const float>, MatrixView<const float>, int64_t, const MetricPlan&,
                    MatrixView<float>, MatrixView<int64_t>, int) {
  throw Error(ErrorCode::unsupported, "knn: this simkit was built without CUDA");
}

RadiusResult tree_radius(const Context&, MatrixView<const float>, MatrixView<const float>, double, const MetricPlan&,
                         int64_t, int, WalkReport*) {
  throw Error(ErrorCode::unsupported, "radius_search: this simkit was built without CUDA");
}

}  // namespace simkit::detail::spatial::gpu
