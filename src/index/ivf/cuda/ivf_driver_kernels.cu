// The shared GPU driver's kernels (ivf_device_search.cpp): what happens to the candidates of
// either family's list scan -- the slot merge, rank look-ups, l1 re-score keys and the final
// ids and values -- and the allow-list mask both scans test.

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/select/team_top_k.cuh"
#include "index/ivf/cuda/ivf_driver_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;

constexpr int kMergeWarps = 4;

template <int C>
__global__ void __launch_bounds__(32 * kMergeWarps)
    merge_kernel(int64_t queries, int64_t per_query, int kc, const float* slot_keys, const int64_t* slot_ranks,
                 float* keys, int64_t* ranks) {
  constexpr int B = WarpTopK<C>::kBuffer;
  __shared__ float lk_all[kMergeWarps][C], bk_all[kMergeWarps][B];
  __shared__ int64_t li_all[kMergeWarps][C], bi_all[kMergeWarps][B];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t q = int64_t(blockIdx.x) * kMergeWarps + warp;
  if (q >= queries) return;  // whole warps only
  WarpTopK<C> top(lk_all[warp], li_all[warp], bk_all[warp], bi_all[warp], kc);
  top.reset(lane);
  const float* in_k = slot_keys + q * per_query;
  const int64_t* in_i = slot_ranks + q * per_query;
  for (int64_t j0 = 0; j0 < per_query; j0 += 32) {
    const int64_t j = j0 + lane;
    const float key = j < per_query ? in_k[j] : kInf;
    const int64_t id = j < per_query ? in_i[j] : kNoId;
    top.offer(
        key, [&](const auto& t) { return t.beats(key, id); }, [&] { return id; }, lane);
  }
  top.flush(lane);
  top.store(keys + q * kc, ranks + q * kc, kc, lane);
}

__global__ void lookup_kernel(const int64_t* ranks, int64_t count, const int64_t* table, int64_t none, int64_t* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t r = ranks[i];
  out[i] = r < 0 || r == kNoId ? none : table[r];
}

/// A warp per 32 positions: each lane tests its row's id against the bitmap, the ballot is the
/// mask word (a warp covers whole words, so no word is written twice).
__global__ void mark_kernel(const int64_t* uid_of_rank, const int64_t* rank_of_pos, int64_t count,
                            const uint64_t* bitmap, int64_t limit, uint32_t* mask) {
  const int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  bool allowed = false;
  if (p < count) {
    const int64_t id = uid_of_rank[rank_of_pos[p]];
    allowed = id >= 0 && id < limit && ((bitmap[id >> 6] >> (id & 63)) & 1u);
  }
  const unsigned word = __ballot_sync(kFull, allowed);
  if ((threadIdx.x & 31) == 0 && p < count) mask[p >> 5] = word;
}

__global__ void l1_keys_kernel(const float* Q, const float* X, int64_t d, const int64_t* pos, int64_t rows, int64_t kc,
                               float* keys) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * kc) return;
  const int64_t p = pos[i];
  if (p == kNoId) {
    keys[i] = kInf;
    return;
  }
  // One thread, columns in order: the same float32 sum as the k-NN's l1 tile (l1_tile.cuh).
  const float* q = Q + (i / kc) * d;
  const float* x = X + p * d;
  float acc = 0.f;
  for (int64_t t = 0; t < d; ++t) acc += fabsf(q[t] - x[t]);
  keys[i] = acc;
}

__global__ void finish_kernel(const int64_t* ranks, const float* keys, int64_t count, const int64_t* uid_of_rank,
                              IvfValue map, float worst, int64_t* ids, float* values) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t r = ranks[i];
  const bool empty = r < 0 || r == kNoId;
  const float k = keys[i];
  float v = k;
  if (map == IvfValue::root) v = sqrtf(k);
  if (map == IvfValue::cosine) v = 1.0f - k * 0.5f;
  if (map == IvfValue::negate) v = -k;
  ids[i] = empty ? -1 : uid_of_rank[r];
  values[i] = empty ? worst : v;
}

}  // namespace

void ivf_merge(int capacity, int64_t queries, int64_t per_query, int kc, const float* slot_keys,
               const int64_t* slot_ranks, float* keys, int64_t* ranks, cudaStream_t s) {
  const unsigned blocks = unsigned((queries + kMergeWarps - 1) / kMergeWarps);
  switch (capacity) {
    case 32:
      merge_kernel<32><<<blocks, 32 * kMergeWarps, 0, s>>>(queries, per_query, kc, slot_keys, slot_ranks, keys, ranks);
      break;
    case 64:
      merge_kernel<64><<<blocks, 32 * kMergeWarps, 0, s>>>(queries, per_query, kc, slot_keys, slot_ranks, keys, ranks);
      break;
    case 128:
      merge_kernel<128><<<blocks, 32 * kMergeWarps, 0, s>>>(queries, per_query, kc, slot_keys, slot_ranks, keys, ranks);
      break;
    default:
      merge_kernel<256><<<blocks, 32 * kMergeWarps, 0, s>>>(queries, per_query, kc, slot_keys, slot_ranks, keys, ranks);
      break;
  }
  check_launch("ivf merge_kernel");
}

void ivf_lookup(const int64_t* ranks, int64_t count, const int64_t* table, int64_t none, int64_t* out, cudaStream_t s) {
  if (count == 0) return;
  lookup_kernel<<<unsigned((count + 255) / 256), 256, 0, s>>>(ranks, count, table, none, out);
  check_launch("ivf lookup_kernel");
}

void ivf_mark_allowed(const int64_t* uid_of_rank, const int64_t* rank_of_pos, int64_t count, const uint64_t* bitmap,
                      int64_t limit, uint32_t* mask, cudaStream_t s) {
  if (count == 0) return;
  mark_kernel<<<unsigned((count + 255) / 256), 256, 0, s>>>(uid_of_rank, rank_of_pos, count, bitmap, limit, mask);
  check_launch("ivf mark_kernel");
}

void ivf_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* pos, int64_t rows, int64_t kc, float* keys,
                 cudaStream_t s) {
  const int64_t count = rows * kc;
  if (count == 0) return;
  l1_keys_kernel<<<unsigned((count + 255) / 256), 256, 0, s>>>(Q, X, d, pos, rows, kc, keys);
  check_launch("ivf l1_keys_kernel");
}

void ivf_finish(const int64_t* ranks, const float* keys, int64_t count, const int64_t* uid_of_rank, IvfValue map,
                float worst, int64_t* ids, float* values, cudaStream_t s) {
  if (count == 0) return;
  finish_kernel<<<unsigned((count + 255) / 256), 256, 0, s>>>(ranks, keys, count, uid_of_rank, map, worst, ids, values);
  check_launch("ivf finish_kernel");
}

}  // namespace simkit::detail::cuda
