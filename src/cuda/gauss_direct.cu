// PLACEHOLDER while the fused GPU kernel is written (issue #3): refuses, so that everything links.
#include <simkit/error.hpp>

#include "core/backend.hpp"

namespace simkit::detail::cuda {

void gauss_direct(const Context&, MatrixView<const float>, const double*, MatrixView<const float>, double,
                  MatrixView<double>) {
  throw Error(ErrorCode::unsupported, "the GPU Gauss transform is not built yet");
}

}  // namespace simkit::detail::cuda
