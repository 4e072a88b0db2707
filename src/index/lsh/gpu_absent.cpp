// A build without CUDA: the lsh family has no GPU searchers. backend_for() never picks the GPU
// there, so these are reached only by a direct call, which is refused.

#include <simkit/error.hpp>

#include "index/lsh/lsh_searchers.hpp"

namespace simkit::detail::cuda {

namespace {
[[noreturn]] void refuse() { throw Error(ErrorCode::unsupported, "this build of simkit has no CUDA backend"); }
}  // namespace

void lsh_search(const Context&, const LshSearchArgs&) { refuse(); }

}  // namespace simkit::detail::cuda
