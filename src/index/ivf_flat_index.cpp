// ivf_flat: k-means cells, one list of full vectors per cell (index/ivf_lists.hpp), and the
// backends' list scans (cpu/ivf/, cuda/ivf/).
//
// The metric decides how vectors meet centroids (IvfLists::coarse):
//   l2, sqeuclidean, l1   k-means on squared distances; rows join, and queries probe, the
//                         cells nearest in squared distance (l1 has no k-means of its own; its
//                         cells are the l2 ones, still a good partition of space)
//   cosine                spherical k-means; nearest by cosine
//   pearson               spherical k-means on mean-centred rows; nearest by pearson (the
//                         centroids have mean 0, so pearson against them is their cosine)
//   dot                   k-means on squared distances, cells nearest by inner product, as
//                         FAISS's IndexIVFFlat does for METRIC_INNER_PRODUCT
//
// A search with an allow-list probes no lists: the allowed rows are gathered and searched
// exactly (index/filtered_search.hpp), the plan vector databases switch to for selective
// filters, where probing nprobe lists would leave few allowed rows to rank.

#include "index/ivf_flat_index.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/knn.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/sample_rows.hpp"
#include "cpu/parallel.hpp"
#include "index/filtered_search.hpp"
#include "index/id_set.hpp"
#include "index/index_support.hpp"

namespace simkit::detail {

namespace {

Metric coarse_metric(Metric m) {
  switch (m) {
    case Metric::cosine: return Metric::cosine;
    case Metric::pearson: return Metric::pearson;
    case Metric::dot: return Metric::dot;
    default: return Metric::sqeuclidean;
  }
}

/// Rows minus their own mean, for pearson's training: the centring its k-NN uses (cpu/dot_family.hpp).
Matrix<float> centred(MatrixView<const float> X, int threads) {
  const cpu::RowStats stats = cpu::row_stats(X, plan_metric(Metric::pearson), threads);
  Matrix<float> out(X.rows, X.cols);
  cpu::centre_rows(X.data, X.rows, X.cols, stats.mean.data(), out.data());
  return out;
}

/// Appends row `row` of `from` to `to`.
void append_stats(cpu::RowStats& to, const cpu::RowStats& from, int64_t row) {
  if (!from.sq.empty()) to.sq.push_back(from.sq[static_cast<size_t>(row)]);
  if (!from.inv.empty()) to.inv.push_back(from.inv[static_cast<size_t>(row)]);
  if (!from.mean.empty()) to.mean.push_back(from.mean[static_cast<size_t>(row)]);
}

class IvfFlatIndex final : public Index {
 public:
  IvfFlatIndex(int64_t dim, Metric metric, const IvfFlatParams& p) : params_(p), metric_(metric) {
    lists_.dim = dim;
    lists_.nlist = p.nlist;
    lists_.plan = plan_metric(metric);
    lists_.coarse = coarse_metric(metric);
  }

  std::string type() const override { return "ivf_flat"; }
  std::string description() const override { return describe_ivf_flat(params_); }
  int64_t dim() const noexcept override { return lists_.dim; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return lists_.size();
  }
  bool is_trained() const override {
    std::shared_lock lock(mutex_);
    return !lists_.offsets.empty();
  }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    const auto& s = lists_.stats;
    return (lists_.vectors.size() + lists_.centroids.size()) * sizeof(float) +
           (lists_.ids.size() + lists_.offsets.size() + static_cast<size_t>(ids_.size())) * sizeof(int64_t) +
           (s.sq.size() + s.inv.size() + s.mean.size()) * sizeof(double);
  }
  int64_t next_id() const override {
    std::shared_lock lock(mutex_);
    return ids_.next();
  }

  void train(const Context& ctx, MatrixView<const float> X) override {
    check_rows(ctx, X, lists_.dim, "train");
    SIMKIT_EXPECTS(X.rows >= params_.nlist, invalid_argument, "train: ", X.rows,
                   " vectors cannot form nlist = ", params_.nlist,
                   " cells; give at least nlist vectors (FAISS suggests 39 per cell) or lower nlist");
    std::unique_lock lock(mutex_);
    SIMKIT_EXPECTS(lists_.size() == 0, invalid_argument, "train: the index already holds ", lists_.size(),
                   " vectors, which new cells would misplace; build a new index");
    const int64_t cap = params_.train_sample > 0 ? params_.train_sample : 256 * params_.nlist;
    SplitMix64 rng(params_.seed ^ 0x1f0a5eedull);
    Matrix<float> sample;
    MatrixView<const float> T = X;
    if (cap < X.rows) {
      sample = draw_sample(X, std::max(cap, params_.nlist), rng);
      T = sample.view();
    }
    Matrix<float> centred_rows;
    if (metric_ == Metric::pearson) {
      centred_rows = centred(T, cpu::cpu_threads(ctx));
      T = centred_rows.view();
    }
    KmeansParams kp;
    kp.k = params_.nlist;
    kp.metric =
        lists_.coarse == Metric::sqeuclidean || lists_.coarse == Metric::dot ? Metric::sqeuclidean : Metric::cosine;
    kp.max_iterations = params_.iterations;
    kp.seed = params_.seed;
    if (ctx.progress)
      kp.on_iteration = [&](int it, double) { ctx.progress(std::min(1.0, it / double(params_.iterations + 1))); };
    Context quiet = ctx;
    quiet.progress = nullptr;
    KmeansResult r = kmeans(quiet, T, kp);
    lists_.centroids.assign(r.centroids.data(), r.centroids.data() + r.centroids.size());
    lists_.offsets.assign(static_cast<size_t>(params_.nlist + 1), 0);
    drop_device_copy();
  }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, lists_.dim, "add");
    std::unique_lock lock(mutex_);
    SIMKIT_EXPECTS(!lists_.offsets.empty(), invalid_argument, "add: train the ivf_flat index first");
    const std::vector<int64_t> ids = ids_.assign(given, X.rows);
    Context quiet = ctx;
    quiet.progress = nullptr;
    const KnnResult cell = knn(quiet, X, lists_.centroid_rows(), 1, lists_.coarse);
    const cpu::RowStats added = cpu::row_stats(X, lists_.plan, cpu::cpu_threads(ctx));

    // The new layout: each list's old and new rows, in id order.
    const int64_t nlist = lists_.nlist, d = lists_.dim, n_old = lists_.size(), m = X.rows;
    std::vector<int64_t> offsets(static_cast<size_t>(nlist + 1), 0);
    for (int64_t l = 0; l < nlist; ++l)
      offsets[static_cast<size_t>(l + 1)] =
          lists_.offsets[static_cast<size_t>(l + 1)] - lists_.offsets[static_cast<size_t>(l)];
    for (int64_t i = 0; i < m; ++i) ++offsets[static_cast<size_t>(cell.ids.data()[i] + 1)];
    for (int64_t l = 0; l < nlist; ++l) offsets[static_cast<size_t>(l + 1)] += offsets[static_cast<size_t>(l)];
    std::vector<std::vector<int64_t>> members(static_cast<size_t>(nlist));
    for (int64_t i = 0; i < m; ++i) members[static_cast<size_t>(cell.ids.data()[i])].push_back(i);

    IvfLists next;
    next.vectors.resize(static_cast<size_t>((n_old + m) * d));
    next.ids.reserve(static_cast<size_t>(n_old + m));
    for (int64_t l = 0; l < nlist; ++l) {
      // Merge by id: a list in id order lets equal keys keep the lower ids (ivf_lists.hpp).
      std::vector<int64_t>& fresh = members[static_cast<size_t>(l)];
      std::sort(fresh.begin(), fresh.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
      float* out = next.vectors.data() + offsets[static_cast<size_t>(l)] * d;
      int64_t r = lists_.offsets[static_cast<size_t>(l)];
      const int64_t r_end = lists_.offsets[static_cast<size_t>(l + 1)];
      size_t f = 0;
      while (r < r_end || f < fresh.size()) {
        const bool take_old = f == fresh.size() || (r < r_end && lists_.ids[size_t(r)] < ids[size_t(fresh[f])]);
        if (take_old) {
          out = std::copy_n(lists_.vectors.data() + r * d, d, out);
          next.ids.push_back(lists_.ids[static_cast<size_t>(r)]);
          append_stats(next.stats, lists_.stats, r++);
        } else {
          const int64_t i = fresh[f++];
          out = std::copy_n(X.row(i), d, out);
          next.ids.push_back(ids[static_cast<size_t>(i)]);
          append_stats(next.stats, added, i);
        }
      }
      if (ctx.progress) ctx.progress(static_cast<double>(l + 1) / nlist);
    }
    lists_.vectors = std::move(next.vectors);
    lists_.ids = std::move(next.ids);
    lists_.stats = std::move(next.stats);
    lists_.offsets = std::move(offsets);
    ids_.insert(ids);
    drop_device_copy();
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    std::unique_lock lock(mutex_);
    const int64_t removed = ids_.erase(gone);
    if (removed == 0) return 0;
    std::vector<int64_t> sorted_gone(gone.data, gone.data + gone.size);
    std::sort(sorted_gone.begin(), sorted_gone.end());
    const int64_t d = lists_.dim;
    IvfLists& L = lists_;
    int64_t out = 0;
    std::vector<int64_t> offsets(static_cast<size_t>(L.nlist + 1), 0);
    cpu::RowStats stats;
    for (int64_t l = 0; l < L.nlist; ++l) {
      for (int64_t r = L.offsets[static_cast<size_t>(l)]; r < L.offsets[static_cast<size_t>(l + 1)]; ++r) {
        if (std::binary_search(sorted_gone.begin(), sorted_gone.end(), L.ids[static_cast<size_t>(r)])) continue;
        if (out != r) std::copy_n(L.vectors.data() + r * d, d, L.vectors.data() + out * d);
        L.ids[static_cast<size_t>(out)] = L.ids[static_cast<size_t>(r)];
        append_stats(stats, L.stats, r);
        ++out;
      }
      offsets[static_cast<size_t>(l + 1)] = out;
    }
    L.vectors.resize(static_cast<size_t>(out * d));
    L.ids.resize(static_cast<size_t>(out));
    L.stats = std::move(stats);
    L.offsets = std::move(offsets);
    drop_device_copy();
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, lists_.dim, k, values, ids);
    const int64_t nprobe = resolve_nprobe(sp.nprobe);
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    // An allow-list is met exactly: its rows are scanned, whatever list holds them (index.hpp).
    if (sp.allowed)
      return search_allowed(ctx, Q, k, metric_, lists_.rows(), allowed_rows_any(lists_.ids, *sp.allowed), values, ids,
                            sp.stats);
    SearchOutput out(values, ids);
    if (lists_.size() == 0) {
      out.pad_all(metric_);
    } else {
      const Backend& backend = backend_for(ctx, {Q.where}, "search");
      backend.ivf_search(ctx, IvfSearchArgs{&lists_, Q, k, nprobe, out.values(), out.ids()});
    }
    if (sp.stats)  // a row is padded exactly when its probed lists held fewer than k rows
      for (int64_t r = 0; r < Q.rows; ++r) sp.stats->short_rows += out.ids().row(r)[k - 1] < 0 ? 1 : 0;
    out.deliver(ctx);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    IndexFileWriter w;
    write_common(w, "ivf_flat", metric_, lists_.dim, lists_.size(), ids_.next());
    w.add_text("description", describe_ivf_flat(params_));
    w.add_u64("trained", lists_.offsets.empty() ? 0 : 1);
    w.add("centroids", lists_.centroids.data(), lists_.centroids.size() * sizeof(float));
    w.add("offsets", lists_.offsets.data(), lists_.offsets.size() * sizeof(int64_t));
    w.add("ids", lists_.ids.data(), lists_.ids.size() * sizeof(int64_t));
    w.add("vectors", lists_.vectors.data(), lists_.vectors.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h, const Context& ctx) {
    const bool trained = f.u64("trained") != 0;
    if (!trained && h.size != 0) refuse_file(f, "an untrained ivf_flat index cannot hold vectors");
    const int64_t nlist = params_.nlist, d = h.dim;
    if (trained) {
      lists_.centroids = read_array<float>(f, "centroids", nlist * d);
      check_finite_section(f, "centroids", lists_.centroids);
      lists_.offsets = read_array<int64_t>(f, "offsets", nlist + 1);
      const auto& o = lists_.offsets;
      if (o.front() != 0 || o.back() != h.size || !std::is_sorted(o.begin(), o.end()))
        refuse_file(f, "the list offsets do not partition the " + std::to_string(h.size) + " vectors");
    }
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", h.size);
    for (int64_t l = 0; l < nlist && trained; ++l)
      if (!std::is_sorted(ids.begin() + lists_.offsets[size_t(l)], ids.begin() + lists_.offsets[size_t(l + 1)]))
        refuse_file(f, "list " + std::to_string(l) + " is not in id order");
    lists_.ids = ids;
    lists_.vectors = read_array<float>(f, "vectors", h.size * d);
    check_finite_section(f, "vectors", lists_.vectors);
    ids_.reset(std::move(ids), h.next_id, f.path());
    lists_.stats = cpu::row_stats(lists_.rows(), lists_.plan, cpu::cpu_threads(ctx));
  }

 private:
  int64_t resolve_nprobe(int64_t asked) const {
    const int64_t nlist = params_.nlist;
    if (asked == 0) asked = params_.nprobe;
    if (asked == 0) return std::max<int64_t>(1, nlist / 32);
    if (asked == kSeedProbes) return std::min<int64_t>(nlist, (8 * nlist + 9) / 10);
    SIMKIT_EXPECTS(asked >= 1, invalid_argument, "search: nprobe must be >= 1 (or kSeedProbes), got ", asked);
    return std::min(asked, nlist);
  }

  void drop_device_copy() {
    std::lock_guard g(lists_.device_mutex);
    lists_.device.reset();
  }

  IvfFlatParams params_;
  Metric metric_;
  IvfLists lists_;
  IdSet ids_;
  mutable std::shared_mutex mutex_;
};

}  // namespace

std::string describe_ivf_flat(const IvfFlatParams& p) {
  std::string s = "ivf_flat,nlist=" + std::to_string(p.nlist);
  if (p.nprobe == kSeedProbes) s += ",nprobe=seed";
  if (p.nprobe > 0) s += ",nprobe=" + std::to_string(p.nprobe);
  if (p.train_sample > 0) s += ",train_sample=" + std::to_string(p.train_sample);
  s += ",iterations=" + std::to_string(p.iterations) + ",seed=" + std::to_string(p.seed);
  return s;
}

std::unique_ptr<Index> make_ivf_flat_index(int64_t dim, Metric metric, const IvfFlatParams& p) {
  return std::make_unique<IvfFlatIndex>(dim, metric, p);
}

std::unique_ptr<Index> load_ivf_flat_index(const IndexFile& f, const IvfFlatParams& p) {
  const CommonHeader h = read_common(f, "ivf_flat");
  auto index = std::make_unique<IvfFlatIndex>(h.dim, h.metric, p);
  index->load(f, h, Context{});
  return index;
}

}  // namespace simkit::detail
