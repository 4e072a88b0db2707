// The fused TF32 candidate pass of k-means (kmeans_kernels.hpp). A block takes BM points and
// walks every centroid in tiles of BN: the BM x BN products come from WMMA 16x16x8 TF32
// fragments (operands rounded to nearest on their way into shared memory, the point's
// translation subtracted there too), land in shared memory once per tile, and each point's
// threads fold them into a running list of its kNearestCandidates smallest keys
// a_j + b s_j. Only the lists leave the block: the n x k product never exists.
//
// Tile policy, chosen on the H100 (bench/results/2026-11-24-h100-kmeans.md): 128 x 128 block
// tile, 8 warps as 2 x 4 (64 x 32 each: 4 x 2 fragments, 64 accumulator registers per thread),
// d in steps of 32. The product tile (66 KiB) reuses the operand tiles' shared memory, so two
// blocks fit an SM; the operands are re-read from L2 for each centroid tile.
#include <mma.h>

#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/kmeans/kmeans_kernels.hpp"
#include "cuda/kmeans/shortlist.cuh"

namespace simkit::detail::cuda {

namespace {

using namespace nvcuda;

template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_>
struct CandidatePolicy {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // a warp's tile
  static constexpr int FM = WM / 16, FN = WN / 16;            // its 16 x 16 fragments
  static constexpr int LDK = BK + 4;                          // operand rows, padded (16-byte multiple)
  static constexpr int LDS = BN + 4;                          // product rows, padded
  static constexpr int kThreadsPerRow = kThreads / BM;        // threads folding one point's keys
  static constexpr size_t kOperandBytes = size_t(BM + BN) * LDK * sizeof(float);
  static constexpr size_t kProductBytes = size_t(BM) * LDS * sizeof(float);
  static constexpr size_t kSmemBytes = kOperandBytes > kProductBytes ? kOperandBytes : kProductBytes;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 8 == 0, "WMMA TF32 fragments are 16 x 16 x 8");
  static_assert(kThreads % BM == 0 && 32 % kThreadsPerRow == 0, "a point's threads share a warp");
};

using Policy = CandidatePolicy<128, 128, 32, 2, 4>;
constexpr int M = kNearestCandidates;

template <class P, bool kTranslate>
__global__ void __launch_bounds__(P::kThreads, 2)
    candidates_kernel(const float* __restrict__ X, int64_t n, int d, const float* __restrict__ t,
                      const float* __restrict__ V, const float* __restrict__ A, float b, int k,
                      int32_t* __restrict__ cand, float* __restrict__ worst) {
  extern __shared__ __align__(128) unsigned char smem[];
  float* As = reinterpret_cast<float*>(smem);  // BM x LDK: points (tf32)
  float* Bs = As + P::BM * P::LDK;             // BN x LDK: centroid operands (tf32)
  float* S = reinterpret_cast<float*>(smem);   // BM x LDS: products, after the operands are done
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / P::WARPS_N, wn = warp % P::WARPS_N;
  const int64_t row0 = int64_t(blockIdx.x) * P::BM;
  const int my_row = tid / P::kThreadsPerRow, my_part = tid % P::kThreadsPerRow;
  Shortlist list;
  list.clear();

  for (int n0 = 0; n0 < k; n0 += P::BN) {
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[P::FM][P::FN];
#pragma unroll
    for (int i = 0; i < P::FM; ++i)
#pragma unroll
      for (int j = 0; j < P::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < d; k0 += P::BK) {
      __syncthreads();  // the previous tile's readers are done
      for (int e = tid; e < P::BM * P::BK; e += P::kThreads) {
        const int r = e / P::BK, c = e % P::BK;
        const int64_t gr = row0 + r;
        const int gc = k0 + c;
        float v = 0.0f;
        if (gr < n && gc < d) {
          v = X[gr * d + gc];
          if constexpr (kTranslate) v -= t[gc];
        }
        As[r * P::LDK + c] = wmma::__float_to_tf32(v);
      }
      for (int e = tid; e < P::BN * P::BK; e += P::kThreads) {
        const int r = e / P::BK, c = e % P::BK;
        const int gr = n0 + r, gc = k0 + c;
        Bs[r * P::LDK + c] = (gr < k && gc < d) ? wmma::__float_to_tf32(V[int64_t(gr) * d + gc]) : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < P::BK; kk += 8) {
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb[P::FN];
#pragma unroll
        for (int j = 0; j < P::FN; ++j) wmma::load_matrix_sync(fb[j], Bs + (wn * P::WN + j * 16) * P::LDK + kk, P::LDK);
#pragma unroll
        for (int i = 0; i < P::FM; ++i) {
          wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
          wmma::load_matrix_sync(fa, As + (wm * P::WM + i * 16) * P::LDK + kk, P::LDK);
#pragma unroll
          for (int j = 0; j < P::FN; ++j) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
        }
      }
    }
    __syncthreads();  // the operands are no longer read: the products take their place
#pragma unroll
    for (int i = 0; i < P::FM; ++i)
#pragma unroll
      for (int j = 0; j < P::FN; ++j)
        wmma::store_matrix_sync(S + (wm * P::WM + i * 16) * P::LDS + wn * P::WN + j * 16, acc[i][j], P::LDS,
                                wmma::mem_row_major);
    __syncthreads();
    const float* srow = S + my_row * P::LDS;
    const int cols = min(P::BN, k - n0);
    for (int c = my_part; c < cols; c += P::kThreadsPerRow) {
      const int j = n0 + c;
      const float key = (A ? A[j] : 0.0f) + b * srow[c];
      if (list.wants(key, j)) list.offer(key, j);
    }
  }

  // The threads of a point are adjacent lanes: merge their lists by exchange.
#pragma unroll
  for (int o = 1; o < P::kThreadsPerRow; o <<= 1) {
    float pk[M];
    int pi[M];
#pragma unroll
    for (int q = 0; q < M; ++q) {
      pk[q] = __shfl_xor_sync(0xffffffffu, list.key[q], o);
      pi[q] = __shfl_xor_sync(0xffffffffu, list.id[q], o);
    }
#pragma unroll
    for (int q = 0; q < M; ++q)
      if (pi[q] >= 0 && list.wants(pk[q], pi[q])) list.offer(pk[q], pi[q]);
  }
  const int64_t row = row0 + my_row;
  if (my_part == 0 && row < n) {
#pragma unroll
    for (int q = 0; q < M; ++q) cand[row * M + q] = list.id[q];
    worst[row] = list.key[M - 1];
  }
}

template <bool kTranslate>
void launch(const float* X, int64_t n, int64_t d, const NearestCentroids& c, int32_t* cand, float* worst,
            cudaStream_t stream) {
  auto kernel = candidates_kernel<Policy, kTranslate>;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Policy::kSmemBytes)),
             "cudaFuncSetAttribute");
  const int64_t blocks = (n + Policy::BM - 1) / Policy::BM;
  kernel<<<unsigned(blocks), Policy::kThreads, Policy::kSmemBytes, stream>>>(X, n, int(d), c.t, c.v, c.a, c.b, int(c.k),
                                                                             cand, worst);
  check_launch("candidates_kernel");
}

}  // namespace

void nearest_candidates(const float* X, int64_t n, int64_t d, const NearestCentroids& c, int32_t* cand, float* worst,
                        cudaStream_t stream) {
  if (n <= 0) return;
  if (c.t)
    launch<true>(X, n, d, c, cand, worst, stream);
  else
    launch<false>(X, n, d, c, cand, worst, stream);
}

}  // namespace simkit::detail::cuda
