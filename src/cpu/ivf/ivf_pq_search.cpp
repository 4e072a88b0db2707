// PLACEHOLDER until the CPU ivf_pq scan lands (issue 17).
#include <simkit/error.hpp>

#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

void CpuBackend::ivf_pq_search(const Context&, const IvfPqSearchArgs&) const {
  throw Error(ErrorCode::invalid_argument, "ivf_pq search is not built yet");
}

}  // namespace simkit::detail::cpu
