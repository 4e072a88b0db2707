#pragma once
// The Index half that ivf_flat and ivf_pq share: the id map, the lock, training the cells on a
// sample, add (rows placed in their cells' lists, merged by id into the arena) and remove (each
// id's list from the map, one pass per list), the allow-list's rows and scan mask, and the
// sections of the file both write. A family supplies what differs: the rows k-means trains on,
// what else it learns (ivf_pq's code books), how a new row is prepared and stored, its search.

#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/index.hpp>

#include "index/filtered_search.hpp"
#include "index/id_filter.hpp"
#include "index/id_map.hpp"
#include "index/index_file.hpp"
#include "index/index_support.hpp"
#include "index/ivf/ivf_core.hpp"
#include "index/shard_hooks.hpp"

namespace simkit::detail {

/// The build parameters both families read (IvfFlatParams, IvfPqParams).
struct IvfCellParams {
  int64_t nlist = 0;
  int64_t nprobe = 0;
  int64_t train_sample = 0;  // rows drawn for training; 0: the family's rule
  int iterations = 25;
  uint64_t seed = 0;
};

class IvfIndexBase : public Index, public ShardableIndex {
 public:
  int64_t dim() const noexcept override { return core().dim; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override;
  bool is_trained() const override;
  int64_t next_id() const override;
  void train(const Context& ctx, MatrixView<const float> X) override;
  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> ids) override;
  int64_t remove(ArrayView<const int64_t> ids) override;

  // A shard of a sharded index (index/shard_hooks.hpp): train() cut at its sample.
  TrainingRows training_draw(int64_t n) const override;
  void train_on_rows(const Context& ctx, MatrixView<const float> T, int64_t n) override;
  std::vector<float> trained_state() const override;
  void stored_rows(ArrayView<const int64_t> ids, MatrixView<float> out) const override;
  IvfProbes probes(int64_t asked) const { return {nprobe(asked), cells_.nlist}; }

 protected:
  IvfIndexBase(Metric metric, const IvfCellParams& cells) : metric_(metric), cells_(cells) {}

  virtual IvfCore& core() noexcept = 0;
  virtual const IvfCore& core() const noexcept = 0;
  /// The family's per-row arrays, for the arena to move.
  virtual ListArena::Columns& columns() = 0;
  /// Rows the training sample contributes before k-means: training's `cap` default, and the
  /// rows themselves as k-means sees them (centred, or prepared for codes).
  virtual int64_t default_sample() const = 0;
  /// T itself, or rows made from it into `holder` (and a view of them).
  virtual MatrixView<const float> training_rows(const Context& ctx, MatrixView<const float> T,
                                                Matrix<float>& holder) const = 0;
  /// After the centroids are set and the lists emptied, with the rows training_rows made (ivf_pq:
  /// its code books, from them). Progress from 0.5 on is the family's.
  virtual void trained(const Context& ctx, Matrix<float>& made) = 0;
  /// Prepares the n rows of an add (norms, codes) and returns each one's cell.
  virtual std::vector<int64_t> stage(const Context& ctx, MatrixView<const float> X) = 0;
  /// Writes staged row i (of cell `list`) at arena row `at`.
  virtual void put(int64_t at, int64_t i, int64_t list) = 0;
  /// Forgets the staging of the last add.
  virtual void unstage() = 0;
  /// The family's trained state beyond the centroids (ivf_pq: its code books).
  virtual void append_trained_state(std::vector<float>&) const {}
  /// The row stored at arena row `at` as given, or null where the family keeps none.
  virtual const float* stored_row(int64_t at) const = 0;

  int64_t nprobe(int64_t asked) const { return resolve_nprobe(asked, cells_.nprobe, cells_.nlist); }
  /// train()'s refusals that depend on the base's size alone.
  void check_trainable(int64_t n) const;
  /// train() on T, the sample train() draws (or the whole base): what follows the draw.
  void train_drawn(const Context& ctx, MatrixView<const float> T);
  /// The held rows of the allowed ids (the arena's rows), ids ascending.
  AllowedRows allowed_rows(ArrayView<const int64_t> allowed) const;
  /// Whether the planner tests `allowed` inside a scan of `lists` lists for k results, rather
  /// than gathering its rows (filter_in_scan: the rows those lists hold on average).
  bool scan_filters(Device device, ArrayView<const int64_t> allowed, int64_t lists, int64_t k) const;

  /// The sections both families write: header, description, trained, centroids, offsets, ids
  /// (compact order).
  void write_lists(IndexFileWriter& w, const std::string& type, const std::string& description,
                   const std::vector<int64_t>& compact_ids, std::vector<int64_t>& offsets_holder) const;
  /// Reads them back and checks them; the arena then holds compact lists and the id map each
  /// id's list. The family reads its own columns (compact) after.
  void read_lists(const IndexFile& f, const CommonHeader& h);

  Metric metric_;
  IvfCellParams cells_;
  IdMap ids_;
  mutable std::shared_mutex mutex_;
};

}  // namespace simkit::detail
