#pragma once
// A GPU copy of an index's host rows that follows the index's writes row by row: appended and
// overwritten rows are uploaded at the next GPU search, not the whole array. The device array
// keeps spare capacity (x1.5 on growth), so a stream of appends re-uploads everything only
// O(log n) times. The index calls mark_*() under its exclusive lock and sync() under its shared
// lock; sync() serialises GPU searches on its own mutex while it uploads.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

class ResidentRows {
 public:
  /// Row r changed in place (a removal moved another row into it).
  void mark_row(int64_t r);
  /// Rows from r on are new or changed (appends).
  void mark_from(int64_t r);
  /// Forget the device copy (training, loading, a change of every row).
  void drop();

  /// A device matrix whose first n rows equal `host` (n x d) on ctx's GPU, uploaded where they
  /// changed (it may hold more rows: spare capacity). It stays valid while the index's shared
  /// lock is held. Null when a new copy would take more than kResidentShare of the GPU's free
  /// memory (with what the old copy holds): the caller then streams the rows from host memory,
  /// as knn does with a host base, rather than fail.
  std::shared_ptr<const DeviceMatrix<float>> sync(const Context& ctx, MatrixView<const float> host) const;

  /// The share of a GPU's free memory a resident copy may take: the rest is the searches'
  /// working memory (tiles of scores, candidate lists), which runs well at a quarter of an H100's
  /// 80 GB; a base beyond it streams in tiles with PCIe bounding the search instead.
  static constexpr double kResidentShare = 0.75;

  /// Whether a copy of `bytes` fits within kResidentShare of GPU `gpu`'s free memory plus `held`
  /// (what an old copy that it replaces holds there).
  static bool fits(int gpu, size_t bytes, size_t held);

 private:
  void drop_locked() const;
  void upload(const Context& ctx, MatrixView<const float> host, int64_t first, int64_t count) const;

  mutable std::mutex mutex_;
  mutable std::shared_ptr<DeviceMatrix<float>> rows_;  // capacity x d; the first n rows mirror the host
  mutable int gpu_ = -1;
  mutable std::vector<int64_t> changed_;  // rows marked one by one since the last sync
  mutable int64_t changed_from_ = 0;      // rows from here on changed; INT64_MAX: none
};

}  // namespace simkit::detail
