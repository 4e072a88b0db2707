// The flat index appends: add() writes its rows after the stored ones, remove() moves the last
// row into each hole, and an id -> row map finds them, so a write costs its batch, not the index.
// Rows are then in id order only until a removal or a smaller id arrives. While they are, knn's
// tie rule (equal values by row) is the contract's (by id) and the result is knn's with rows
// renamed to ids; after, search_rows re-ranks ties by id (index/filtered_search.hpp). On the GPU
// the rows stay resident between searches and follow the writes row by row (resident_rows.hpp);
// on several GPUs each holds a contiguous slice of them, uploaded again after a write.

#include "index/flat/flat_index.hpp"
#include "index/search_params.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/metric_plan.hpp"
#include "core/parallel.hpp"
#include "core/shard_merge.hpp"
#include "core/shards.hpp"
#include "index/filtered_search.hpp"
#include "index/id_filter.hpp"
#include "index/id_map.hpp"
#include "index/index_support.hpp"
#include "index/resident_rows.hpp"
#include "index/shard_hooks.hpp"

namespace simkit::detail {

namespace {

class FlatIndex final : public Index, public ShardableIndex {
 public:
  FlatIndex(int64_t dim, Metric metric) : dim_(dim), metric_(metric) {}

  std::string type() const override { return "flat"; }
  std::string description() const override { return "flat"; }
  int64_t dim() const noexcept override { return dim_; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return size_locked();
  }
  bool is_trained() const override { return true; }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    return vectors_.size() * sizeof(float) + row_ids_.size() * sizeof(int64_t) + ids_.memory_bytes();
  }
  int64_t next_id() const override {
    std::shared_lock lock(mutex_);
    return ids_.next();
  }

  void train(const Context& ctx, MatrixView<const float> X) override { check_rows(ctx, X, dim_, "train"); }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, dim_, "add");
    std::unique_lock lock(mutex_);
    const std::vector<int64_t> ids = ids_.assign(given, X.rows);
    const int64_t n = size_locked();
    if (!append_in_id_order(X, ids, 0, vectors_, row_ids_, ids_)) ascending_ = false;
    device_.mark_from(n);
    drop_shards();
  }

  void reserve(int64_t rows) override {
    Index::reserve(rows);  // the check
    std::unique_lock lock(mutex_);
    vectors_.reserve(size_t(rows) * size_t(dim_));
    row_ids_.reserve(size_t(rows));
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    check_remove_ids(gone);
    std::unique_lock lock(mutex_);
    const size_t d = static_cast<size_t>(dim_);
    int64_t removed = 0;
    for (int64_t i = 0; i < gone.size; ++i) {
      const std::optional<int64_t> row = ids_.erase(gone[i]);
      if (!row) continue;
      ++removed;
      const int64_t last = size_locked() - 1;
      if (*row != last) {  // the last row fills the hole
        std::copy_n(vectors_.data() + static_cast<size_t>(last) * d, d,
                    vectors_.data() + static_cast<size_t>(*row) * d);
        row_ids_[size_t(*row)] = row_ids_[size_t(last)];
        ids_.set(row_ids_[size_t(*row)], *row);
        device_.mark_row(*row);
        ascending_ = false;
      }
      row_ids_.pop_back();
      vectors_.resize(static_cast<size_t>(last) * d);
    }
    if (size_locked() <= 1) ascending_ = true;
    if (removed > 0) drop_shards();
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, dim_, k, values, ids);
    own_search_params<SearchParams>(sp, "flat", "SearchParams");  // flat has no knobs of its own
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    const MatrixView<const float> stored{vectors_.data(), size_locked(), dim_};
    const Device device = stored.rows > 0 ? backend_for(ctx, {Q.where, values.where}, "search").device() : Device::cpu;
    IdRows rows{stored, stored, row_ids_.data(), ascending_};
    std::vector<uint64_t> mask;
    if (sp.allowed) {  // a few rows are gathered, many are searched in place (filter_in_scan)
      if (filter_in_scan(device, sp.allowed->size, stored.rows, stored.rows, k)) {
        mask.assign(size_t((stored.rows + 63) / 64), 0);
        rows.allowed = IdFilter(*sp.allowed).mark(row_ids_.data(), stored.rows, 0, mask.data());
        rows.mask = mask.data();
      }
      if (rows.allowed < k)  // the scan needs k allowed rows; fewer are cheap to gather
        return search_allowed(ctx, Q, k, metric_, stored, allowed_rows_mapped(ids_, *sp.allowed), values, ids,
                              sp.stats);
    }
    if (!sp.allowed && stored.rows > 0)
      if (const std::vector<Context> shards = gpu_shard_contexts(ctx, {Q.where, values.where, ids.where});
          !shards.empty())
        return search_shards(shards, Q, k, values, ids, sp.stats);
    // On the GPU the rows stay resident between searches (uploaded on the first one), unless
    // they are too many for it: they then stream from host memory at each search.
    std::shared_ptr<const DeviceMatrix<float>> resident;
    if (device == Device::gpu) resident = device_.sync(ctx, stored);
    if (resident) rows.rows = MatrixView<const float>{resident->view().data, stored.rows, dim_, Memory::device};
    search_rows(ctx, Q, k, metric_, rows, values, ids, sp.stats);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    IndexFileWriter w;
    // The file keeps rows in id order (load relies on it), whatever order they have here.
    const int64_t n = size_locked();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    if (!ascending_)
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return row_ids_[size_t(a)] < row_ids_[size_t(b)]; });
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) ids[size_t(r)] = row_ids_[size_t(order[size_t(r)])];
    write_common(w, "flat", metric_, dim_, n, ids_.next());
    w.add("ids", ids.data(), ids.size() * sizeof(int64_t));
    std::vector<float> sorted;  // the writer keeps a pointer until write(): it must outlive it
    if (!ascending_) {
      sorted.resize(vectors_.size());
      const size_t d = static_cast<size_t>(dim_);
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(vectors_.data() + static_cast<size_t>(order[size_t(r)]) * d, d, sorted.data() + size_t(r) * d);
    }
    const std::vector<float>& rows = ascending_ ? vectors_ : sorted;
    w.add("vectors", rows.data(), rows.size() * sizeof(float));
    w.write(path);
  }

  // A shard (index/shard_hooks.hpp): nothing to learn; rows found through the id map.
  TrainingRows training_draw(int64_t) const override { return {}; }
  void train_on_rows(const Context&, MatrixView<const float>, int64_t) override {}
  std::vector<float> trained_state() const override { return {}; }
  void stored_rows(ArrayView<const int64_t> ids, MatrixView<float> out) const override {
    SIMKIT_EXPECTS(out.rows == ids.size && out.cols == dim_ && out.where == Memory::host, invalid_argument,
                   "stored_rows: the output must be host ", ids.size, " x ", dim_);
    std::shared_lock lock(mutex_);
    for (int64_t i = 0; i < ids.size; ++i) {
      const std::optional<int64_t> row = ids_.find(ids[i]);
      SIMKIT_EXPECTS(row.has_value(), invalid_argument, "stored_rows: id ", ids[i], " is not stored");
      std::copy_n(vectors_.data() + *row * dim_, dim_, out.row(i));
    }
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", h.size);
    if (!std::is_sorted(ids.begin(), ids.end())) refuse_file(f, "the flat index's ids are not in order");
    vectors_ = read_array<float>(f, "vectors", h.size * h.dim);
    check_finite_section(f, "vectors", vectors_);
    ids_.reset(ids, h.next_id, f.path());
    row_ids_ = std::move(ids);
    ascending_ = true;
  }

 private:
  int64_t size_locked() const noexcept { return static_cast<int64_t>(row_ids_.size()); }

  /// Several GPUs (Context::gpu_ids): a contiguous slice of the rows resident on each, searched
  /// concurrently, the lists merged by (key, id): one GPU's answer. Under the shared lock.
  void search_shards(const std::vector<Context>& shards, MatrixView<const float> Q, int64_t k, MatrixView<float> values,
                     MatrixView<int64_t> ids, SearchStats* stats) const {
    const int64_t n = size_locked(), P = int64_t(shards.size());
    // The device copies of this split (a split into P shards has its own: a slice's rows depend on P).
    std::vector<ResidentRows*> copies;
    {
      std::lock_guard guard(shards_mutex_);
      auto& mine = shard_device_[P];
      while (int64_t(mine.size()) < P) mine.push_back(std::make_unique<ResidentRows>());
      for (const auto& r : mine) copies.push_back(r.get());
    }
    std::vector<ShardTopK> parts(shards.size());
    run_on_shards(P, [&](int64_t s) {
      const RowRange r = shard_rows(n, P, s);
      ShardTopK& part = parts[size_t(s)];
      const int64_t ks = std::min(k, r.rows);
      part.values = Matrix<float>(Q.rows, ks);
      part.ids = Matrix<int64_t>(Q.rows, ks);
      if (ks == 0) return;
      const MatrixView<const float> host{vectors_.data() + r.first * dim_, r.rows, dim_};
      IdRows rows{host, host, row_ids_.data() + r.first, ascending_};
      std::shared_ptr<const DeviceMatrix<float>> on;  // kept alive through the search
      if (shards[size_t(s)].device == Device::gpu) on = copies[size_t(s)]->sync(shards[size_t(s)], host);
      if (on) rows.rows = MatrixView<const float>{on->view().data, r.rows, dim_, Memory::device};
      search_rows(shards[size_t(s)], Q, ks, metric_, rows, part.values.view(), part.ids.view());
    });
    const auto row_of = [&](int64_t id) -> const float* { return vectors_.data() + *ids_.find(id) * dim_; };
    merge_shard_results(plan_metric(metric_), Q, row_of, parts, k, worst_value(metric_), values, ids,
                        cpu_threads(shards[0]));
    if (stats) {
      stats->candidates += Q.rows * n;
      if (n < k) stats->short_rows += Q.rows;
    }
  }

  /// Writes move rows between the shards' slices: their GPU copies are uploaded again.
  void drop_shards() {
    std::lock_guard guard(shards_mutex_);
    for (const auto& split : shard_device_)
      for (const auto& r : split.second) r->drop();
  }

  int64_t dim_;
  Metric metric_;
  std::vector<float> vectors_;    // size() x dim, in the order written (see above)
  std::vector<int64_t> row_ids_;  // the id of each row
  IdMap ids_;                     // id -> row
  bool ascending_ = true;         // row_ids_ ascends
  ResidentRows device_;
  mutable std::mutex shards_mutex_;  // guards shard_device_'s growth
  /// Multi-GPU searches' device copies: per shard count P, one per shard (its slice of the rows).
  mutable std::map<int64_t, std::vector<std::unique_ptr<ResidentRows>>> shard_device_;
  mutable std::shared_mutex mutex_;
};

}  // namespace

std::unique_ptr<Index> make_flat_index(int64_t dim, Metric metric) { return std::make_unique<FlatIndex>(dim, metric); }

std::unique_ptr<Index> load_flat_index(const IndexFile& f) {
  const CommonHeader h = read_common(f, "flat");
  auto index = std::make_unique<FlatIndex>(h.dim, h.metric);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
