#include "cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include "cuda/check.hpp"

namespace simkit::detail {

namespace cuda {

void CudaBackend::copy_to_device(const Context& ctx, void* dst, const void* src, size_t bytes) const {
  DeviceGuard guard(ctx.gpu_id);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

void CudaBackend::copy_to_host(const Context& ctx, void* dst, const void* src, size_t bytes) const {
  DeviceGuard guard(ctx.gpu_id);
  check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace cuda

const Backend* cuda_backend() {
  static const cuda::CudaBackend backend;
  return &backend;
}

}  // namespace simkit::detail
