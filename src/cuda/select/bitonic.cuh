#pragma once
// (key, id) pairs in shared memory, ordered by key then id, sorted and merged by a "team" of
// threads: one warp (TEAM == 32, synchronised with __syncwarp) or a whole block
// (TEAM == blockDim.x, synchronised with __syncthreads). Every thread of the team must call
// these functions together, with the same arguments.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

constexpr float kInf = __builtin_huge_valf();
constexpr int64_t kNoId = INT64_MAX;

/// The total order of k-selection: smaller key first, then the lower id. An empty slot is
/// (+inf, INT64_MAX) and sorts after every real candidate.
template <class K>
__device__ __forceinline__ bool before(K ka, int64_t ia, K kb, int64_t ib) {
  return ka < kb || (ka == kb && ia < ib);
}

template <int TEAM>
__device__ __forceinline__ void team_sync() {
  if constexpr (TEAM == 32)
    __syncwarp();
  else
    __syncthreads();
}

template <class K>
__device__ __forceinline__ void compare_swap(K* keys, int64_t* ids, int i, int j, bool ascending) {
  const K ki = keys[i], kj = keys[j];
  const int64_t ii = ids[i], ij = ids[j];
  if (before(kj, ij, ki, ii) == ascending) {
    keys[i] = kj, ids[i] = ij;
    keys[j] = ki, ids[j] = ii;
  }
}

/// Sorts n (a power of two) pairs ascending; keys float, or double for re-scored candidates.
/// Ends synchronised.
template <int TEAM, class K>
__device__ void bitonic_sort(K* keys, int64_t* ids, int n, int tid) {
  for (int size = 2; size <= n; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int p = tid; p < n / 2; p += TEAM) {
        const int i = 2 * p - (p & (stride - 1));  // (p / stride) * 2 * stride + p % stride
        compare_swap(keys, ids, i, i + stride, (i & size) == 0);
      }
      team_sync<TEAM>();
    }
  }
}

/// Sorts n (a power of two) pairs that form a bitonic sequence (falling then rising, as the
/// element-wise minimum of an ascending and a descending run is). Ends synchronised.
template <int TEAM>
__device__ void bitonic_merge(float* keys, int64_t* ids, int n, int tid) {
  for (int stride = n >> 1; stride > 0; stride >>= 1) {
    for (int p = tid; p < n / 2; p += TEAM) {
      const int i = 2 * p - (p & (stride - 1));
      compare_swap(keys, ids, i, i + stride, true);
    }
    team_sync<TEAM>();
  }
}

/// The C smallest of (list: C sorted pairs) and (buf: cnt unsorted pairs, room for B), back
/// into list, sorted. C and B are powers of two. Uses buf as scratch. Ends synchronised.
///
/// The buffer is padded to P = next power of two >= cnt and sorted; then for the larger of
/// the two lengths S, v[i] = min(list[i], buf[S - 1 - i]) (missing entries are +inf) holds the
/// S smallest of the union as a bitonic sequence, which one merge network sorts.
template <int TEAM, int C, int B>
__device__ void merge_into_list(float* lk, int64_t* li, float* bk, int64_t* bi, int cnt, int tid) {
  int P = 1;
  while (P < cnt) P <<= 1;
  for (int i = cnt + tid; i < P; i += TEAM) bk[i] = kInf, bi[i] = kNoId;
  team_sync<TEAM>();
  bitonic_sort<TEAM>(bk, bi, P, tid);
  if (P >= C) {
    for (int i = tid; i < P / 2; i += TEAM) {
      const int j = P - 1 - i;
      const float bki = bk[i], bkj = bk[j];
      const int64_t bii = bi[i], bij = bi[j];
      const float lki = i < C ? lk[i] : kInf, lkj = j < C ? lk[j] : kInf;
      const int64_t lii = i < C ? li[i] : kNoId, lij = j < C ? li[j] : kNoId;
      if (before(lki, lii, bkj, bij))
        bk[i] = lki, bi[i] = lii;
      else
        bk[i] = bkj, bi[i] = bij;
      if (before(lkj, lij, bki, bii))
        bk[j] = lkj, bi[j] = lij;
      else
        bk[j] = bki, bi[j] = bii;
    }
    team_sync<TEAM>();
    bitonic_merge<TEAM>(bk, bi, P, tid);
    for (int i = tid; i < C; i += TEAM) lk[i] = bk[i], li[i] = bi[i];
  } else {
    for (int i = C - P + tid; i < C; i += TEAM) {
      const int j = C - 1 - i;  // < P
      if (before(bk[j], bi[j], lk[i], li[i])) lk[i] = bk[j], li[i] = bi[j];
    }
    team_sync<TEAM>();
    bitonic_merge<TEAM>(lk, li, C, tid);
  }
  team_sync<TEAM>();
}

}  // namespace simkit::detail::cuda
