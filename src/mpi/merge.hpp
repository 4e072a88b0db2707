#pragma once
// The merge every simkit::mpi search ends with (knn.cpp, sharded_index.cpp): each rank ranks
// its own candidates by (key, id), the root gathers the ranks' lists and merges them by the same
// rule. When a rank's list is the whole base's order restricted to its rows -- a pair's key
// depends on the query and the row alone -- the merge is the one-process order, bit for bit.

#include <cstdint>
#include <vector>

#include <mpi.h>

#include "core/metric_plan.hpp"

namespace simkit::mpi_detail {

/// One rank's ranked lists: `rows` rows (queries) of `width` entries, each row sorted by
/// (key, id) with its absent entries (id < 0) after the others. `extra` travels with each entry
/// (its float32 value, or a second key) and comes back with the entries the merge picks.
struct RankedLists {
  int64_t rows = 0, width = 0;
  std::vector<double> keys, extra;
  std::vector<int64_t> ids;

  RankedLists() = default;
  /// rows x width absent entries (key +inf, id -1, extra 0).
  RankedLists(int64_t rows, int64_t width);
  size_t at(int64_t i, int64_t j) const noexcept { return static_cast<size_t>(i * width + j); }
};

/// The merge's answer on the root: rows x k entries as RankedLists (absent past the entries the
/// ranks had), and the rank each came from (-1 where absent).
struct MergedLists : RankedLists {
  std::vector<int> source;
};

/// Collective: every rank passes its lists (the same `rows` on every rank; widths may differ) and
/// the root gets, for each row, the best k entries of all ranks' lists by (key, id), in order
/// (a P-way merge); the other ranks get an empty result. Gathered a batch of rows at a time,
/// since MPI counts are int.
MergedLists merge_on_root(MPI_Comm comm, int root, const RankedLists& mine, int64_t k);

/// The float64 key a k-NN result (q, x) with float32 `value` was ranked by: the re-score's
/// exact key (core/exact_metric.hpp), or for l1, ranked on its float32 values, the value itself.
double key_of(const detail::MetricPlan& plan, const float* q, const float* x, int64_t d, float value);

/// Whether `key` gives back the value a search returned for its pair, as it must when the key is
/// the one the search ranked by (compiled with libsimkit's flags; a mismatch means a build that
/// computes keys differently, and a merge on them could differ from one process).
bool key_gives_value(const detail::MetricPlan& plan, double key, float value);

}  // namespace simkit::mpi_detail
