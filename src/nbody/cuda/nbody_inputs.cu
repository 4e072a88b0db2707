// The n-body inputs that live on the device, checked there: the first non-finite value, or
// negative mass, found by one pass of atomicMin over flat positions, so the error names the same
// row and column as the host check does (nbody.cpp) without copying the rows down.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) first_invalid_kernel(const float* __restrict__ rows, int64_t count,
                                                               int64_t cols, bool masses, unsigned long long* first) {
  const int64_t total = count * cols;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < total; i += int64_t(gridDim.x) * kBlock) {
    const float v = rows[i];
    if (!isfinite(v) || (masses && i % cols == 3 && v < 0.f)) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;  // a later value of this thread cannot come first
    }
  }
}

}  // namespace

int64_t first_invalid_value(const Context& ctx, const float* rows, int64_t count, int64_t cols, bool masses) {
  Call call(ctx);
  const cudaStream_t s = call.stream();
  Resources& r = call.r();
  r.arena.reserve(Carver::round(8), working_budget(ctx, r));
  Carver carve(r.arena);
  auto* first = carve.take<unsigned long long>(1);
  check_cuda(cudaMemsetAsync(first, 0xff, 8, s), "cudaMemsetAsync");
  const int64_t blocks = std::min<int64_t>((count * cols + kBlock - 1) / kBlock, int64_t(r.multiprocessors) * 8);
  first_invalid_kernel<<<unsigned(std::max<int64_t>(blocks, 1)), kBlock, 0, s>>>(rows, count, cols, masses, first);
  check_launch("nbody first_invalid_kernel");
  unsigned long long host = 0;
  check_cuda(cudaMemcpyAsync(&host, first, 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  call.finish();
  return host == ~0ull ? -1 : int64_t(host);
}

}  // namespace simkit::detail::cuda
