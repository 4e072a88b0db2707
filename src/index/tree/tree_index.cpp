// The tree index: the point tree of knn(method = tree) (a bounding-volume hierarchy over rows in
// Morton order, spatial/point_tree.hpp) as an index that takes writes without being rebuilt for
// each of them.
//
// The rows are one array: first the snapshot the tree was built over, in id order, then the
// tail, the rows added since, in the order written. A search walks the tree over the snapshot --
// rows removed since the build are masked out through the walk's row mask -- and searches the
// tail exactly by brute force (search_rows, flat's search), then merges the two lists. Removing a
// tail row moves the tail's last row into its hole, as flat does; removing a snapshot row clears
// its bit. The write that takes the tail or the removed rows past their limits (kTailFloor and
// below) rebuilds the tree from the live rows in id order, under the exclusive lock every write
// takes, so a search never sees a half-built tree and never builds one itself.
//
// Exactness: the tree ranks by (float64 squared distance, row) and its rows are in id order, so
// by (key, id); search_rows ranks the tail the same way (knn's re-score, ties by id), and both
// report float(value of the key). Equal values may hide different keys, so the merge settles a
// tie between the lists by the keys, recomputed, then by id: the result is flat's.

#include "index/tree/tree_index.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>
#include <numeric>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/expects.hpp"
#include "core/parallel.hpp"
#include "core/tree_knn.hpp"
#include "index/filtered_search.hpp"
#include "index/id_filter.hpp"
#include "index/id_map.hpp"
#include "index/index_support.hpp"
#include "index/resident_rows.hpp"
#include "index/search_params.hpp"
#include "spatial/point_tree.hpp"
#include "spatial/tree_search.hpp"

namespace simkit::detail {

namespace {

// The tail's limit, max(kTailFloor, kTailPerRoot sqrt(n)) rows. Every query pays for the tail by
// brute force, every write for the rebuilds. Measured (2 cores, 1,000,000 uniform rows in d = 3,
// 1,000 queries, k = 10, 2026-11-26): the tree alone answers in 1.8 us a query; a tail adds ~2.8 ns
// a row (1,024 rows: 5.8 us, 4,096: 13.2, 131,072: 420); a rebuild costs ~0.23 us a row (0.23 s).
// With one write per query the two balance at a tail of sqrt(0.23 us n / 2.8 ns) ~ 9 sqrt(n) rows:
// 8,000 at n = 1,000,000 (searches within ~10x of the tree's, writes ~30 us each on average). A
// tail of n / 8 would rebuild less often (each write ~8 log n row moves) but let a search cost
// ~200 times the tree's there. The floor keeps a small index from rebuilding every few writes:
// 1,024 rows cost a search ~4 us.
constexpr int64_t kTailFloor = 1024;
constexpr double kTailPerRoot = 8;
// A removed snapshot row stays in the tree, masked: it costs the walks a look and the index its
// memory until the rebuild, which comes once a quarter of the live rows' count has been removed
// (then each removal has paid ~1 us of the rebuild at n = 1,000,000).
constexpr int64_t kRemovedShare = 4;

int64_t words(int64_t bits) { return (bits + 63) / 64; }
bool bit(const std::vector<uint64_t>& mask, int64_t r) { return (mask[size_t(r >> 6)] >> (r & 63)) & 1u; }

/// remove() and load() take no Context: their rebuilds sort on the CPU with every hardware thread.
Context cpu_context() {
  Context ctx;
  ctx.device = Device::cpu;
  return ctx;
}

class TreeIndex final : public Index {
 public:
  TreeIndex(int64_t dim, Metric metric) : dim_(dim), metric_(metric) {}

  std::string type() const override { return "tree"; }
  std::string description() const override { return "tree"; }
  int64_t dim() const noexcept override { return dim_; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return ids_.size();
  }
  bool is_trained() const override { return true; }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    const size_t tree = tree_.rows.size() * sizeof(float) + (tree_.ids.size() + tree_.codes.size()) * sizeof(int64_t) +
                        (tree_.lo.size() + tree_.hi.size()) * sizeof(float);
    return rows_.size() * sizeof(float) + row_ids_.size() * sizeof(int64_t) + live_.size() * sizeof(uint64_t) +
           ids_.memory_bytes() + tree;
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
    const int64_t first = stored_rows();
    if (!append_in_id_order(X, ids, snapshot_, rows_, row_ids_, ids_)) tail_ascending_ = false;
    device_.mark_from(first);
    if (rebuild_due()) rebuild(ctx);
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
      if (*row < snapshot_) {  // masked out of the tree until the rebuild
        live_[size_t(*row >> 6)] &= ~(uint64_t(1) << (*row & 63));
        ++removed_;
        continue;
      }
      const int64_t last = stored_rows() - 1;
      if (*row != last) {  // the tail's last row fills the hole
        std::copy_n(rows_.data() + static_cast<size_t>(last) * d, d, rows_.data() + static_cast<size_t>(*row) * d);
        row_ids_[size_t(*row)] = row_ids_[size_t(last)];
        ids_.set(row_ids_[size_t(*row)], *row);
        device_.mark_row(*row);
        tail_ascending_ = false;
      }
      row_ids_.pop_back();
      rows_.resize(static_cast<size_t>(last) * d);
    }
    if (stored_rows() - snapshot_ <= 1) tail_ascending_ = true;
    if (rebuild_due()) rebuild(cpu_context());
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override;

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    // The live rows in id order: the file is flat's, and the tree is rebuilt on load.
    const std::vector<int64_t> order = live_rows_by_id();
    const size_t d = static_cast<size_t>(dim_);
    std::vector<int64_t> ids(order.size());
    std::vector<float> vectors(order.size() * d);  // the writer keeps pointers until write()
    for (size_t i = 0; i < order.size(); ++i) {
      ids[i] = row_ids_[size_t(order[i])];
      std::copy_n(rows_.data() + static_cast<size_t>(order[i]) * d, d, vectors.data() + i * d);
    }
    IndexFileWriter w;
    write_common(w, "tree", metric_, dim_, static_cast<int64_t>(ids.size()), ids_.next());
    w.add("ids", ids.data(), ids.size() * sizeof(int64_t));
    w.add("vectors", vectors.data(), vectors.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", h.size);
    if (!std::is_sorted(ids.begin(), ids.end())) refuse_file(f, "the tree index's ids are not in order");
    rows_ = read_array<float>(f, "vectors", h.size * h.dim);
    check_finite_section(f, "vectors", rows_);
    ids_.reset(ids, h.next_id, f.path());
    row_ids_ = std::move(ids);
    take_snapshot(cpu_context());
  }

 private:
  /// Rows in the array, removed snapshot rows included.
  int64_t stored_rows() const noexcept { return static_cast<int64_t>(row_ids_.size()); }
  MatrixView<const float> stored() const noexcept { return {rows_.data(), stored_rows(), dim_}; }
  /// Every row's id ascends (the snapshot's do; the tail's may not, nor the seam between them).
  bool ascending() const noexcept {
    const int64_t s = snapshot_;
    return tail_ascending_ && (s == 0 || s == stored_rows() || row_ids_[size_t(s - 1)] < row_ids_[size_t(s)]);
  }

  bool rebuild_due() const noexcept {
    const int64_t n = ids_.size();
    const int64_t tail_limit = std::max(kTailFloor, static_cast<int64_t>(kTailPerRoot * std::sqrt(double(n))));
    return stored_rows() - snapshot_ > tail_limit || removed_ > n / kRemovedShare;
  }

  std::vector<int64_t> live_rows_by_id() const {
    std::vector<int64_t> order;
    order.reserve(static_cast<size_t>(ids_.size()));
    for (int64_t r = 0; r < stored_rows(); ++r)
      if (r >= snapshot_ || bit(live_, r)) order.push_back(r);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return row_ids_[size_t(a)] < row_ids_[size_t(b)]; });
    return order;
  }

  /// The live rows, in id order, become the snapshot; the tree is built over them.
  void rebuild(const Context& ctx) {
    const std::vector<int64_t> order = live_rows_by_id();
    const size_t d = static_cast<size_t>(dim_);
    std::vector<float> rows(order.size() * d);
    std::vector<int64_t> row_ids(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      std::copy_n(rows_.data() + static_cast<size_t>(order[i]) * d, d, rows.data() + i * d);
      row_ids[i] = row_ids_[size_t(order[i])];
      ids_.set(row_ids[i], static_cast<int64_t>(i));
    }
    rows_ = std::move(rows);
    row_ids_ = std::move(row_ids);
    take_snapshot(ctx);
  }

  /// Every stored row, in id order and none removed, becomes the snapshot.
  void take_snapshot(const Context& ctx) {
    snapshot_ = stored_rows();
    removed_ = 0;
    tail_ascending_ = true;
    live_.assign(size_t(words(snapshot_)), ~uint64_t(0));
    if (snapshot_ % 64) live_.back() = (uint64_t(1) << (snapshot_ % 64)) - 1;  // no bits past the snapshot
    tree_ = snapshot_ > 0 ? spatial::build_point_tree(ctx, stored(), spatial::kLeafSize) : spatial::PointTree{};
    device_.mark_from(0);
  }

  /// mask &= the snapshot's live bits (rows past the snapshot untouched); returns the bits left
  /// among the first `rows` rows.
  int64_t keep_live(std::vector<uint64_t>& mask, int64_t rows) const {
    for (int64_t w = 0; w < words(snapshot_); ++w) {
      const int64_t past = std::min<int64_t>(64, snapshot_ - 64 * w);  // snapshot bits in this word
      const uint64_t tail_bits = past == 64 ? 0 : ~uint64_t(0) << past;
      mask[size_t(w)] &= live_[size_t(w)] | tail_bits;
    }
    int64_t count = 0;
    for (int64_t w = 0; w < words(rows); ++w) count += std::popcount(mask[size_t(w)]);
    return count;
  }

  void search_host(const Context& ctx, MatrixView<const float> Q, int64_t k, const IdFilter* filter,
                   const SearchParams& sp, MatrixView<float> values, MatrixView<int64_t> ids) const;
  void search_resident(const Context& ctx, MatrixView<const float> Q, int64_t k, const IdFilter* filter,
                       const SearchParams& sp, MatrixView<float> values, MatrixView<int64_t> ids) const;
  /// The k best of each query's tree list (rows of the snapshot, kt of them) and tail list (ids,
  /// kl of them), both ranked by (key, id), into out; slots past both are padded.
  void merge(const Context& ctx, MatrixView<const float> Q, int64_t k, const Matrix<float>& tv,
             const Matrix<int64_t>& tr, const Matrix<float>& lv, const Matrix<int64_t>& li, SearchOutput& out) const;

  int64_t dim_;
  Metric metric_;
  std::vector<float> rows_;       // the snapshot's rows in id order, then the tail's as written
  std::vector<int64_t> row_ids_;  // the id of each row (a removed snapshot row keeps its own)
  IdMap ids_;                     // id -> row, live rows only
  int64_t snapshot_ = 0;          // rows [0, snapshot_) are the tree's
  std::vector<uint64_t> live_;    // bit r: snapshot row r is not removed (the tree's row mask)
  int64_t removed_ = 0;           // snapshot rows removed since the build
  bool tail_ascending_ = true;    // the tail's ids ascend
  spatial::PointTree tree_;
  ResidentRows device_;
  mutable std::shared_mutex mutex_;
};

void TreeIndex::search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
                       MatrixView<float> values, MatrixView<int64_t> ids) const {
  check_search(ctx, Q, dim_, k, values, ids);
  own_search_params<SearchParams>(sp, "tree", "SearchParams");  // the tree has no knobs of its own
  if (sp.allowed) check_allowed(*sp.allowed);
  std::shared_lock lock(mutex_);
  const int64_t n = ids_.size();
  if (n == 0)  // pads every row, counts them short
    return search_rows(ctx, Q, k, metric_, IdRows{{nullptr, 0, dim_}, {nullptr, 0, dim_}, nullptr}, values, ids,
                       sp.stats);
  const Device device = backend_for(ctx, {Q.where, values.where}, "search").device();
  std::optional<IdFilter> filter;
  if (sp.allowed) {  // a few rows are gathered, many are tested where the search meets them
    const int64_t listed = sp.allowed->size;
    if (device == Device::gpu ? filter_in_scan(device, listed, n, n, k) : filter_in_walk(listed, n, k, dim_))
      filter.emplace(*sp.allowed);
    else
      return search_allowed(ctx, Q, k, metric_, stored(), allowed_rows_mapped(ids_, *sp.allowed), values, ids,
                            sp.stats);
  }
  const IdFilter* f = filter ? &*filter : nullptr;
  if (device == Device::gpu) return search_resident(ctx, Q, k, f, sp, values, ids);
  search_host(ctx, Q, k, f, sp, values, ids);
}

void TreeIndex::search_host(const Context& ctx, MatrixView<const float> Q, int64_t k, const IdFilter* filter,
                            const SearchParams& sp, MatrixView<float> values, MatrixView<int64_t> ids) const {
  const int64_t s = snapshot_, tail = stored_rows() - s, m = Q.rows;
  std::vector<uint64_t> tree_mask, tail_mask;
  const uint64_t* in_tree_mask = removed_ > 0 ? live_.data() : nullptr;
  int64_t in_tree = s - removed_, in_tail = tail;
  if (filter) {
    tree_mask.assign(size_t(words(s)), 0);
    filter->mark(row_ids_.data(), s, 0, tree_mask.data());
    in_tree = keep_live(tree_mask, s);
    in_tree_mask = tree_mask.data();
    tail_mask.assign(size_t(words(tail)), 0);
    in_tail = filter->mark(row_ids_.data() + s, tail, 0, tail_mask.data());
    if (in_tree + in_tail < k)  // the walk would read every row to find fewer than k: gather them
      return search_allowed(ctx, Q, k, metric_, stored(), allowed_rows_mapped(ids_, *sp.allowed), values, ids,
                            sp.stats);
  }
  const IdRows tail_rows{{rows_.data() + static_cast<size_t>(s * dim_), tail, dim_},
                         {rows_.data() + static_cast<size_t>(s * dim_), tail, dim_},
                         row_ids_.data() + s,
                         tail_ascending_,
                         filter ? tail_mask.data() : nullptr,
                         in_tail};
  if (in_tree == 0) return search_rows(ctx, Q, k, metric_, tail_rows, values, ids, sp.stats);
  const MetricPlan plan = plan_metric(metric_);
  const int64_t kt = std::min(k, in_tree), kl = std::min(k, in_tail);
  Matrix<float> tv(m, kt), lv;
  Matrix<int64_t> tr(m, kt), li;
  const spatial::cpu::TreeSearchStats walked =
      spatial::cpu::tree_knn(ctx, tree_, Q, kt, plan, tv.data(), tr.data(), spatial::cpu::kPacket, in_tree_mask);
  if (kl > 0) {
    lv = Matrix<float>(m, kl);
    li = Matrix<int64_t>(m, kl);
    search_rows(ctx, Q, kl, metric_, tail_rows, lv.view(), li.view());
  }
  if (sp.stats) {
    sp.stats->candidates += walked.pairs + m * in_tail;
    if (in_tree + in_tail < k) sp.stats->short_rows += m;
  }
  SearchOutput out(values, ids);
  merge(ctx, Q, k, tv, tr, lv, li, out);
  out.deliver(ctx);
}

void TreeIndex::merge(const Context& ctx, MatrixView<const float> Q, int64_t k, const Matrix<float>& tv,
                      const Matrix<int64_t>& tr, const Matrix<float>& lv, const Matrix<int64_t>& li,
                      SearchOutput& out) const {
  const int64_t kt = tv.cols(), kl = lv.cols();
  const float worst = worst_value(metric_);
  MatrixView<float> values = out.values();
  MatrixView<int64_t> ids = out.ids();
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t q = 0; q < Q.rows; ++q) {
    const float* a_value = tv.data() + q * kt;
    const int64_t* a_row = tr.data() + q * kt;
    const float* b_value = lv.data() + q * kl;
    const int64_t* b_id = li.data() + q * kl;
    // A tree row before a tail id: by value, by float64 key where the values are equal, by id.
    auto tree_first = [&](int64_t a, int64_t b) {
      if (a_value[a] != b_value[b]) return a_value[a] < b_value[b];
      const double ka = exact_sqdist(Q.row(q), rows_.data() + a_row[a] * dim_, dim_);
      const double kb = exact_sqdist(Q.row(q), rows_.data() + *ids_.find(b_id[b]) * dim_, dim_);
      return ka != kb ? ka < kb : row_ids_[size_t(a_row[a])] < b_id[b];
    };
    int64_t a = 0, b = 0;
    for (int64_t slot = 0; slot < k; ++slot) {
      const bool has_a = a < kt && a_row[a] >= 0, has_b = b < kl && b_id[b] >= 0;
      if (has_a && (!has_b || tree_first(a, b))) {
        values(q, slot) = a_value[a];
        ids(q, slot) = row_ids_[size_t(a_row[a++])];
      } else if (has_b) {
        values(q, slot) = b_value[b];
        ids(q, slot) = b_id[b++];
      } else {
        values(q, slot) = worst;
        ids(q, slot) = -1;
      }
    }
  }
}

void TreeIndex::search_resident(const Context& ctx, MatrixView<const float> Q, int64_t k, const IdFilter* filter,
                                const SearchParams& sp, MatrixView<float> values, MatrixView<int64_t> ids) const {
  // Flat's exact GPU search over every stored row, the removed ones masked: the same results. The
  // GPU tree (spatial/cuda/) is built per call; keeping a device copy of this index's tree, with
  // its tail, is what would let it serve here.
  const int64_t rows = stored_rows();
  IdRows all{stored(), stored(), row_ids_.data(), ascending()};
  std::vector<uint64_t> mask;
  if (filter || removed_ > 0) {
    mask.assign(size_t(words(rows)), filter ? 0 : ~uint64_t(0));
    if (filter) filter->mark(row_ids_.data(), rows, 0, mask.data());
    if (!filter && rows % 64) mask.back() = (uint64_t(1) << (rows % 64)) - 1;
    all.allowed = keep_live(mask, rows);
    all.mask = mask.data();
    if (all.allowed < k) {  // the scan needs k candidates; fewer (allowed and live) are cheap to gather
      std::vector<int64_t> candidates;
      for (int64_t r = 0; r < rows; ++r)
        if ((mask[size_t(r >> 6)] >> (r & 63)) & 1u) candidates.push_back(row_ids_[size_t(r)]);
      std::sort(candidates.begin(), candidates.end());
      return search_allowed(ctx, Q, k, metric_, stored(),
                            allowed_rows_mapped(ids_, ArrayView<const int64_t>(candidates)), values, ids, sp.stats);
    }
  }
  const std::shared_ptr<const DeviceMatrix<float>> resident = device_.sync(ctx, stored());
  if (resident) all.rows = MatrixView<const float>{resident->view().data, rows, dim_, Memory::device};
  search_rows(ctx, Q, k, metric_, all, values, ids, sp.stats);
}

}  // namespace

std::unique_ptr<Index> make_tree_index(int64_t dim, Metric metric) {
  const char* why = tree_refusal(metric, dim);
  SIMKIT_EXPECTS(*why == '\0', invalid_argument, "index type 'tree': ", why, " (asked for ", to_string(metric),
                 " in d = ", dim, "); 'flat' searches any metric and dimension exactly");
  return std::make_unique<TreeIndex>(dim, metric);
}

std::unique_ptr<Index> load_tree_index(const IndexFile& f) {
  const CommonHeader h = read_common(f, "tree");
  if (const char* why = tree_refusal(h.metric, h.dim); *why != '\0')
    refuse_file(f, std::string("a tree index of ") + to_string(h.metric) + " in d = " + std::to_string(h.dim) +
                       ", which " + why + " alone");
  auto index = std::make_unique<TreeIndex>(h.dim, h.metric);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
