// PLACEHOLDER until the GPU ivf_pq scan lands (issue 17).
#include <simkit/error.hpp>

#include "cuda/cuda_backend.hpp"

namespace simkit::detail::cuda {

void CudaBackend::ivf_pq_search(const Context&, const IvfPqSearchArgs&) const {
  throw Error(ErrorCode::invalid_argument, "ivf_pq search on the GPU is not built yet");
}

}  // namespace simkit::detail::cuda
