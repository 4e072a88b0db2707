#include "cuda/cuda_backend.hpp"

namespace simkit::detail {

const Backend* cuda_backend() {
  static const cuda::CudaBackend backend;
  return &backend;
}

}  // namespace simkit::detail
