#pragma once
// What an ivf_flat index stores, in the form both backends scan (index/ivf/ivf_searchers.hpp):
// the cells and list arena (ivf_core.hpp, list_arena.hpp) plus, per arena row, the vector as
// given and the statistics the metric's epilogue needs. The index (ivf_flat_index.cpp) changes
// it only under its exclusive lock; a search reads it under the shared lock.
//
// The rows are kept as given, not normalised: the final float64 re-score then sees exactly what
// simkit::knn sees, which is what makes nprobe = nlist return the flat result bit for bit. The
// per-row norms the scan's epilogue needs (cosine: 1/|x|, pearson: the mean and 1/|x - mean|,
// l2: |x|^2) are computed once at add time instead. The CPU scans a list's block with one sgemm
// per tile of it (rows begin[l] .. end[l] of the arena, in id order).

#include <cstdint>
#include <memory>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/row_stats.hpp"
#include "index/ivf/ivf_core.hpp"

namespace simkit::detail {

struct IvfLists : IvfCore {
  std::vector<float> vectors;  // arena rows x dim
  RowStats stats;              // per arena row, what plan's epilogue needs (core/row_stats.hpp)

  /// Every arena row (list l is rows arena.begin[l] .. arena.end[l] of it).
  MatrixView<const float> rows() const noexcept { return {vectors.data(), arena.arena_rows(), dim}; }
};

/// The arena's view of IvfLists' per-row arrays (list_arena.hpp).
class IvfFlatColumns final : public ListArena::Columns {
 public:
  explicit IvfFlatColumns(IvfLists& L) : L_(L) {}
  void resize(int64_t rows) override;
  void copy(int64_t from, int64_t to) override;
  void gather(const std::vector<int64_t>& from) override;
  /// Writes row x of X, with its statistics from `stats` (row_stats of X), at arena row `at`.
  void put(int64_t at, MatrixView<const float> X, const RowStats& stats, int64_t x);

 private:
  IvfLists& L_;
};

/// L in compact form, for readers that need it (the GPU copy): L itself when it is compact, else
/// a compact copy kept in `holder`.
const IvfLists& compact_view(const IvfLists& L, std::unique_ptr<IvfLists>& holder);

/// L's rows split into `shards` compact IvfLists with L's cells, one per GPU of a multi-GPU
/// search: shard s holds slice s (core/shards.hpp's shard_rows) of every list, in id order, so
/// each probe scans a part of the same lists on every GPU.
std::vector<std::unique_ptr<IvfLists>> split_lists(const IvfLists& L, int64_t shards);

}  // namespace simkit::detail
