// The direct sum on the GPU, after GPU Gems 3 ch. 31 (Nyland, Harris, Prins): a thread per
// target, a block of kThreads targets; the sources pass through shared memory kThreads at a
// time as float4 (x, y, z, mass), and every thread runs the whole tile against its target from
// there -- each source is read from memory once per block instead of once per target, and the
// inner loop is ~20 floating-point operations per pair around one rsqrtf.
//
// Tile choice: 256 threads, the inner loop unrolled by 8. To be measured against 128 and 512
// and unroll 4 / 16 by `simkit bench nbody` (interactions per second at N = 2^18 .. 2^20); GPU
// Gems found 256 with unrolling 4 best on the G80.
//
// Accuracy: float32 throughout (the sum per target is sequential over the sources), rsqrtf's
// relative error is 2 ulp; a pair at distance zero contributes nothing (nbody.hpp).

#include <cuda_runtime.h>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 8;

__global__ void __launch_bounds__(kThreads)
    direct_kernel(const float* __restrict__ targets, int64_t m, int64_t stride, const float4* __restrict__ sources,
                  int64_t n, float eps2, float G, float* __restrict__ accel, float* __restrict__ potential) {
  __shared__ float4 tile[kThreads];
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  float x = 0, y = 0, z = 0;
  if (i < m) x = targets[i * stride], y = targets[i * stride + 1], z = targets[i * stride + 2];
  float ax = 0, ay = 0, az = 0, p = 0;
  for (int64_t j0 = 0; j0 < n; j0 += kThreads) {
    const int64_t j = j0 + threadIdx.x;
    // Padding sources have mass 0 at the target's own point: they contribute nothing.
    tile[threadIdx.x] = j < n ? sources[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
#pragma unroll kUnroll
    for (int k = 0; k < kThreads; ++k) {
      const float4 s = tile[k];
      const float dx = s.x - x, dy = s.y - y, dz = s.z - z;
      const float d2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
      const float inv = d2 > 0.f ? rsqrtf(d2 + eps2) : 0.f;
      const float w = s.w * inv;
      const float w3 = w * inv * inv;
      ax = fmaf(w3, dx, ax), ay = fmaf(w3, dy, ay), az = fmaf(w3, dz, az);
      p += w;
    }
    __syncthreads();
  }
  if (i < m) {
    accel[i * 3] = G * ax, accel[i * 3 + 1] = G * ay, accel[i * 3 + 2] = G * az;
    if (potential) potential[i] = -G * p;
  }
}

/// A device buffer for one call, on the call's stream.
struct Scratch {
  void* p = nullptr;
  cudaStream_t s;
  Scratch(size_t bytes, cudaStream_t stream) : s(stream) {
    if (bytes > 0) check_cuda(cudaMallocAsync(&p, bytes, s), "cudaMallocAsync");
  }
  ~Scratch() {
    if (p) cudaFreeAsync(p, s);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace

void nbody_direct(const Context& ctx, const NbodyArgs& a) {
  Call call(ctx);
  const cudaStream_t s = call.stream();
  const size_t target_bytes = size_t(a.m * a.target_stride) * 4, source_bytes = size_t(a.n) * 16;
  const bool accel_host = a.accel.where == Memory::host;
  const bool phi_host = !a.potential.empty() && a.potential.where == Memory::host;
  Scratch targets(target_bytes, s), sources(source_bytes, s);
  Scratch accel(accel_host ? size_t(a.m) * 12 : 0, s), phi(phi_host ? size_t(a.m) * 4 : 0, s);
  check_cuda(cudaMemcpyAsync(targets.p, a.targets, target_bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(sources.p, a.sources, source_bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  float* accel_d = accel_host ? static_cast<float*>(accel.p) : a.accel.data;
  float* phi_d = a.potential.empty() ? nullptr : (phi_host ? static_cast<float*>(phi.p) : a.potential.data);
  const unsigned blocks = unsigned((a.m + kThreads - 1) / kThreads);
  direct_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(targets.p), a.m, a.target_stride,
                                            static_cast<const float4*>(sources.p), a.n,
                                            float(a.softening * a.softening), float(a.G), accel_d, phi_d);
  check_launch("nbody direct_kernel");
  if (accel_host)
    check_cuda(cudaMemcpyAsync(a.accel.data, accel_d, size_t(a.m) * 12, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  if (phi_host)
    check_cuda(cudaMemcpyAsync(a.potential.data, phi_d, size_t(a.m) * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  call.finish();
}

}  // namespace simkit::detail::cuda
