// The direct sum on the GPU, after GPU Gems 3 ch. 31 (Nyland, Harris, Prins): the sources pass
// through shared memory kThreads at a time as float4 (x, y, z, mass), and every thread runs the
// whole tile against its targets from there -- each source is read from memory once per block
// instead of once per target. Two targets per thread (GPU Gems has one): each broadcast read of
// a source from shared memory then serves two pairs, so the loop is the ~13 floating-point
// instructions of a pair around one rsqrtf, not 14 and a shared-memory load.
//
// Tile choice: 256 threads x 2 targets, the inner loop unrolled by 8. One target per thread
// reached 1.17e12 interactions/s (35% of the H200's FP32 peak at 20 flops each) at N = 2^20
// (bench/results/2026-11-26-nbody.md); two, 1.69e12 (50.5%). Below ~2^19 targets there are too
// few blocks for one wave, and the sources are split over blockIdx.y (float64 partials, added
// in a fixed order by finish_kernel).
//
// Accuracy: float32 pairs (pair_force.cuh), summed in float32 over a tile of
// 256 sources and in float64 across tiles, so the rounding error does not grow with N; a pair at
// distance zero contributes nothing (nbody.hpp).

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "nbody/cuda/pair_force.cuh"
#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kTargets = 2;  // per thread: each source read from shared memory serves two pairs
constexpr int kUnroll = 8;

/// Where a block's sums go: straight to the outputs (one source range), or to float64 partials
/// per source range (`split` > 1) that finish_kernel adds in a fixed order.
struct DirectOut {
  float G;
  float* accel;      // m x 3
  float* potential;  // m or null
  double* partial;   // split x m x 4 (ax, ay, az, phi), when split > 1
};

/// kGuard, kPotential: as add_pull (pair_force.cuh).
template <bool kGuard, bool kPotential>
__global__ void __launch_bounds__(kThreads)
    direct_kernel(const float* __restrict__ targets, int64_t m, int64_t stride, const float4* __restrict__ sources,
                  int64_t n, int64_t per_split, float eps2, DirectOut out) {
  __shared__ float4 tile[kThreads];
  const int64_t base = int64_t(blockIdx.x) * kThreads * kTargets + threadIdx.x;
  float x[kTargets], y[kTargets], z[kTargets], ax[kTargets], ay[kTargets], az[kTargets], p[kTargets];
  double sum[kTargets][4] = {};
#pragma unroll
  for (int t = 0; t < kTargets; ++t) {
    const int64_t i = base + t * kThreads;
    x[t] = y[t] = z[t] = 0.f;
    if (i < m) x[t] = targets[i * stride], y[t] = targets[i * stride + 1], z[t] = targets[i * stride + 2];
  }
  const int64_t begin = int64_t(blockIdx.y) * per_split, end = min(n, begin + per_split);
  for (int64_t j0 = begin; j0 < end; j0 += kThreads) {
    const int64_t j = j0 + threadIdx.x;
    // Padding sources have mass 0 at the origin: they add nothing (and no NaN: d2 + eps2 > 0
    // there unless a target sits at the origin without softening, which the guard covers).
    tile[threadIdx.x] = j < end ? sources[j] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int t = 0; t < kTargets; ++t) ax[t] = ay[t] = az[t] = p[t] = 0.f;
    __syncthreads();
#pragma unroll kUnroll
    for (int k = 0; k < kThreads; ++k) {
      const float4 s = tile[k];
#pragma unroll
      for (int t = 0; t < kTargets; ++t) {
        add_pull<kGuard, kPotential>(s, x[t], y[t], z[t], eps2, ax[t], ay[t], az[t], p[t]);
      }
    }
    // The tile's float32 sums into float64: the rounding error stays that of a 256-term sum
    // however many tiles there are (one float32 chain over 2^20 sources erred 2.5e-5).
#pragma unroll
    for (int t = 0; t < kTargets; ++t) sum[t][0] += ax[t], sum[t][1] += ay[t], sum[t][2] += az[t], sum[t][3] += p[t];
    __syncthreads();
  }
#pragma unroll
  for (int t = 0; t < kTargets; ++t) {
    const int64_t i = base + t * kThreads;
    if (i >= m) continue;
    if (gridDim.y > 1) {
      double* at = out.partial + (int64_t(blockIdx.y) * m + i) * 4;
      at[0] = sum[t][0], at[1] = sum[t][1], at[2] = sum[t][2], at[3] = sum[t][3];
      continue;
    }
    out.accel[i * 3] = float(out.G * sum[t][0]), out.accel[i * 3 + 1] = float(out.G * sum[t][1]),
                  out.accel[i * 3 + 2] = float(out.G * sum[t][2]);
    if constexpr (kPotential) out.potential[i] = float(-out.G * sum[t][3]);
  }
}

/// The split source ranges' partial sums, added in range order (the same bits every run).
__global__ void __launch_bounds__(kThreads) finish_kernel(int64_t m, int split, DirectOut out) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= m) return;
  double total[4] = {0, 0, 0, 0};
  for (int k = 0; k < split; ++k)
    for (int c = 0; c < 4; ++c) total[c] += out.partial[(int64_t(k) * m + i) * 4 + c];
  for (int c = 0; c < 3; ++c) out.accel[i * 3 + c] = float(out.G * total[c]);
  if (out.potential) out.potential[i] = float(-out.G * total[3]);
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
  const bool targets_host = a.targets_where == Memory::host && a.targets != a.sources;
  const bool sources_host = a.sources_where == Memory::host;
  const size_t target_bytes = size_t(a.m * a.target_stride) * 4, source_bytes = size_t(a.n) * 16;
  const bool accel_host = a.accel.where == Memory::host;
  const bool phi_host = !a.potential.empty() && a.potential.where == Memory::host;
  const float eps2 = float(a.softening * a.softening);
  const bool potential = !a.potential.empty();
  const auto kernel = potential         ? direct_kernel<true, true>
                      : eps2 >= FLT_MIN ? direct_kernel<false, false>
                                        : direct_kernel<true, false>;
  // Too few target blocks to fill the GPU (N below ~2^19 on an H100): the sources are split into
  // ranges over blockIdx.y, as many as keep one wave of resident blocks.
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0), "cudaOccupancy");
  const int64_t blocks = (a.m + kThreads * kTargets - 1) / (kThreads * kTargets);
  const int64_t tiles = (a.n + kThreads - 1) / kThreads;
  const int64_t wave = int64_t(std::max(per_sm, 1)) * call.r().multiprocessors;
  const int64_t split = std::clamp<int64_t>(wave / blocks, 1, std::min<int64_t>(tiles, 64));
  const int64_t per_split = (tiles + split - 1) / split * kThreads;
  Scratch targets(targets_host ? target_bytes : 0, s), sources(sources_host ? source_bytes : 0, s);
  Scratch accel(accel_host ? size_t(a.m) * 12 : 0, s), phi(phi_host ? size_t(a.m) * 4 : 0, s);
  Scratch partial(split > 1 ? size_t(split * a.m) * 32 : 0, s);
  if (sources_host)
    check_cuda(cudaMemcpyAsync(sources.p, a.sources, source_bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  if (targets_host)
    check_cuda(cudaMemcpyAsync(targets.p, a.targets, target_bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  const float4* sources_d =
      sources_host ? static_cast<const float4*>(sources.p) : reinterpret_cast<const float4*>(a.sources);
  const float* targets_d = a.targets == a.sources ? reinterpret_cast<const float*>(sources_d)
                           : targets_host         ? static_cast<const float*>(targets.p)
                                                  : a.targets;
  DirectOut out;
  out.G = float(a.G);
  out.accel = accel_host ? static_cast<float*>(accel.p) : a.accel.data;
  out.potential = !potential ? nullptr : (phi_host ? static_cast<float*>(phi.p) : a.potential.data);
  out.partial = static_cast<double*>(partial.p);
  kernel<<<dim3(unsigned(blocks), unsigned(split)), kThreads, 0, s>>>(targets_d, a.m, a.target_stride, sources_d, a.n,
                                                                      per_split, eps2, out);
  check_launch("nbody direct_kernel");
  if (split > 1) {
    finish_kernel<<<unsigned((a.m + kThreads - 1) / kThreads), kThreads, 0, s>>>(a.m, int(split), out);
    check_launch("nbody finish_kernel");
  }
  if (accel_host)
    check_cuda(cudaMemcpyAsync(a.accel.data, out.accel, size_t(a.m) * 12, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
  if (phi_host)
    check_cuda(cudaMemcpyAsync(a.potential.data, out.potential, size_t(a.m) * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
  call.finish();
}

}  // namespace simkit::detail::cuda
