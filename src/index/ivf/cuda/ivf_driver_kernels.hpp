#pragma once
// The shared GPU driver's kernels (ivf_driver_kernels.cu, used by ivf_device_search.cpp): what
// happens to either family's scan candidates, and the allow-list mask both scans test.
//
// Candidates carry the row's rank among the index's ids (rank_of_pos): ordered like the ids, so
// (key, rank) ties break to the lower id, and dense, so the row is found again (pos_of_rank)
// for the re-score and its id (uid_of_rank) for the output. An empty slot is (+inf, INT64_MAX).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// Largest kc the device scans keep (their list capacity); beyond it the host scans.
constexpr int kIvfMaxCandidates = 256;

/// Per query, the best kc of its nprobe * kc slot candidates by (key, rank).
void ivf_merge(int capacity, int64_t queries, int64_t per_query, int kc, const float* slot_keys,
               const int64_t* slot_ranks, float* keys, int64_t* ranks, cudaStream_t s);

/// out[i] = table[ranks[i]], or `none` where ranks[i] is INT64_MAX or -1.
void ivf_lookup(const int64_t* ranks, int64_t count, const int64_t* table, int64_t none, int64_t* out, cudaStream_t s);

/// mask bit p (word p / 32) := whether the id at position p (uid_of_rank[rank_of_pos[p]]) is set
/// in `bitmap` (bit id of word id / 64, ids below `limit`): an allow-list's dense id bitmap
/// turned into the scan's position mask on the device, instead of a pass over the ids on the
/// host per search. Every word of the mask is written.
void ivf_mark_allowed(const int64_t* uid_of_rank, const int64_t* rank_of_pos, int64_t count, const uint64_t* bitmap,
                      int64_t limit, uint32_t* mask, cudaStream_t s);

/// keys[i] = float32 column-order sum |q_t - x_t| of query i / kc against row pos[i] (the value
/// the GPU k-NN's l1 kernel gives), +inf where pos[i] is INT64_MAX.
void ivf_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* pos, int64_t rows, int64_t kc, float* keys,
                 cudaStream_t s);

/// How a scan key (sorted, smallest first) becomes the metric's value when it is not re-scored:
/// as is, its root (l2 from squared distance), 1 - key / 2 (cosine from the squared distance of
/// unit vectors), or negated (dot).
enum class IvfValue : int { plain, root, cosine, negate };

/// Final outputs from sorted (key or value, rank): ids[i] = uid_of_rank[ranks[i]], values[i]
/// mapped by `map`, or (-1, worst) where the rank is -1 (fewer than k candidates).
void ivf_finish(const int64_t* ranks, const float* keys, int64_t count, const int64_t* uid_of_rank, IvfValue map,
                float worst, int64_t* ids, float* values, cudaStream_t s);

}  // namespace simkit::detail::cuda
