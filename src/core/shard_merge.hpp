#pragma once
// Merging top-k lists found on shards of one base (the GPUs of a process, the ranks of an MPI
// job) into the top-k of the whole base, by knn's rule.
//
// A search ranks pairs by (float64 key, id), and a pair's key depends on the query and the row
// alone. So a shard's best k are the whole base's order restricted to its rows, the global best
// k lie in the union of the shards' lists, and a merge by (key, id) picks them in the order one
// search over the whole base gives, with the values that search gave. The float32 values alone
// would not do: two pairs whose float64 keys differ can round to the same value, and one search
// over the whole base orders them by key, not by id -- which is why merge_shard_results falls
// back to the keys wherever values tie. The merge is a balanced tree of pairwise stable merges
// (merge path's serial merge, core/merge_path.hpp), cut at k.

#include <cstdint>
#include <functional>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

/// The float64 key a search ranked the pair (q, x) by: the re-score's exact key, or for l1
/// (ranked on its float32 values) the value itself, negated for similarities.
double ranking_key(const MetricPlan& plan, const float* q, const float* x, int64_t d, float value);

/// One shard's result: m rows of `width` (<= k) entries, each row in (key, id) order, host
/// memory. Padded entries (id -1) come last in a row; their keys are ignored. `keys` is read by
/// merge_shard_topk only.
struct ShardTopK {
  std::vector<double> keys;  // m x width
  Matrix<float> values;      // m x width
  Matrix<int64_t> ids;       // m x width
};

/// The best k of the shards' lists for each of the m queries, by (key, id), written to values
/// and ids (host, m x k); slots no shard filled get id -1 and `pad_value`. Ids must not repeat
/// across shards.
void merge_shard_topk(const std::vector<ShardTopK>& shards, int64_t m, int64_t k, float pad_value,
                      MatrixView<float> values, MatrixView<int64_t> ids, int threads);

/// The same for lists ranked by knn's rule, without their keys: a value is its float64 key
/// mapped by a monotone function and rounded, so ordering by value is ordering by key except
/// among equal values. The lists are merged by (value, id); only runs of equal values that
/// reach the first k get their keys (ranking_key, from row_of(id), the stored row of an id)
/// and are re-sorted by (key, id). On spread-out data that is almost no key at all: the merge
/// costs what the lists' lengths do, where recomputing every key cost more than a GPU's share
/// of a 1M-row search (an id lookup and a float64 product per entry).
void merge_shard_results(const MetricPlan& plan, MatrixView<const float> Q,
                         const std::function<const float*(int64_t)>& row_of, const std::vector<ShardTopK>& shards,
                         int64_t k, float pad_value, MatrixView<float> values, MatrixView<int64_t> ids, int threads);

/// body(i) for i in [0, m) on `threads` OpenMP threads; defined in shard_merge.cpp so
/// that callers compiled without OpenMP still run it in parallel.
void parallel_rows(int64_t m, int threads, const std::function<void(int64_t)>& body);

}  // namespace simkit::detail
