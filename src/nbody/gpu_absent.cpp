// A build without CUDA has no GPU n-body searcher: the GPU is never chosen (backend_for refuses
// it first), and a direct call is refused here.

#include <simkit/error.hpp>

#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cuda {

void nbody_direct(const Context&, const NbodyArgs&) {
  throw Error(ErrorCode::unsupported, "nbody: this simkit was built without CUDA");
}

}  // namespace simkit::detail::cuda
