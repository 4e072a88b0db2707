#pragma once
// ivf_pq split over several GPUs of one process (Context::gpu_ids). Each GPU holds slice s of
// every list (split_lists in ivf_pq_lists.hpp) and the search runs in the two rounds of a
// sharded search (index/shard_hooks.hpp explains why ivf_pq needs two):
//   1. every GPU scans its slices of the probed lists and keeps its best `keep` by (code
//      estimate, id); a row's estimate depends on the query, its cell and its codes alone, so
//      the merge of those lists by (estimate, id) is the best `keep` one GPU's scan selects;
//   2. without a re-rank those are the answer; with one, they are ranked on the host by the
//      rule the one-device search applies to the same candidates -- the GPU's (every candidate
//      by knn's float64 key, l1 by the GPU k-NN's float32 sum) when every shard's scan ran on
//      its GPU, the CPU's (a float32 shortlist, then float64 keys) when the CPU backend served
//      them (index/ivf/cpu/ivf_pq_search.cpp).
// The answer is one GPU's, bit for bit, wherever one GPU would scan on the device; an index
// whose codes exceed half of one GPU's working budget is scanned on the device by the split,
// where one GPU alone hands it to the CPU backend.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

#include "index/ivf/ivf_pq_lists.hpp"

namespace simkit::detail {

struct PqShardSearch {
  const IvfPqLists* whole = nullptr;                       // the index's lists (round 2 reads its rows)
  const std::vector<std::unique_ptr<IvfPqLists>>* slices;  // one per shard context
  std::function<int64_t(int64_t id)> arena_row;            // the row of a stored id in whole's arena
  MatrixView<const float> Q;                               // host
  int64_t k = 0, nprobe = 0;
  int64_t keep = 0;          // the candidates round 1 keeps: the re-rank's depth, or k without one
  bool rerank = false;       // whole keeps its vectors and the search re-ranks
  MatrixView<float> values;  // host, Q.rows x k
  MatrixView<int64_t> ids;
  int64_t* short_rows = nullptr;  // += queries padded
  int64_t* candidates = nullptr;  // += rows of the probed lists, over the queries
};

/// The search above on `shards` (gpu_shard_contexts, or CPU contexts in the tests), one
/// concurrently per shard, merged on the host.
void ivf_pq_search_shards(const std::vector<Context>& shards, const PqShardSearch& s, int threads);

}  // namespace simkit::detail
