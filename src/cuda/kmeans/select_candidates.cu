// The selection half of k-means' tiled candidate pass (kmeans_kernels.hpp): cuBLAS has written
// a tile of half products s_ij of scaled rows (rows x k); a warp per point folds its row into
// its kNearestCandidates smallest keys a_j + scale s_ij, in (key, id) order.
//
// A warp holds kChunk columns of its row in registers (kPerLane per lane) and never inserts
// them one by one (a per-lane sorted list cost 9.6 ms for 1M x 1024 under ncu, 420 GB/s, bound
// by the insertions, not by L2). Instead, per chunk:
//   1. each lane's smallest key; T = the kNearestCandidates-th smallest of those 32 minima (a
//      bitonic sort across the lanes), or the largest key kept so far if that is smaller: at
//      least kNearestCandidates keys are <= T, so no key above T can be among the best;
//   2. the keys <= T (about ten of 1024 on random rows: T sits near the 1% quantile) are
//      compacted, with the kept list, into 32 slots in shared memory (a prefix count over the
//      lanes gives each key its slot; ballots per column measured slower) and sorted across the
//      lanes; the first kNearestCandidates are the new kept list.
// When more than 32 - kNearestCandidates keys tie at or below T (duplicated centroids), step 2
// repeats over them in rounds, so the result never depends on how many there are.
#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/kmeans/kmeans_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256, kWarps = kBlock / 32;
constexpr int kPerLane = 32, kChunk = 32 * kPerLane;
constexpr int kFresh = 32 - kNearestCandidates;  // chunk keys merged with the kept list per round
constexpr unsigned kAll = 0xffffffffu;

__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
/// Columns past k read as NaN: never <= T, and fminf ignores them.
__device__ __forceinline__ float absent() { return __int_as_float(0x7fffffff); }

/// (key, id) order with ids unsigned, so the padding id -1 sorts after every real one.
__device__ __forceinline__ bool before(float ka, int ia, float kb, int ib) {
  return ka < kb || (ka == kb && unsigned(ia) < unsigned(ib));
}

/// Ascending bitonic sort of one value per lane.
__device__ __forceinline__ float sort_across_lanes(float v, int lane) {
#pragma unroll
  for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      const float other = __shfl_xor_sync(kAll, v, stride);
      const bool keep_min = ((lane & stride) == 0) == ((lane & size) == 0);
      v = keep_min ? fminf(v, other) : fmaxf(v, other);
    }
  return v;
}

/// Ascending bitonic sort of one (key, id) pair per lane, in `before` order.
__device__ __forceinline__ void sort_across_lanes(float& key, int& id, int lane) {
#pragma unroll
  for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      const float other_key = __shfl_xor_sync(kAll, key, stride);
      const int other_id = __shfl_xor_sync(kAll, id, stride);
      const bool keep_min = ((lane & stride) == 0) == ((lane & size) == 0);
      const bool take = keep_min ? before(other_key, other_id, key, id) : before(key, id, other_key, other_id);
      if (take) key = other_key, id = other_id;
    }
}

/// The column of a lane's q-th key in the chunk at c0: load q / 8 of the lane when the rows are
/// read eight halves (16 bytes) at a time (kVector), else every 32nd column from the lane's own.
template <bool kVector>
__device__ __forceinline__ int column(int c0, int lane, int q) {
  return kVector ? c0 + 8 * lane + 256 * (q / 8) + q % 8 : c0 + lane + 32 * q;
}

template <bool kHasA, bool kVector>
__device__ __forceinline__ void load_chunk(const __half* __restrict__ s, const float* __restrict__ A, float scale,
                                           int c0, int k, int lane, float (&key)[kPerLane]) {
  if constexpr (kVector) {  // k % 8 == 0: rows are 16-byte aligned
    constexpr int kLoads = kPerLane / 8;
    uint4 v[kLoads];
    float4 a[2 * kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {  // every load in flight before any is used
      const int j = column<true>(c0, lane, 8 * u);
      const bool in = j < k;
      v[u] = in ? __ldcs(reinterpret_cast<const uint4*>(s + j)) : make_uint4(0, 0, 0, 0);
      a[2 * u] = kHasA && in ? __ldg(reinterpret_cast<const float4*>(A + j)) : make_float4(0, 0, 0, 0);
      a[2 * u + 1] = kHasA && in ? __ldg(reinterpret_cast<const float4*>(A + j + 4)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const bool in = column<true>(c0, lane, 8 * u) < k;
      const __half2* h = reinterpret_cast<const __half2*>(&v[u]);
      const float* av = reinterpret_cast<const float*>(&a[2 * u]);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __half22float2(h[e]);
        key[8 * u + 2 * e] = in ? fmaf(scale, f.x, av[2 * e]) : absent();
        key[8 * u + 2 * e + 1] = in ? fmaf(scale, f.y, av[2 * e + 1]) : absent();
      }
    }
  } else {
    float v[kPerLane], a[kPerLane];
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) {
      const int j = column<false>(c0, lane, q);
      v[q] = j < k ? __half2float(__ldcs(s + j)) : 0.0f;
      a[q] = kHasA && j < k ? __ldg(A + j) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) key[q] = column<false>(c0, lane, q) < k ? fmaf(scale, v[q], a[q]) : absent();
  }
}

template <bool kHasA, bool kVector>
__global__ void __launch_bounds__(kBlock)
    select_candidates_kernel(const __half* __restrict__ S, int64_t lds, int64_t rows, int k,
                             const float* __restrict__ A, float scale, int32_t* __restrict__ cand,
                             float* __restrict__ kept_keys) {
  __shared__ float slot_key[kWarps][32];
  __shared__ int slot_id[kWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t r = int64_t(blockIdx.x) * kWarps + warp; r < rows; r += int64_t(gridDim.x) * kWarps) {
    const __half* s = S + r * lds;
    float kept_key = inf();  // lane q < kNearestCandidates: the q-th smallest pair so far
    int kept_id = -1;
    for (int c0 = 0; c0 < k; c0 += kChunk) {
      float key[kPerLane];
      load_chunk<kHasA, kVector>(s, A, scale, c0, k, lane, key);
      float lane_min = inf();
#pragma unroll
      for (int q = 0; q < kPerLane; ++q) lane_min = fminf(lane_min, key[q]);
      const float minima = sort_across_lanes(lane_min, lane);
      const float bar =
          fminf(__shfl_sync(kAll, minima, kNearestCandidates - 1), __shfl_sync(kAll, kept_key, kNearestCandidates - 1));
      int mine = 0;
#pragma unroll
      for (int q = 0; q < kPerLane; ++q) mine += key[q] <= bar;
      int upto = mine;  // inclusive prefix count over the lanes
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(kAll, upto, o);
        if (lane >= o) upto += t;
      }
      const int total = __shfl_sync(kAll, upto, 31);
      for (int done = 0; done < total; done += kFresh) {
        slot_key[warp][lane] = lane < kNearestCandidates ? kept_key : inf();
        slot_id[warp][lane] = lane < kNearestCandidates ? kept_id : -1;
        __syncwarp();
        int at = upto - mine;  // this lane's first key in the warp's order of keys <= bar
#pragma unroll
        for (int q = 0; q < kPerLane; ++q) {
          if (key[q] <= bar) {
            if (at >= done && at < done + kFresh) {
              slot_key[warp][kNearestCandidates + at - done] = key[q];
              slot_id[warp][kNearestCandidates + at - done] = column<kVector>(c0, lane, q);
            }
            ++at;
          }
        }
        __syncwarp();
        kept_key = slot_key[warp][lane];
        kept_id = slot_id[warp][lane];
        __syncwarp();  // read before the next round writes
        sort_across_lanes(kept_key, kept_id, lane);
      }
    }
    if (lane < kNearestCandidates) {
      cand[r * kNearestCandidates + lane] = kept_id;
      kept_keys[r * kNearestCandidates + lane] = kept_key;
    }
  }
}

template <bool kHasA>
void launch(int grid, cudaStream_t stream, const __half* S, int64_t lds, int64_t rows, int64_t k, const float* a,
            float scale, int32_t* cand, float* keys) {
  if (k % 8 == 0 && lds % 8 == 0)
    select_candidates_kernel<kHasA, true><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, scale, cand, keys);
  else
    select_candidates_kernel<kHasA, false><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, scale, cand, keys);
}

}  // namespace

void select_candidates(const __half* S, int64_t lds, int64_t rows, int64_t k, const float* a, float scale,
                       int32_t* cand, float* keys, cudaStream_t stream) {
  if (rows <= 0) return;
  const int grid = int(std::min<int64_t>((rows + kWarps - 1) / kWarps, 65536));
  if (a)
    launch<true>(grid, stream, S, lds, rows, k, a, scale, cand, keys);
  else
    launch<false>(grid, stream, S, lds, rows, k, a, scale, cand, keys);
  check_launch("select_candidates_kernel");
}

__global__ void scale_rows_kernel(const float* __restrict__ X, int64_t count, int64_t d, const float* __restrict__ t,
                                  float inv_scale, __half* __restrict__ U) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x)
    U[e] = __float2half_rn((t ? X[e] - t[e % d] : X[e]) * inv_scale);
}

void scale_rows(const float* X, int64_t rows, int64_t d, const float* t, float inv_scale, __half* U,
                cudaStream_t stream) {
  const int64_t count = rows * d;
  if (count <= 0) return;
  const int grid = int(std::min<int64_t>((count + kBlock - 1) / kBlock, 65536));
  scale_rows_kernel<<<grid, kBlock, 0, stream>>>(X, count, d, t, inv_scale, U);
  check_launch("scale_rows_kernel");
}

}  // namespace simkit::detail::cuda
