#pragma once
// The fused direct Gauss transform: G(y_j) = sum_i q_i exp(-|y_j - x_i|^2 / h^2) without ever
// forming the m x n matrix.
//
// Each thread keeps T targets' coordinates and sums in registers; the block walks the sources in
// tiles of kTile staged through shared memory, where every thread reads the same source at the
// same time (a broadcast, one 16-byte load feeding T targets). Per pair, for d = 3:
// 3 FADD + 3 FFMA/FMUL for |y - x|^2, 1 FMUL by -log2(e)/h^2, one MUFU.EX2, one FFMA into the
// partial sum: 8 FP32 issue slots and one SFU op, against the SFU's 8 cycles per warp on sm_90.
//
// Accuracy:
//  - The difference y - x is taken in the caller's coordinates, not in coordinates pre-scaled
//    by 1/h: nearby points (the pairs that carry the sum) are then within a factor 2 of each other
//    and their difference is exact (Sterbenz), so the exponent's error is a few ulp of itself
//    whatever the offset of the data from the origin or the size of h. Pre-scaling would cost
//    one FMUL less per pair but an exponent error of ulp(|x| / h), which for data far from the
//    origin or a small h exceeds the 1e-5 promise.
//  - The exponent |y - x|^2 is a float sum of d squares: a relative error of about d/2 ulp,
//    i.e. an absolute error of ~(d/2) 2^-24 |y - x|^2 / h^2 in the exponent. That is the bound
//    that matters when a target's sum is carried by sources many bandwidths away (large d,
//    small h): at |y - x|^2 / h^2 ~ 35 and d = 20, a float simulation of this arithmetic gives 5e-6.
//  - exp via ex2.approx.ftz.f32 (MUFU.EX2, ~2 ulp relative) of the argument pre-multiplied by
//    log2(e): accurate to ~2.4e-7 relative per term.
//  - Weights are rounded to float (0.5 ulp each) when the sources are packed.
//  - Terms are summed in float over chunks of kChunk sources, and each chunk's partial sum is
//    added into a double per target: the float error is bounded by a chunk's length, the
//    double's by n * 2^-53, so the total error does not grow with n in practice.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda::gauss {

constexpr int kThreads = 256;  // threads per block
constexpr int kTile = 256;     // sources per shared-memory tile
constexpr int kChunk = 64;     // sources per float partial sum
constexpr int kMaxRegD = 16;   // largest d whose target coordinates live in registers

/// Floats per packed source: [q, x_0 .. x_{d-1}, zero padding], a whole number of 16-byte
/// vectors (8 bytes for d = 1), so that a source is read with vector loads.
__host__ __device__ constexpr int packed_stride(int d) { return d + 1 <= 2 ? 2 : (d + 1 + 3) / 4 * 4; }

/// How a kernel leaves its sums in `out`.
enum class Store : int {
  assign = 0,  // sole writer of each target
  add = 1,     // sole writer in this launch, adding to an earlier block of sources
  atomic = 2,  // sources split across blockIdx.y: atomicAdd into a zeroed output
};

__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ void store_sum(double* out, double v, Store mode) {
  if (mode == Store::atomic)
    atomicAdd(out, v);
  else if (mode == Store::add)
    *out += v;
  else
    *out = v;
}

/// Packs n sources (X row-major n x d, device) and their weights (device doubles, or all ones
/// when q is null) into rows of packed_stride(d) floats, padding to `rows` >= n with zero
/// weights, whose terms are then exactly zero.
__global__ void pack_sources_kernel(const float* __restrict__ X, const double* __restrict__ q, int64_t n, int d,
                                    int64_t rows, float* __restrict__ packed) {
  const int P = packed_stride(d);
  const int64_t total = rows * P;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / P;
    const int k = int(e - i * P);
    float v = 0.f;
    if (i < n) {
      if (k == 0)
        v = q ? float(q[i]) : 1.f;
      else if (k <= d)
        v = X[i * d + (k - 1)];
    }
    packed[e] = v;
  }
}

/// Y (m x d) -> Yt (d x m), for the wide kernel's coalesced target reads.
__global__ void transpose_targets_kernel(const float* __restrict__ Y, int64_t m, int d, float* __restrict__ Yt) {
  const int64_t total = m * d;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e / m, j = e - k * m;
    Yt[e] = Y[j * d + k];
  }
}

/// D > 0: d = D known at compile time. D = 0: d at run time, at most kMaxRegD.
/// Block (x, y) owns targets [x * kThreads * T, (x + 1) * kThreads * T) and source tiles
/// [y * tiles_per_split, (y + 1) * tiles_per_split) of the packed, tile-padded sources S.
template <int D, int T>
__global__ void __launch_bounds__(kThreads)
    gauss_fused_kernel(const float* __restrict__ Y, int64_t m, int d_runtime, const float* __restrict__ S,
                       int64_t tiles, int64_t tiles_per_split, float neg_scale, double* __restrict__ out, Store mode) {
  constexpr int DM = D > 0 ? D : kMaxRegD;
  constexpr int PM = packed_stride(DM);
  constexpr bool vec4 = PM % 4 == 0;
  const int d = D > 0 ? D : d_runtime;
  const int P = D > 0 ? PM : packed_stride(d_runtime);
  __shared__ __align__(16) float tile[kTile * PM];

  const int tid = threadIdx.x;
  const int64_t j0 = int64_t(blockIdx.x) * kThreads * T + tid;
  float y[T][DM];
  double acc[T];
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const int64_t j = j0 + int64_t(t) * kThreads;
    acc[t] = 0.0;
#pragma unroll
    for (int k = 0; k < DM; ++k) y[t][k] = (j < m && (D > 0 || k < d)) ? Y[j * d + k] : 0.f;
  }

  const int64_t first = int64_t(blockIdx.y) * tiles_per_split;
  const int64_t last = first + tiles_per_split < tiles ? first + tiles_per_split : tiles;
  for (int64_t tt = first; tt < last; ++tt) {
    __syncthreads();  // everyone is done with the previous tile
    {
      const float4* src = reinterpret_cast<const float4*>(S + tt * kTile * P);
      float4* dst = reinterpret_cast<float4*>(tile);
      for (int e = tid; e < kTile * P / 4; e += kThreads) dst[e] = src[e];
    }
    __syncthreads();
    for (int c = 0; c < kTile; c += kChunk) {
      float part[T];
#pragma unroll
      for (int t = 0; t < T; ++t) part[t] = 0.f;
#pragma unroll 4
      for (int s = c; s < c + kChunk; ++s) {
        float xs[PM];
        const float* row = tile + s * P;
        if constexpr (vec4) {
#pragma unroll
          for (int v = 0; v < PM / 4; ++v) {
            float4 w = make_float4(0.f, 0.f, 0.f, 0.f);
            if (D > 0 || 4 * v < P) w = reinterpret_cast<const float4*>(row)[v];
            xs[4 * v] = w.x, xs[4 * v + 1] = w.y, xs[4 * v + 2] = w.z, xs[4 * v + 3] = w.w;
          }
        } else {
          const float2 w = *reinterpret_cast<const float2*>(row);
          xs[0] = w.x, xs[1] = w.y;
        }
#pragma unroll
        for (int t = 0; t < T; ++t) {
          float a = 0.f;
#pragma unroll
          for (int k = 0; k < DM; ++k)
            if (D > 0 || k < d) {
              const float delta = y[t][k] - xs[1 + k];
              a = fmaf(delta, delta, a);
            }
          part[t] = fmaf(xs[0], ex2_approx(a * neg_scale), part[t]);
        }
      }
#pragma unroll
      for (int t = 0; t < T; ++t) acc[t] += double(part[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const int64_t j = j0 + int64_t(t) * kThreads;
    if (j < m) store_sum(out + j, acc[t], mode);
  }
}

/// d > kMaxRegD: one target per thread, its coordinates read from the transposed targets Yt
/// (coalesced, cached) and the sources from global memory (one address per warp: a broadcast).
/// Correct for any d; not tuned, since the direct transform in high d is rarely the tool.
__global__ void __launch_bounds__(kThreads)
    gauss_wide_kernel(const float* __restrict__ Yt, int64_t m, int d, const float* __restrict__ S, int64_t tiles,
                      int64_t tiles_per_split, float neg_scale, double* __restrict__ out, Store mode) {
  const int P = packed_stride(d);
  const int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t jl = j < m ? j : m - 1;  // out-of-range threads compute a copy and do not store
  double acc = 0.0;
  const int64_t first = int64_t(blockIdx.y) * tiles_per_split;
  const int64_t last = first + tiles_per_split < tiles ? first + tiles_per_split : tiles;
  for (int64_t s0 = first * kTile; s0 < last * kTile; s0 += kChunk) {
    float part = 0.f;
    for (int s = 0; s < kChunk; ++s) {
      const float* x = S + (s0 + s) * P;
      float a = 0.f;
      for (int k = 0; k < d; ++k) {
        const float delta = Yt[int64_t(k) * m + jl] - __ldg(x + 1 + k);
        a = fmaf(delta, delta, a);
      }
      part = fmaf(__ldg(x), ex2_approx(a * neg_scale), part);
    }
    acc += double(part);
  }
  if (j < m) store_sum(out + j, acc, mode);
}

}  // namespace simkit::detail::cuda::gauss
