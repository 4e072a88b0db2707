// A build without CUDA has no GPU n-body searcher: the GPU is never chosen (backend_for refuses
// it first), and a call that reaches here is refused.

#include <simkit/error.hpp>

#include "nbody/nbody_direct.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit::detail::cuda {

void nbody_direct(const Context&, const NbodyArgs&) {
  throw Error(ErrorCode::unsupported, "nbody: this simkit was built without CUDA");
}

int64_t first_invalid_value(const Context&, const float*, int64_t, int64_t, bool) {
  throw Error(ErrorCode::unsupported, "nbody: this simkit was built without CUDA");
}

NbodyReport nbody_barnes_hut(const Context&, const NbodyArgs&, double, ArrayView<int64_t>) {
  throw Error(ErrorCode::unsupported, "nbody: this simkit was built without CUDA");
}

}  // namespace simkit::detail::cuda
