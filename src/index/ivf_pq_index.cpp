// PLACEHOLDER until the ivf_pq implementation lands (issue 17): refuses to build one.
#include "index/ivf_pq_index.hpp"

#include <simkit/error.hpp>

namespace simkit::detail {

std::string describe_ivf_pq(const IvfPqParams&) { return "ivf_pq"; }
std::unique_ptr<Index> make_ivf_pq_index(int64_t, Metric, const IvfPqParams&) {
  throw Error(ErrorCode::invalid_argument, "ivf_pq is not built yet");
}
std::unique_ptr<Index> load_ivf_pq_index(const IndexFile&, const IvfPqParams&) {
  throw Error(ErrorCode::io, "ivf_pq is not built yet");
}

}  // namespace simkit::detail
