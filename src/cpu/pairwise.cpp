// Placeholder until the CPU backend lands.
#include <simkit/error.hpp>
#include "core/backend.hpp"
namespace simkit::detail::cpu {
void pairwise(const Context&, MatrixView<const float>, MatrixView<const float>, Metric, MatrixView<float>) {
  throw Error(ErrorCode::unsupported, "not yet");
}
void knn(const Context&, MatrixView<const float>, MatrixView<const float>, int64_t, Metric, MatrixView<float>,
         MatrixView<int64_t>) {
  throw Error(ErrorCode::unsupported, "not yet");
}
}  // namespace simkit::detail::cpu
