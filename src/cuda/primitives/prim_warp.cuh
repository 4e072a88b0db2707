#pragma once
// Warp and block building blocks of the primitives' kernels (scan, SpMV, merge): shuffles of
// any small trivially copyable type, a warp scan with any associative operator, a block-wide
// exclusive scan of one value per thread, and the warp-striped <-> blocked transposes that let
// a thread own a run of consecutive items while every global access stays coalesced.
//
// Operators are called op(earlier, later) throughout, so non-commutative ones (the segmented
// scan's, SpMV's reduce-by-row) work. They need a two-sided identity.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace simkit::detail::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

/// Applies a shuffle to T one 32-bit word at a time (sizeof(T) must be a multiple of 4).
template <class T, class Shfl>
__device__ __forceinline__ T shuffle_words(T v, Shfl shfl) {
  static_assert(sizeof(T) % 4 == 0, "shuffled types are whole 32-bit words");
  constexpr int W = int(sizeof(T) / 4);
  unsigned w[W];
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = shfl(w[i]);
  T out;
  memcpy(&out, w, sizeof(T));
  return out;
}

template <class T>
__device__ __forceinline__ T shfl_up(T v, int delta) {
  return shuffle_words(v, [delta](unsigned x) { return __shfl_up_sync(kFullMask, x, delta); });
}
template <class T>
__device__ __forceinline__ T shfl_down(T v, int delta) {
  return shuffle_words(v, [delta](unsigned x) { return __shfl_down_sync(kFullMask, x, delta); });
}
template <class T>
__device__ __forceinline__ T shfl_idx(T v, int lane) {
  return shuffle_words(v, [lane](unsigned x) { return __shfl_sync(kFullMask, x, lane); });
}

/// Inclusive scan of one value per lane (Kogge-Stone over shuffles: 5 steps).
template <class T, class Op>
__device__ __forceinline__ T warp_inclusive_scan(T x, Op op, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T y = shfl_up(x, d);
    if (lane >= d) x = op(y, x);
  }
  return x;
}

/// Exclusive scan of one value per thread over a block of THREADS threads: each thread gets the
/// combination of the values of the threads before it (identity for thread 0), and all get
/// the block's total. Ends synchronised; `warp_totals` (THREADS / 32 values of shared memory)
/// may be reused after it returns.
template <int THREADS, class T, class Op>
__device__ __forceinline__ void block_exclusive_scan(T x, Op op, T identity, T& prefix, T& total, T* warp_totals) {
  constexpr int WARPS = THREADS / 32;
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  const T incl = warp_inclusive_scan(x, op, lane);
  if (lane == 31) warp_totals[warp] = incl;
  __syncthreads();
  T before = identity, all = identity;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const T t = warp_totals[w];
    if (w < warp) before = op(before, t);
    all = op(all, t);
  }
  T in_warp = shfl_up(incl, 1);
  if (lane == 0) in_warp = identity;
  prefix = op(before, in_warp);
  total = all;
  __syncthreads();
}

/// Shared-memory index with one word of padding per 32: a lane reading ITEMS consecutive
/// elements (blocked) and lanes reading 32 consecutive ones (striped) both avoid bank conflicts.
__device__ __forceinline__ int padded(int i) { return i + i / 32; }

template <int ITEMS>
constexpr int warp_exchange_size() {
  return 32 * ITEMS + ITEMS;
}

/// The vector width of a global access for T: 16 bytes when ITEMS of T fill whole vectors.
template <class T, int ITEMS>
constexpr int vector_width() {
  return (16 % sizeof(T) == 0 && (ITEMS * sizeof(T)) % 16 == 0) ? int(16 / sizeof(T)) : 1;
}

/// A warp loads 32 * ITEMS consecutive elements of src (the first `valid` exist; the rest read
/// as `fill`) so that lane l holds elements l * ITEMS .. l * ITEMS + ITEMS - 1. Global reads are
/// striped (16-byte vectors when the whole chunk is there and aligned), then transposed through
/// `ex` (warp_exchange_size<ITEMS>() elements of this warp's shared memory).
template <class T, int ITEMS>
__device__ __forceinline__ void load_blocked(const T* src, int valid, T fill, T (&items)[ITEMS], T* ex, int lane) {
  constexpr int V = vector_width<T, ITEMS>();
  if (V > 1 && valid == 32 * ITEMS && (reinterpret_cast<uintptr_t>(src) % 16) == 0) {
#pragma unroll
    for (int q = 0; q < ITEMS / V; ++q) {
      const int pos = (q * 32 + lane) * V;
      const uint4 vec = __ldg(reinterpret_cast<const uint4*>(src + pos));
      T parts[V];
      memcpy(parts, &vec, sizeof vec);
#pragma unroll
      for (int e = 0; e < V; ++e) ex[padded(pos + e)] = parts[e];
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int pos = j * 32 + lane;
      ex[padded(pos)] = pos < valid ? src[pos] : fill;
    }
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) items[i] = ex[padded(lane * ITEMS + i)];
  __syncwarp();
}

/// The reverse of load_blocked: lane l's items go to dst[l * ITEMS + i]; only the first `valid`
/// elements are written.
template <class T, int ITEMS>
__device__ __forceinline__ void store_blocked(T* dst, int valid, const T (&items)[ITEMS], T* ex, int lane) {
  constexpr int V = vector_width<T, ITEMS>();
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) ex[padded(lane * ITEMS + i)] = items[i];
  __syncwarp();
  if (V > 1 && valid == 32 * ITEMS && (reinterpret_cast<uintptr_t>(dst) % 16) == 0) {
#pragma unroll
    for (int q = 0; q < ITEMS / V; ++q) {
      const int pos = (q * 32 + lane) * V;
      T parts[V];
#pragma unroll
      for (int e = 0; e < V; ++e) parts[e] = ex[padded(pos + e)];
      uint4 vec;
      memcpy(&vec, parts, sizeof vec);
      *reinterpret_cast<uint4*>(dst + pos) = vec;
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int pos = j * 32 + lane;
      if (pos < valid) dst[pos] = ex[padded(pos)];
    }
  }
  __syncwarp();
}

}  // namespace simkit::detail::cuda
