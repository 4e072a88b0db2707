#pragma once
// k-selection over a tile of scores, merged into a running per-query top list.
//
// A tile holds, for each of `rows` queries, the scores of `cols` consecutive base rows (ids
// id0, id0 + 1, ...), written by the matrix product (or the l1 kernel) just before. Each query
// keeps its best C (key, id) pairs, smallest key first, in device memory between tiles
// (state_keys / state_ids, C per query). One team of threads per query:
//   * reads the query's row of the tile once, 16-byte vectors, several in flight per thread;
//   * turns each score into a key (the epilogue: + |x|^2 for l2, * 1/|x| for cosine);
//   * rejects it with one comparison against the current kc-th best (the threshold) -- after
//     the first tiles nearly every element of a large base stops here;
//   * appends the few survivors to a shared-memory candidate buffer (warp ballot + prefix);
//   * when the buffer could overflow, and at the end of the row, sorts it (bitonic) and
//     merges it into the list, which tightens the threshold.
// The list is loaded from device memory only at the first merge and written back only if it
// changed. Ties: (key, id) is a total order and every id in this tile exceeds every id already
// in the list, so rejecting key == threshold is right except where the list is not yet full
// (threshold (+inf, INT64_MAX)); the full comparison covers both.
//
// Teams: a warp per query for C <= 128 (four queries per block), a 256-thread block per query
// for larger C, where the buffer and the merges need more hands.
//
// Rows need not start on a 16-byte boundary (select_k's input rows are cols floats apart): a
// row is read from the aligned address at or before its start, and the up to 3 columns before
// it count as absent. With aux (k-NN's l2 and cosine) the tile is aligned, and so is aux.

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/team_top_k.cuh"
#include "cuda/select/top_k_lists.hpp"

namespace simkit::detail::cuda {

template <int C>
struct SelectShape {
  static constexpr int TEAM = C <= 128 ? 32 : 256;
  static constexpr int TEAMS_PER_BLOCK = TEAM == 32 ? 4 : 1;
  static constexpr int THREADS = TEAM * TEAMS_PER_BLOCK;
  static constexpr int U = TEAM == 32 ? 2 : 1;  // 16-byte loads in flight per thread
  static constexpr int G = U * TEAM * 4;        // elements per group
  static constexpr int B = C > 2 * G ? C : 2 * G;
  static constexpr size_t SMEM_PER_TEAM = size_t(C + B) * (sizeof(int64_t) + sizeof(float));
  static constexpr size_t SMEM = SMEM_PER_TEAM * TEAMS_PER_BLOCK;
};

template <KeyMode MODE>
__device__ __forceinline__ float make_key(float score, float aux) {
  if constexpr (MODE == KeyMode::add_aux)
    return score + aux;
  else if constexpr (MODE == KeyMode::mul_aux)
    return score * aux;
  else if constexpr (MODE == KeyMode::negate)
    return -score;
  else
    return score;
}

template <int C, KeyMode MODE>
__global__ void __launch_bounds__(SelectShape<C>::THREADS) select_merge_kernel(SelectArgs a) {
  using S = SelectShape<C>;
  constexpr int TEAM = S::TEAM, U = S::U, G = S::G, B = S::B;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int s_count;  // block teams' survivor count

  const int team = TEAM == 32 ? int(threadIdx.x / 32) : 0;
  const int tid = TEAM == 32 ? int(threadIdx.x % 32) : int(threadIdx.x);
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * S::TEAMS_PER_BLOCK + team;
  if (r >= a.rows) return;  // whole teams only: a warp team is one warp, a block team has r < rows

  unsigned char* base = smem + size_t(team) * S::SMEM_PER_TEAM;
  int64_t* li = reinterpret_cast<int64_t*>(base);
  int64_t* bi = li + C;
  float* lk = reinterpret_cast<float*>(bi + B);
  float* bk = lk + C;

  float* state_k = a.state_keys + int64_t(r) * C;
  int64_t* state_i = a.state_ids + int64_t(r) * C;
  TeamTopK<TEAM, C, B> top(lk, li, bk, bi, a.kc, &s_count);
  top.set_threshold(state_k[a.kc - 1], state_i[a.kc - 1], tid);
  bool loaded = false;
  auto merge = [&]() {
    if (!loaded) {
      for (int i = tid; i < C; i += TEAM) lk[i] = state_k[i], li[i] = state_i[i];
      loaded = true;
    }
    top.merge(tid);
  };

  constexpr bool kAux = MODE == KeyMode::add_aux || MODE == KeyMode::mul_aux;
  const float* row = a.tile + int64_t(r) * a.ldt;
  // Column c sits at position c + shift of the aligned `start`.
  const int shift = kAux ? 0 : int((reinterpret_cast<uintptr_t>(row) / sizeof(float)) & 3);
  const float* start = row - shift;
  const int span = a.cols + shift;
  for (int g0 = 0; g0 < span; g0 += G) {
    float key[U][4];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = g0 + (u * TEAM + tid) * 4;  // position in start
      if (j >= shift && j + 3 < span) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(start + j));
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kAux) x = __ldg(reinterpret_cast<const float4*>(a.aux + j));
        key[u][0] = make_key<MODE>(v.x, x.x);
        key[u][1] = make_key<MODE>(v.y, x.y);
        key[u][2] = make_key<MODE>(v.z, x.z);
        key[u][3] = make_key<MODE>(v.w, x.w);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = j + e - shift;
          const bool in_row = c >= 0 && c < a.cols;
          float x = 0.f;
          if constexpr (kAux) x = in_row ? a.aux[c] : 0.f;
          key[u][e] = in_row ? make_key<MODE>(row[c], x) : kInf;
        }
      }
    }
    unsigned pass = 0;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = g0 + (u * TEAM + tid) * 4 + e - shift;
        if (c >= 0 && c < a.cols && top.beats(key[u][e], a.id0 + c) &&
            (a.mask == nullptr || ((a.mask[(a.id0 + c) >> 5] >> ((a.id0 + c) & 31)) & 1u)))
          pass |= 1u << (u * 4 + e);
      }
    if (__any_sync(0xffffffffu, pass != 0)) {
#pragma unroll
      for (int q = 0; q < U * 4; ++q) {
        const int u = q / 4, e = q % 4;
        top.append((pass >> q) & 1u, key[u][e], [&] { return a.id0 + g0 + (u * TEAM + tid) * 4 + e - shift; }, lane);
      }
    }
    top.sync_count();
    if (top.room() < G) merge();
  }
  if (!top.empty()) merge();
  if (loaded)
    for (int i = tid; i < C; i += TEAM) state_k[i] = lk[i], state_i[i] = li[i];
}

}  // namespace simkit::detail::cuda
