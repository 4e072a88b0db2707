// The flat index keeps its rows sorted by id. knn ranks equal values by row, so with rows in id
// order its tie rule is the contract's "lower id first", and the flat result is knn's result
// with row numbers turned into ids (nothing to turn when the ids are 0 .. n-1).

#include "index/flat_index.hpp"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
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

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams&, MatrixView<float> values,
              MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, dim_, k, values, ids);
    std::shared_lock lock(mutex_);
    SearchOutput out(values, ids);
    const int64_t n = ids_.size();
    if (n == 0) {
      out.pad_all(metric_);
      out.deliver(ctx);
      return;
    }
    // The stored rows were checked when added or loaded, and Q by check_search: the backend's
    // k-NN runs directly, without knn()'s NaN scan of the whole base on every search.
    const detail::Backend& backend = backend_for(ctx, {Q.where, values.where}, "search");
    // On the GPU the rows stay resident between searches (uploaded on the first one).
    std::shared_ptr<const DeviceMatrix<float>> resident;
    MatrixView<const float> X{vectors_.data(), n, dim_};
    if (backend.device() == Device::gpu) {
      resident = rows_on_device(ctx);
      X = resident->view();
    }
    const MetricPlan plan = plan_metric(metric_);
    const std::vector<int64_t>& row_ids = ids_.sorted();
    const bool identity = row_ids.front() == 0 && row_ids.back() == n - 1;
    if (k <= n) {
      if (identity && values.where == Memory::device) {
        backend.knn(ctx, KnnArgs{Q, X, k, plan, values, ids});  // straight into the caller's device outputs
        return;
      }
      backend.knn(ctx, KnnArgs{Q, X, k, plan, out.values(), out.ids()});
    } else {
      Matrix<float> v(Q.rows, n);
      Matrix<int64_t> r(Q.rows, n);
      backend.knn(ctx, KnnArgs{Q, X, n, plan, v.view(), r.view()});
      out.pad_all(metric_);
      for (int64_t q = 0; q < Q.rows; ++q) {
        std::copy_n(v.data() + q * n, n, out.values().row(q));
        std::copy_n(r.data() + q * n, n, out.ids().row(q));
      }
    }
    if (!identity)
      for (int64_t e = 0; e < out.ids().size(); ++e)
        if (out.ids().data[e] >= 0) out.ids().data[e] = row_ids[static_cast<size_t>(out.ids().data[e])];
    out.deliver(ctx);
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
