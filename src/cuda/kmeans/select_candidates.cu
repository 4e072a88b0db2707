// The selection half of k-means' tiled candidate pass (kmeans_kernels.hpp): cuBLAS has written
// a tile of TF32 products s_ij (rows x k, L2-sized); a warp per point folds its row into
// kNearestCandidates smallest keys a_j + b s_ij. Each lane keeps a list over its columns
// (j = lane, lane + 32, ...: coalesced), then the warp pops the smallest head kNearestCandidates
// times. A pair a lane dropped had kNearestCandidates smaller ones in that lane, so the pops are
// the row's true smallest keys, and every other key is at least the last one popped.
#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/kmeans/kmeans_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256, kWarps = kBlock / 32;

/// The kNearestCandidates smallest (key, id) pairs offered, in (key, id) order: the same list whatever the order
/// of the offers, so the threads of a point agree after merging.
struct Shortlist {
  float key[kNearestCandidates];
  int id[kNearestCandidates];
  __device__ void clear() {
#pragma unroll
    for (int q = 0; q < kNearestCandidates; ++q) key[q] = __int_as_float(0x7f800000), id[q] = -1;
  }
  __device__ bool wants(float k, int i) const {
    return k < key[kNearestCandidates - 1] ||
           (k == key[kNearestCandidates - 1] && unsigned(i) < unsigned(id[kNearestCandidates - 1]));
  }
  __device__ void offer(float k, int i) {
#pragma unroll
    for (int q = 0; q < kNearestCandidates; ++q) {
      if (k < key[q] || (k == key[q] && unsigned(i) < unsigned(id[q]))) {
        const float tk = key[q];
        const int ti = id[q];
        key[q] = k, id[q] = i;
        k = tk, i = ti;
      }
    }
  }
  /// Drops the smallest pair (the lists of a warp are merged by popping their heads).
  __device__ void pop_front() {
#pragma unroll
    for (int q = 0; q + 1 < kNearestCandidates; ++q) key[q] = key[q + 1], id[q] = id[q + 1];
    key[kNearestCandidates - 1] = __int_as_float(0x7f800000), id[kNearestCandidates - 1] = -1;
  }
};

// Loads are issued kUnroll float4s per lane at a time (16 columns in flight per lane, 512 per
// warp) before any is folded in: one row at a time per warp, the loop was bound by L2 latency
// (9.6 ms for 1M x 1024 under ncu, 420 GB/s) with a load per column.
constexpr int kUnroll = 4;

template <bool kHasA>
__device__ __forceinline__ void fold(Shortlist& list, float s, const float* A, float b, int j, int k) {
  if (j >= k) return;
  const float key = (kHasA ? A[j] : 0.0f) + b * s;
  if (list.wants(key, j)) list.offer(key, j);
}

template <bool kHasA, bool kVector>
__global__ void __launch_bounds__(kBlock)
    select_candidates_kernel(const float* __restrict__ S, int64_t lds, int64_t rows, int k, const float* __restrict__ A,
                             float b, int32_t* __restrict__ cand, float* __restrict__ worst) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * kWarps) {
    const float* s = S + r * lds;
    Shortlist list;
    list.clear();
    if constexpr (kVector) {  // k % 4 == 0: rows are 16-byte aligned
      for (int base = 4 * lane; base < k; base += 128 * kUnroll) {
        float4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int j = base + 128 * u;
          v[u] = j < k ? __ldcs(reinterpret_cast<const float4*>(s + j)) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int j = base + 128 * u;
          fold<kHasA>(list, v[u].x, A, b, j, k);
          fold<kHasA>(list, v[u].y, A, b, j + 1, k);
          fold<kHasA>(list, v[u].z, A, b, j + 2, k);
          fold<kHasA>(list, v[u].w, A, b, j + 3, k);
        }
      }
    } else {
      for (int base = lane; base < k; base += 32 * kUnroll) {
        float v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = base + 32 * u < k ? __ldcs(s + base + 32 * u) : 0.0f;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) fold<kHasA>(list, v[u], A, b, base + 32 * u, k);
      }
    }
    float mine_key = 0;
    int mine_id = -1;
#pragma unroll
    for (int q = 0; q < kNearestCandidates; ++q) {
      float best_key = list.key[0];
      int best_id = list.id[0];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float other_key = __shfl_xor_sync(0xffffffffu, best_key, o);
        const int other_id = __shfl_xor_sync(0xffffffffu, best_id, o);
        if (other_key < best_key || (other_key == best_key && unsigned(other_id) < unsigned(best_id)))
          best_key = other_key, best_id = other_id;
      }
      if (best_id >= 0 && list.id[0] == best_id) list.pop_front();  // ids are unique to a lane
      if (lane == q) mine_key = best_key, mine_id = best_id;
    }
    if (lane < kNearestCandidates) cand[r * kNearestCandidates + lane] = mine_id;
    if (lane == kNearestCandidates - 1) worst[r] = mine_key;
  }
}

template <bool kHasA>
void launch(int grid, cudaStream_t stream, const float* S, int64_t lds, int64_t rows, int64_t k, const float* a,
            float b, int32_t* cand, float* worst) {
  if (k % 4 == 0 && lds % 4 == 0)
    select_candidates_kernel<kHasA, true><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, b, cand, worst);
  else
    select_candidates_kernel<kHasA, false><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, b, cand, worst);
}

}  // namespace

void select_candidates(const float* S, int64_t lds, int64_t rows, int64_t k, const float* a, float b, int32_t* cand,
                       float* worst, cudaStream_t stream) {
  if (rows <= 0) return;
  const int grid = int(std::min<int64_t>((rows + kWarps - 1) / kWarps, 65536));
  if (a)
    launch<true>(grid, stream, S, lds, rows, k, a, b, cand, worst);
  else
    launch<false>(grid, stream, S, lds, rows, k, a, b, cand, worst);
  check_launch("select_candidates_kernel");
}

__global__ void translate_rows_kernel(const float* __restrict__ X, int64_t count, int64_t d,
                                      const float* __restrict__ t, float* __restrict__ U) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x)
    U[e] = X[e] - t[e % d];
}

void translate_rows(const float* X, int64_t rows, int64_t d, const float* t, float* U, cudaStream_t stream) {
  const int64_t count = rows * d;
  if (count <= 0) return;
  const int grid = int(std::min<int64_t>((count + kBlock - 1) / kBlock, 65536));
  translate_rows_kernel<<<grid, kBlock, 0, stream>>>(X, count, d, t, U);
  check_launch("translate_rows_kernel");
}

}  // namespace simkit::detail::cuda
