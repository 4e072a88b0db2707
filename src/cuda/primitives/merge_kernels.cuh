#pragma once
// Merge path on the GPU: the merge kernel (public merge, and every global pass of the merge
// sort) and the tile sort that starts the merge sort.
//
// Merge kernel, one tile of MergeShape::TILE outputs per block:
//   1. grid level: merge_partition, one thread per tile, finds where every tile's first
//      diagonal crosses the merge path (a binary search in global memory), so each tile's
//      windows of a and b are known: exactly TILE elements in all, whatever the data. Doing
//      this in its own launch keeps the search's chain of dependent loads (log2 n of them) out
//      of the merge blocks, which would otherwise wait on it with the SM's memory idle;
//   2. the block loads both windows into shared memory (coalesced), and each thread finds its
//      own ITEMS-output diagonal inside them by binary search (merge_path_split);
//   3. each thread merges ITEMS outputs serially into registers, stable (a first on ties);
//   4. the outputs go back through shared memory and out coalesced; values, if any, are
//      gathered from global memory by the source position each output recorded.
// In a sort pass the array holds sorted runs of `run` elements and a tile merges part of one
// pair of runs (TILE divides 2 * run, so a tile never straddles two pairs).
//
// Tile sort, one tile of SortShape::TILE keys per block: each thread sorts its ITEMS keys in
// registers by odd-even transposition (a compare-exchange of neighbours only when the later is
// strictly smaller, hence stable), then log2(THREADS) rounds merge runs of doubling width in
// shared memory by the same per-thread merge path. Keys carry their tile position (16 bits);
// values are gathered by it once at the end. Positions past the end of the array sort last.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/merge_path.hpp"
#include "cuda/primitives/prim_warp.cuh"

namespace simkit::detail::cuda {

struct NoValue {};

#ifndef SIMKIT_TUNE_MERGE_ITEMS  // a tuning run may build other shapes (scripts/tune-primitives.sh)
#define SIMKIT_TUNE_MERGE_ITEMS 16
#endif
#ifndef SIMKIT_TUNE_MERGE_THREADS
#define SIMKIT_TUNE_MERGE_THREADS 256
#endif
#ifndef SIMKIT_TUNE_SORT_THREADS
#define SIMKIT_TUNE_SORT_THREADS 512
#endif

/// 256 threads x 16 keys (4-byte keys) or x 8 (8-byte): 16 KiB of keys per tile. Measured on
/// the H100 (bench/results/2026-11-23-h100-primitives.md), merge of two 2^26 int32 halves,
/// whole call: 16 keys 0.479 ms (0.85x CUB DeviceMerge), 12 keys 0.494, 8 keys 0.546 (0.66x
/// before merge_partition and the staged loads); the merge sort at 2^27 0.53x CUB
/// DeviceMergeSort. CUB stays ahead, so int keys-only merges and all sorts go to CUB.
template <class K>
struct MergeShape {
  static constexpr int THREADS = SIMKIT_TUNE_MERGE_THREADS;
  static constexpr int ITEMS = sizeof(K) <= 4 ? SIMKIT_TUNE_MERGE_ITEMS : SIMKIT_TUNE_MERGE_ITEMS / 2;
  static constexpr int TILE = THREADS * ITEMS;
  static constexpr int SMEM_KEYS = TILE + TILE / 32;  // padded for the blocked write
};

/// Tiles of two merge tiles, so that the merge sort starts one pass further along.
template <class K>
struct SortShape {
  static constexpr int THREADS = SIMKIT_TUNE_SORT_THREADS;
  static constexpr int ITEMS = MergeShape<K>::ITEMS;
  static constexpr int TILE = THREADS * ITEMS;
  static constexpr int SMEM_KEYS = TILE + TILE / 32;
  static constexpr size_t SMEM = size_t(SMEM_KEYS) * (sizeof(K) + sizeof(uint16_t));
};

template <class K, class V>
struct MergeParams {
  const K* a;  // two-array mode (run == 0): the two inputs
  const V* a_values;
  int64_t na;
  const K* b;
  const V* b_values;
  int64_t nb;
  const K* src;  // sort-pass mode (run > 0): runs of `run` sorted keys, n in all
  const V* src_values;
  int64_t n;
  int64_t run;
  K* out;
  V* out_values;
  int64_t* splits;  // per tile: where its first diagonal crosses the merge path (merge_partition)
};

/// The part of the merge one tile works on: its pair of sorted ranges and its first diagonal.
template <class K, class V>
struct MergeTile {
  const K* a;
  const K* b;
  const V* av;
  const V* bv;
  int64_t na, nb;
  int64_t out0;  // where the pair's output starts
  int64_t d0;    // the tile's first diagonal within the pair
};

template <class K, class V>
__device__ __forceinline__ MergeTile<K, V> merge_tile(const MergeParams<K, V>& p, int64_t tile) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  const int64_t pos = tile * MergeShape<K>::TILE;
  if (p.run == 0) return {p.a, p.b, p.a_values, p.b_values, p.na, p.nb, 0, pos};
  const int64_t g0 = pos / (2 * p.run) * (2 * p.run);
  const int64_t na = p.n - g0 < p.run ? p.n - g0 : p.run;
  const int64_t nb = p.n - g0 - na < p.run ? p.n - g0 - na : p.run;
  return {p.src + g0,
          p.src + g0 + na,
          kValues ? p.src_values + g0 : nullptr,
          kValues ? p.src_values + g0 + na : nullptr,
          na,
          nb,
          g0,
          pos - g0};
}

/// splits[t] for every tile t < tiles (step 1 of the header comment).
template <class K, class V, class Less>
__global__ void __launch_bounds__(256) merge_partition(MergeParams<K, V> p, Less less, int64_t tiles) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  const MergeTile<K, V> m = merge_tile(p, t);
  p.splits[t] = merge_path_split(
      m.d0, m.na, m.nb, [&](int64_t i) { return m.a[i]; }, [&](int64_t j) { return m.b[j]; }, less);
}

template <class K, class V, class Less>
__global__ void __launch_bounds__(MergeShape<K>::THREADS) merge_tiles(MergeParams<K, V> p, Less less) {
  using S = MergeShape<K>;
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  __shared__ K s_keys[S::SMEM_KEYS];
  __shared__ uint16_t s_src[kValues ? S::SMEM_KEYS : 1];

  const MergeTile<K, V> m = merge_tile(p, blockIdx.x);
  const K* a = m.a;
  const K* b = m.b;
  const V* av = m.av;
  const V* bv = m.bv;
  const int64_t na = m.na, nb = m.nb, out0 = m.out0, d0 = m.d0;
  const int64_t d1 = d0 + S::TILE < na + nb ? d0 + S::TILE : na + nb;
  // The next tile starts at d1 in the same pair unless this tile ends the pair.
  const int64_t a0 = p.splits[blockIdx.x], b0 = d0 - a0;
  int64_t a1 = d1 == na + nb ? na : p.splits[blockIdx.x + 1], b1 = d1 - a1;
  // Unsorted inputs can make the splits disagree; keep every access in range regardless.
  if (a1 < a0) a1 = a0;
  if (b1 < b0) b1 = b0;
  const int la = int(a1 - a0 < S::TILE ? a1 - a0 : S::TILE);
  const int lb = int(b1 - b0 < S::TILE - la ? b1 - b0 : S::TILE - la);
  const int count = la + lb;

  {
    // Every load first, then every store: ITEMS loads in flight per thread, not one at a time.
    K staged[S::ITEMS];
#pragma unroll
    for (int k = 0; k < S::ITEMS; ++k) {
      const int i = k * S::THREADS + int(threadIdx.x);
      if (i < count) staged[k] = i < la ? a[a0 + i] : b[b0 + i - la];
    }
#pragma unroll
    for (int k = 0; k < S::ITEMS; ++k) {
      const int i = k * S::THREADS + int(threadIdx.x);
      if (i < count) s_keys[i] = staged[k];
    }
  }
  __syncthreads();

  K key[S::ITEMS];
  int src[S::ITEMS];
  const int dt = int(threadIdx.x) * S::ITEMS < count ? int(threadIdx.x) * S::ITEMS : count;
  int ai = int(merge_path_split(
      dt, la, lb, [&](int64_t i) { return s_keys[i]; }, [&](int64_t j) { return s_keys[la + j]; }, less));
  int bj = dt - ai;
  K ka = ai < la ? s_keys[ai] : K{}, kb = bj < lb ? s_keys[la + bj] : K{};
#pragma unroll
  for (int k = 0; k < S::ITEMS; ++k) {
    const bool take_a = bj >= lb || (ai < la && !less(kb, ka));
    key[k] = take_a ? ka : kb;
    src[k] = take_a ? ai : la + bj;
    if (take_a) {
      if (++ai < la) ka = s_keys[ai];
    } else {
      if (++bj < lb) kb = s_keys[la + bj];
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < S::ITEMS; ++k) {
    const int o = int(threadIdx.x) * S::ITEMS + k;
    if (o < count) {
      s_keys[padded(o)] = key[k];
      if constexpr (kValues) s_src[padded(o)] = uint16_t(src[k]);
    }
  }
  __syncthreads();
  K* out = p.out + out0 + d0;
#pragma unroll
  for (int k = 0; k < S::ITEMS; ++k) {
    const int i = k * S::THREADS + int(threadIdx.x);
    if (i < count) out[i] = s_keys[padded(i)];
  }
  if constexpr (kValues) {
    V gathered[S::ITEMS];  // all the gathers in flight before any store
#pragma unroll
    for (int k = 0; k < S::ITEMS; ++k) {
      const int i = k * S::THREADS + int(threadIdx.x);
      if (i < count) {
        const int s = s_src[padded(i)];
        gathered[k] = s < la ? av[a0 + s] : bv[b0 + s - la];
      }
    }
#pragma unroll
    for (int k = 0; k < S::ITEMS; ++k) {
      const int i = k * S::THREADS + int(threadIdx.x);
      if (i < count) p.out_values[out0 + d0 + i] = gathered[k];
    }
  }
}

/// Tile sort (see the header comment). In place is allowed: a tile is read whole before it is
/// written. Launched with SortShape<K>::SMEM bytes of dynamic shared memory.
template <class K, class V, class Less>
__global__ void __launch_bounds__(SortShape<K>::THREADS)
    sort_tiles(const K* in, const V* in_values, K* out, V* out_values, int64_t n, Less less) {
  using S = SortShape<K>;
  constexpr int ITEMS = S::ITEMS;
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  extern __shared__ __align__(16) unsigned char smem[];
  K* s_keys = reinterpret_cast<K*>(smem);
  uint16_t* s_pos = reinterpret_cast<uint16_t*>(s_keys + S::SMEM_KEYS);

  const int64_t base = int64_t(blockIdx.x) * S::TILE;
  const int count = n - base < S::TILE ? int(n - base) : S::TILE;
  // (key, position) in tile order; a position >= count is padding and sorts last.
  auto before = [&](K ka, int pa, K kb, int pb) { return pa < count && (pb >= count || less(ka, kb)); };

  K key[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {  // all loads in flight, then the stores to shared memory
    const int i = k * S::THREADS + int(threadIdx.x);
    if (i < count) key[k] = in[base + i];
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * S::THREADS + int(threadIdx.x);
    if (i < count) s_keys[padded(i)] = key[k];
  }
  __syncthreads();
  int at[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    at[k] = int(threadIdx.x) * ITEMS + k;
    key[k] = at[k] < count ? s_keys[padded(at[k])] : K{};
  }
  // Odd-even transposition: ITEMS rounds sort ITEMS values; exchanging only on a strict
  // "later before earlier" keeps equal keys in order.
#pragma unroll
  for (int round = 0; round < ITEMS; ++round) {
#pragma unroll
    for (int k = round & 1; k + 1 < ITEMS; k += 2) {
      if (before(key[k + 1], at[k + 1], key[k], at[k])) {
        const K tk = key[k];
        const int ta = at[k];
        key[k] = key[k + 1], at[k] = at[k + 1];
        key[k + 1] = tk, at[k + 1] = ta;
      }
    }
  }
  for (int width = ITEMS; width < S::TILE; width *= 2) {
    __syncthreads();  // the previous round's reads are done
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int o = int(threadIdx.x) * ITEMS + k;
      s_keys[padded(o)] = key[k];
      s_pos[padded(o)] = uint16_t(at[k]);
    }
    __syncthreads();
    const int first = int(threadIdx.x) * ITEMS;
    const int g0 = first / (2 * width) * (2 * width);
    auto key_at = [&](int i) { return s_keys[padded(g0 + i)]; };
    auto pos_at = [&](int i) { return int(s_pos[padded(g0 + i)]); };
    auto less_at = [&](int64_t j_b, int64_t i_a) {  // b[j] before a[i]: indices within the pair
      return before(key_at(width + int(j_b)), pos_at(width + int(j_b)), key_at(int(i_a)), pos_at(int(i_a)));
    };
    // merge_path_split calls less(b[j], a[i]); pass indices and compare inside.
    const int d = first - g0;
    int ai = int(merge_path_split(
        d, width, width, [](int64_t i) { return i; }, [](int64_t j) { return j; }, less_at));
    int bj = d - ai;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const bool take_a =
          bj >= width || (ai < width && !before(key_at(width + bj), pos_at(width + bj), key_at(ai), pos_at(ai)));
      const int from = take_a ? ai++ : width + bj++;
      key[k] = key_at(from);
      at[k] = pos_at(from);
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int o = int(threadIdx.x) * ITEMS + k;
    s_keys[padded(o)] = key[k];
    s_pos[padded(o)] = uint16_t(at[k]);
  }
  __syncthreads();
  // Everything this tile reads from global memory is read before any of it is written, so the
  // sort may run in place, values included.
  V value[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * S::THREADS + int(threadIdx.x);
    key[k] = i < count ? s_keys[padded(i)] : K{};
    if constexpr (kValues)
      if (i < count) value[k] = in_values[base + s_pos[padded(i)]];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * S::THREADS + int(threadIdx.x);
    if (i < count) {
      out[base + i] = key[k];
      if constexpr (kValues) out_values[base + i] = value[k];
    }
  }
}

}  // namespace simkit::detail::cuda
