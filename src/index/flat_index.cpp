// The flat index keeps its rows sorted by id. knn ranks equal values by row, so with rows in id
// order its tie rule is the contract's "lower id first", and the flat result is knn's result
// with row numbers turned into ids (nothing to turn when the ids are 0 .. n-1): search_rows
// (index/filtered_search.hpp), over all rows, or over those an allow-list selects.

#include "index/flat_index.hpp"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "index/filtered_search.hpp"
#include "index/id_set.hpp"
#include "index/index_support.hpp"

namespace simkit::detail {

namespace {

class FlatIndex final : public Index {
 public:
  FlatIndex(int64_t dim, Metric metric) : dim_(dim), metric_(metric) {}

  std::string type() const override { return "flat"; }
  std::string description() const override { return "flat"; }
  int64_t dim() const noexcept override { return dim_; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return ids_.size();
  }
  bool is_trained() const override { return true; }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    return vectors_.size() * sizeof(float) + static_cast<size_t>(ids_.size()) * sizeof(int64_t);
  }
  int64_t next_id() const override {
    std::shared_lock lock(mutex_);
    return ids_.next();
  }

  void train(const Context& ctx, MatrixView<const float> X) override { check_rows(ctx, X, dim_, "train"); }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, dim_, "add");
    std::unique_lock lock(mutex_);
    std::vector<int64_t> ids = ids_.assign(given, X.rows);
    // Merge the new rows, in id order, into the stored ones.
    std::vector<int64_t> order(ids.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
    const std::vector<int64_t>& old = ids_.sorted();
    std::vector<float> merged(vectors_.size() + static_cast<size_t>(X.rows * dim_));
    size_t i = 0, j = 0, out = 0;
    const size_t d = static_cast<size_t>(dim_);
    while (i < old.size() || j < order.size()) {
      const bool take_old = j == order.size() || (i < old.size() && old[i] < ids[order[j]]);
      const float* src = take_old ? vectors_.data() + i * d : X.row(order[j]);
      std::copy_n(src, d, merged.data() + out * d);
      take_old ? ++i : ++j;
      ++out;
    }
    vectors_ = std::move(merged);
    ids_.insert(ids);
    drop_device_copy();
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    std::unique_lock lock(mutex_);
    const std::vector<int64_t>& held = ids_.sorted();
    std::vector<int64_t> sorted_gone(gone.data, gone.data + gone.size);
    std::sort(sorted_gone.begin(), sorted_gone.end());
    const size_t d = static_cast<size_t>(dim_);
    size_t out = 0;
    for (size_t r = 0; r < held.size(); ++r) {
      if (std::binary_search(sorted_gone.begin(), sorted_gone.end(), held[r])) continue;
      if (out != r) std::copy_n(vectors_.data() + r * d, d, vectors_.data() + out * d);
      ++out;
    }
    vectors_.resize(out * d);
    drop_device_copy();
    return ids_.erase(gone);
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, dim_, k, values, ids);
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    const MatrixView<const float> stored{vectors_.data(), ids_.size(), dim_};
    if (sp.allowed)
      return search_allowed(ctx, Q, k, metric_, stored, allowed_rows_sorted(ids_.sorted(), *sp.allowed), values, ids,
                            sp.stats);
    // On the GPU the rows stay resident between searches (uploaded on the first one).
    std::shared_ptr<const DeviceMatrix<float>> resident;
    if (ids_.size() > 0 && backend_for(ctx, {Q.where, values.where}, "search").device() == Device::gpu)
      resident = rows_on_device(ctx);
    search_rows(ctx, Q, k, metric_, resident ? resident->view() : stored, ids_.sorted(), values, ids, sp.stats);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    IndexFileWriter w;
    write_common(w, "flat", metric_, dim_, ids_.size(), ids_.next());
    w.add("ids", ids_.sorted().data(), ids_.sorted().size() * sizeof(int64_t));
    w.add("vectors", vectors_.data(), vectors_.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", h.size);
    if (!std::is_sorted(ids.begin(), ids.end())) refuse_file(f, "the flat index's ids are not in order");
    vectors_ = read_array<float>(f, "vectors", h.size * h.dim);
    check_finite_section(f, "vectors", vectors_);
    ids_.reset(std::move(ids), h.next_id, f.path());
  }

 private:
  std::shared_ptr<const DeviceMatrix<float>> rows_on_device(const Context& ctx) const {
    std::lock_guard g(device_mutex_);
    if (!device_rows_ || device_id_ != ctx.gpu_id) {
      device_rows_ =
          std::make_shared<const DeviceMatrix<float>>(ctx, MatrixView<const float>{vectors_.data(), ids_.size(), dim_});
      device_id_ = ctx.gpu_id;
    }
    return device_rows_;
  }
  void drop_device_copy() {
    std::lock_guard g(device_mutex_);
    device_rows_.reset();
  }

  int64_t dim_;
  Metric metric_;
  std::vector<float> vectors_;  // size() x dim, in id order
  IdSet ids_;
  mutable std::shared_mutex mutex_;
  mutable std::mutex device_mutex_;
  mutable std::shared_ptr<const DeviceMatrix<float>> device_rows_;
  mutable int device_id_ = -1;
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
