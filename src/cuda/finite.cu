// The non-finite scan: one pass over device memory, 16-byte loads where aligned, any NaN or
// Inf raising a flag. flag_non_finite only enqueues it (the caller reads the flag when it next
// synchronises); CudaBackend::all_finite reads it back at once.
#include <cstdint>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/resources.hpp"
#include "cuda/rows.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ bool bad(float x) { return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u; }

__global__ void __launch_bounds__(kBlock) finite_kernel(const float* p, int64_t count, bool vec, int* flag) {
  const int64_t stride = int64_t(gridDim.x) * kBlock;
  const int64_t t = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  bool any = false;
  int64_t done = 0;
  if (vec) {
    const int64_t quads = count / 4;
    const float4* p4 = reinterpret_cast<const float4*>(p);
    for (int64_t i = t; i < quads; i += stride) {
      const float4 v = __ldg(p4 + i);
      any |= bad(v.x) | bad(v.y) | bad(v.z) | bad(v.w);
    }
    done = quads * 4;
  }
  for (int64_t i = done + t; i < count; i += stride) any |= bad(p[i]);
  if (__any_sync(0xffffffffu, any) && threadIdx.x % 32 == 0) *flag = 1;
}

}  // namespace

void flag_non_finite(const float* p, int64_t count, int* flag, int multiprocessors, cudaStream_t s) {
  if (count <= 0) return;
  const bool vec = reinterpret_cast<uintptr_t>(p) % 16 == 0;
  const int64_t want = (count / (vec ? 4 : 1) + kBlock - 1) / kBlock;
  const int64_t cap = int64_t(multiprocessors) * 8;
  const int grid = int(want < cap ? (want > 0 ? want : 1) : cap);
  finite_kernel<<<grid, kBlock, 0, s>>>(p, count, vec, flag);
  check_launch("finite_kernel");
}

bool CudaBackend::all_finite(const Context& ctx, MatrixView<const float> m) const {
  const int64_t count = m.rows * m.cols;
  if (count <= 0) return true;
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  r.arena.reserve(Carver::alignment, SIZE_MAX);
  int* flag = static_cast<int*>(r.arena.data());
  check_cuda(cudaMemsetAsync(flag, 0, sizeof(int), s), "cudaMemsetAsync");
  flag_non_finite(m.data, count, flag, r.multiprocessors, s);
  return call.finish_reading(flag) == 0;
}

}  // namespace simkit::detail::cuda
