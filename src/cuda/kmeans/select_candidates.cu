// The selection half of k-means' tiled candidate pass (kmeans_kernels.hpp): cuBLAS has written
// a tile of TF32 products s_ij (rows x k, L2-sized); a warp per point folds its row into its
// kNearestCandidates smallest keys a_j + b s_ij, in (key, id) order.
//
// A warp holds kChunk columns of its row in registers (kPerLane per lane) and never inserts
// them one by one (a per-lane sorted list cost 9.6 ms for 1M x 1024 under ncu, 420 GB/s, bound
// by the insertions, not by L2). Instead, per chunk:
//   1. each lane's smallest key; T = the kNearestCandidates-th smallest of those 32 minima (a
//      bitonic sort across the lanes), or the largest key kept so far if that is smaller: at
//      least kNearestCandidates keys are <= T, so no key above T can be among the best;
//   2. the keys <= T (about ten of 1024 on random rows: T sits near the 1% quantile) are
//      compacted by ballots, with the kept list, into 32 slots in shared memory and sorted
//      across the lanes; the first kNearestCandidates are the new kept list.
// When more than 32 - kNearestCandidates keys tie at or below T (duplicated centroids), step 2
// repeats over them in rounds, so the result never depends on how many there are.
#include <algorithm>
#include <cstdlib>

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

/// The column of a lane's q-th key in the chunk at c0: float4 q / 4 of the lane when the rows
/// are read four columns at a time (kVector), else every 32nd column from the lane's own.
template <bool kVector>
__device__ __forceinline__ int column(int c0, int lane, int q) {
  return kVector ? c0 + 4 * lane + 128 * (q / 4) + q % 4 : c0 + lane + 32 * q;
}

template <bool kHasA, bool kVector>
__device__ __forceinline__ void load_chunk(const float* __restrict__ s, const float* __restrict__ A, float b, int c0,
                                           int k, int lane, float (&key)[kPerLane]) {
  if constexpr (kVector) {  // k % 4 == 0: rows are 16-byte aligned
    constexpr int kLoads = kPerLane / 4;
    float4 v[kLoads], a[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {  // every load in flight before any is used
      const int j = column<true>(c0, lane, 4 * u);
      const bool in = j < k;
      v[u] = in ? __ldcs(reinterpret_cast<const float4*>(s + j)) : make_float4(0, 0, 0, 0);
      a[u] = kHasA && in ? __ldg(reinterpret_cast<const float4*>(A + j)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const bool in = column<true>(c0, lane, 4 * u) < k;
      key[4 * u + 0] = in ? fmaf(b, v[u].x, a[u].x) : absent();
      key[4 * u + 1] = in ? fmaf(b, v[u].y, a[u].y) : absent();
      key[4 * u + 2] = in ? fmaf(b, v[u].z, a[u].z) : absent();
      key[4 * u + 3] = in ? fmaf(b, v[u].w, a[u].w) : absent();
    }
  } else {
    float v[kPerLane], a[kPerLane];
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) {
      const int j = column<false>(c0, lane, q);
      v[q] = j < k ? __ldcs(s + j) : 0.0f;
      a[q] = kHasA && j < k ? __ldg(A + j) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) key[q] = column<false>(c0, lane, q) < k ? fmaf(b, v[q], a[q]) : absent();
  }
}

template <bool kHasA, bool kVector, bool kBallot>
__global__ void __launch_bounds__(kBlock)
    select_candidates_kernel(const float* __restrict__ S, int64_t lds, int64_t rows, int k, const float* __restrict__ A,
                             float b, int32_t* __restrict__ cand, float* __restrict__ kept_keys) {
  __shared__ float slot_key[kWarps][32];
  __shared__ int slot_id[kWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t r = int64_t(blockIdx.x) * kWarps + warp; r < rows; r += int64_t(gridDim.x) * kWarps) {
    const float* s = S + r * lds;
    float kept_key = inf();  // lane q < kNearestCandidates: the q-th smallest pair so far
    int kept_id = -1;
    for (int c0 = 0; c0 < k; c0 += kChunk) {
      float key[kPerLane];
      load_chunk<kHasA, kVector>(s, A, b, c0, k, lane, key);
      float lane_min = inf();
#pragma unroll
      for (int q = 0; q < kPerLane; ++q) lane_min = fminf(lane_min, key[q]);
      const float minima = sort_across_lanes(lane_min, lane);
      const float bar = fminf(__shfl_sync(kAll, minima, kNearestCandidates - 1),
                              __shfl_sync(kAll, kept_key, kNearestCandidates - 1));
      if constexpr (kBallot) {
      // Keys <= bar go to slots kNearestCandidates.. in (q, lane) order: a ballot per q finds
      // them (most ballots are empty) and gives each its place, rounds of kFresh at a time.
      const unsigned below = (1u << lane) - 1u;
      for (int done = 0;; done += kFresh) {
        slot_key[warp][lane] = lane < kNearestCandidates ? kept_key : inf();
        slot_id[warp][lane] = lane < kNearestCandidates ? kept_id : -1;
        __syncwarp();
        int seen = 0;  // keys <= bar before this q, over the warp
#pragma unroll
        for (int q = 0; q < kPerLane; ++q) {
          const bool hit = key[q] <= bar;
          const unsigned hits = __ballot_sync(kAll, hit);
          if (hits) {
            const int at = seen + __popc(hits & below) - done;
            if (hit && at >= 0 && at < kFresh) {
              slot_key[warp][kNearestCandidates + at] = key[q];
              slot_id[warp][kNearestCandidates + at] = column<kVector>(c0, lane, q);
            }
            seen += __popc(hits);
          }
        }
        __syncwarp();
        kept_key = slot_key[warp][lane];
        kept_id = slot_id[warp][lane];
        __syncwarp();  // read before the next round writes
        sort_across_lanes(kept_key, kept_id, lane);
        if (done + kFresh >= seen) break;
      }
      } else {
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
    }
    if (lane < kNearestCandidates) {
      cand[r * kNearestCandidates + lane] = kept_id;
      kept_keys[r * kNearestCandidates + lane] = kept_key;
    }
  }
}

template <bool kHasA>
void launch(int grid, cudaStream_t stream, const float* S, int64_t lds, int64_t rows, int64_t k, const float* a,
            float b, int32_t* cand, float* keys) {
  static const bool ballot = std::getenv("SIMKIT_KM_BALLOT") && std::atoi(std::getenv("SIMKIT_KM_BALLOT"));
  if (k % 4 == 0 && lds % 4 == 0) {
    if (ballot)
      select_candidates_kernel<kHasA, true, true><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, b, cand, keys);
    else
      select_candidates_kernel<kHasA, true, false><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, b, cand, keys);
  } else {
    select_candidates_kernel<kHasA, false, false><<<grid, kBlock, 0, stream>>>(S, lds, rows, int(k), a, b, cand, keys);
  }
}

}  // namespace

void select_candidates(const float* S, int64_t lds, int64_t rows, int64_t k, const float* a, float b, int32_t* cand,
                       float* keys, cudaStream_t stream) {
  if (rows <= 0) return;
  const int grid = int(std::min<int64_t>((rows + kWarps - 1) / kWarps, 65536));
  if (a)
    launch<true>(grid, stream, S, lds, rows, k, a, b, cand, keys);
  else
    launch<false>(grid, stream, S, lds, rows, k, a, b, cand, keys);
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
