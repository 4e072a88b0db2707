#pragma once
// One metric, one pair of point sets, computed block by block: the unit of work the CPU
// pairwise and k-NN loops hand to their threads.
//
// Tile sizes. A block is at most kQueryTile x kBaseTile = 256 x 1024 floats = 1 MiB: it fits
// the L2 of current x86 cores (1-2 MiB) so the epilogue and the k-NN selection read the
// product while it is still cached, and it is large enough for sgemm to run near its peak
// (packing costs O((256 + 1024) d) against O(256 x 1024 x d) multiply-adds, < 0.5%). Block
// boundaries sit at fixed multiples of the tile sizes, independent of the thread count, so
// every value comes out of the same computation whatever Context::threads is.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "cpu/dot_family.hpp"

namespace simkit::detail::cpu {

inline constexpr int64_t kQueryTile = 256;
inline constexpr int64_t kBaseTile = 1024;

class BlockEngine {
 public:
  /// Per-thread scratch: centred copies of the current tiles (pearson) and an output block.
  struct Workspace {
    std::vector<float> q_centred, x_centred, block;
    int64_t q_at = -1, q_rows = 0, x_at = -1, x_rows = 0;  // what the centred copies hold
  };

  /// Computes the row statistics the plan needs (over `threads` threads).
  BlockEngine(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, int threads);
  /// With the statistics already known (an index keeps its rows'); x_stats must outlive the engine.
  BlockEngine(const MetricPlan& plan, MatrixView<const float> Q, RowStats q_stats, MatrixView<const float> X,
              const RowStats& x_stats);
  // x_stats_ may point into the engine itself: not copyable.
  BlockEngine(const BlockEngine&) = delete;
  BlockEngine& operator=(const BlockEngine&) = delete;

  int64_t dim() const noexcept { return Q_.cols; }

  /// out[i * ldo + j] = metric(Q row i0 + i, X row j0 + j) for i < tq, j < tx. With
  /// `squared`, a rooted metric (l2) yields what it ranks, the squared distance, instead.
  void compute(Workspace& ws, int64_t i0, int64_t tq, int64_t j0, int64_t tx, float* out, int64_t ldo,
               bool squared = false) const;

 private:
  const float* query_rows(Workspace& ws, int64_t i0, int64_t tq) const;
  const float* base_rows(Workspace& ws, int64_t j0, int64_t tx) const;

  MetricPlan plan_;
  MatrixView<const float> Q_, X_;
  RowStats q_stats_, x_own_;
  const RowStats* x_stats_;
  double tau_;
};

}  // namespace simkit::detail::cpu
