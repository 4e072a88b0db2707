// A build without CUDA: the inverted-file family has no GPU searchers. backend_for() never picks the GPU
// there, so these are reached only by a direct call, which is refused.

#include <simkit/error.hpp>

#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail::cuda {

namespace {
[[noreturn]] void refuse() { throw Error(ErrorCode::unsupported, "this build of simkit has no CUDA backend"); }
}  // namespace

void ivf_flat_search(const Context&, const IvfSearchArgs&) { refuse(); }
void ivf_pq_search(const Context&, const IvfPqSearchArgs&) { refuse(); }

}  // namespace simkit::detail::cuda
