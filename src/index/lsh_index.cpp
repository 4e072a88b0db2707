// PLACEHOLDER until the lsh implementation lands (issue 17): refuses to build one.
#include "index/lsh_index.hpp"

#include <simkit/error.hpp>

namespace simkit::detail {

std::string describe_lsh(const LshParams&) { return "lsh"; }
std::unique_ptr<Index> make_lsh_index(int64_t, Metric, const LshParams&) {
  throw Error(ErrorCode::invalid_argument, "lsh is not built yet");
}
std::unique_ptr<Index> load_lsh_index(const IndexFile&, const LshParams&) {
  throw Error(ErrorCode::io, "lsh is not built yet");
}

}  // namespace simkit::detail
