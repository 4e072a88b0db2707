#pragma once
// l1 (sum |q_i - x_i|) between blocks of rows: a shared-memory 2-D tiled kernel shaped like an
// SGEMM, because l1 has no matrix-product form. The tile policy is a compile-time parameter.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// A CTA computes a BM x BN output tile, stepping over d in slices of BK held in shared memory;
/// each thread owns TM x TN outputs, as two 4-wide groups per dimension half a tile apart, so
/// that its shared-memory reads are 16-byte vectors that neighbouring threads take from
/// consecutive addresses (no bank conflicts).
template <int BM_, int BN_, int BK_, int TM_, int TN_>
struct L1TilePolicy {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int THREADS = (BM / TM) * (BN / TN);
  static constexpr int LOADS = BM * BK / THREADS;  // floats each thread stages per slice, per operand
  static_assert(TM == 8 && TN == 8, "the two-group register layout assumes 8 x 8 per thread");
  static_assert(BM == BN, "one load mapping serves both operands");
  static_assert(LOADS == 4 && BK % 4 == 0, "each thread stages one 4-float vector per operand and slice");
};

/// The chosen tile. Each term costs two FP32 instructions (subtract, add with |.| modifier)
/// against one FFMA in a matrix product, so the kernel is bound by issue rate, not memory:
/// 128 x 128 outputs per CTA reuse every staged float 128 times; 8 x 8 per thread keeps 64
/// accumulators plus 16 operands in registers (<= 128 per thread, held there by the launch
/// bounds, so that 2 CTAs of 256 threads share an SM on sm_80..sm_90); BK = 8 keeps the
/// double-buffered stage at 2 x 2 x 8 x 132 floats = 16.5 KB.
using L1Policy = L1TilePolicy<128, 128, 8, 8, 8>;

template <class P, bool VEC>
__global__ void __launch_bounds__(P::THREADS, 2)
    l1_tile_kernel(const float* __restrict__ Q, int64_t ldq, const float* __restrict__ X, int64_t ldx,
                   float* __restrict__ out, int64_t ldo, int64_t m, int64_t n, int64_t d) {
  constexpr int BM = P::BM, BN = P::BN, BK = P::BK;
  constexpr int PAD = 4;  // keeps the transposed stores of the two k-halves in different banks
  __shared__ __align__(16) float As[2][BK][BM + PAD];
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];

  const int tid = threadIdx.x;
  const int tx = tid % (BN / P::TN), ty = tid / (BN / P::TN);
  const int64_t i0 = int64_t(blockIdx.y) * BM, j0 = int64_t(blockIdx.x) * BN;

  // Staging map: thread -> (row, 4 consecutive k).
  const int lrow = tid / (BK / 4);
  const int lk = (tid % (BK / 4)) * 4;
  const int64_t qi = i0 + lrow, xj = j0 + lrow;

  float ra[4], rb[4];
  auto load = [&](int64_t k0) {
    const int64_t k = k0 + lk;
    if (VEC && qi < m && k + 3 < d) {
      const float4 v = *reinterpret_cast<const float4*>(Q + qi * ldq + k);
      ra[0] = v.x, ra[1] = v.y, ra[2] = v.z, ra[3] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) ra[e] = (qi < m && k + e < d) ? Q[qi * ldq + k + e] : 0.f;
    }
    if (VEC && xj < n && k + 3 < d) {
      const float4 v = *reinterpret_cast<const float4*>(X + xj * ldx + k);
      rb[0] = v.x, rb[1] = v.y, rb[2] = v.z, rb[3] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) rb[e] = (xj < n && k + e < d) ? X[xj * ldx + k + e] : 0.f;
    }
  };
  // Zero padding beyond d adds |0 - 0| = 0: no masking needed in the inner loop.
  auto store = [&](int buf) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      As[buf][lk + e][lrow] = ra[e];
      Bs[buf][lk + e][lrow] = rb[e];
    }
  };

  float acc[8][8];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[r][c] = 0.f;

  const int64_t slices = (d + BK - 1) / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int64_t s = 0; s < slices; ++s) {
    const int cur = int(s & 1);
    if (s + 1 < slices) load((s + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][k][BM / 2 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][k][BN / 2 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] += fabsf(a[r] - b[c]);
    }
    if (s + 1 < slices) store(cur ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int64_t i = i0 + (r < 4 ? ty * 4 + r : BM / 2 + ty * 4 + (r - 4));
    if (i >= m) continue;
    float* row = out + i * ldo;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int64_t j = j0 + (c < 4 ? tx * 4 + c : BN / 2 + tx * 4 + (c - 4));
      if (j < n) row[j] = acc[r][c];
    }
  }
}

}  // namespace simkit::detail::cuda
