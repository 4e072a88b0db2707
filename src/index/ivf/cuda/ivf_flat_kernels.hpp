#pragma once
// The ivf_flat list scan (ivf_flat_scan.cu) and what its host side (ivf_flat_search.cpp) hands it.
//
// Device layout of the lists: rows padded to dp = 4 ceil(d / 4) columns with zeros and stored
// interleaved, 32 rows to a group: group g holds, for each 4-column chunk c, the 32 rows' float4
// side by side (inter[(g * dp4 + c) * 32 + lane]). A warp reads one chunk of 32 rows as one
// 512-byte coalesced load, each lane owning a row: the layout FAISS and cuVS use for the same
// reason. Each list starts a new group; the padding rows are never offered.
//
// Candidates carry the row's rank among the index's ids (rank_of_pos): ordered like the ids, so
// (key, rank) ties break to the lower id, and dense, so the row is found again (pos_of_rank)
// for the float64 re-score and its id (uid_of_rank) for the output.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// How a scan turns a query's accumulated product into a key (smaller is better).
enum class IvfKey : int {
  sqdist,  // |x|^2 - 2 q.x    (aux = |x|^2; |q|^2 is the same for every row of the query)
  scaled,  // -(q.x) / |x|     (aux = 1 / |x|: cosine; pearson with centred queries)
  dot,     // -(q.x)
  l1,      // sum |q - x|, summed in column order like the k-NN l1 kernel, so the values agree
};

/// Queries scanned together by one block (each warp then selects for one of them).
constexpr int kScanQueries = 8;

struct IvfScanArgs {
  const float4* inter;         // the interleaved lists, from group `group_base` on
  int64_t group_base;          // 0, or the first group of the segment streamed in (ivf_flat_search.cpp)
  int64_t dp4;                 // float4 chunks per row
  const int64_t* group_start;  // nlist + 1: each list's first group
  const int64_t* row_start;    // nlist + 1: each list's first row (position)
  const float* aux;            // per position, as IvfKey says (unused for dot, l1)
  const int64_t* rank_of_pos;  // per position
  const float4* queries;       // prepared queries, m x dp4
  const int64_t* item_list;    // per work item: the list,
  const int64_t* item_first;   //   its first entry in `pairs`,
  const int32_t* item_count;   //   and how many queries (<= kScanQueries)
  const int64_t* pairs;        // (query * nprobe + probe), grouped by list
  int64_t nprobe;
  int kc;               // candidates kept per (query, probe)
  float* slot_keys;     // (query * nprobe + probe) * kc + i
  int64_t* slot_ranks;  //   the same, ranks; an empty slot is (+inf, INT64_MAX)
  /// When set, a row is a candidate only if bit (position) is set (word position / 32): an
  /// allow-list tested inside the scan.
  const uint32_t* mask = nullptr;
};

/// One block per work item. capacity = select_capacity(kc) <= kIvfMaxCandidates
/// (ivf_driver_kernels.hpp).
void ivf_scan(IvfKey key, int capacity, int64_t items, const IvfScanArgs& a, cudaStream_t s);

/// Prepared queries (m x dp, zero padded) from the originals (m x d): centred when `centre`.
void ivf_prepare_queries(const float* Q, int64_t m, int64_t d, int64_t dp, bool centre, float* out, cudaStream_t s);

}  // namespace simkit::detail::cuda
