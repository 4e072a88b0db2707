// ivf_pq: ivf_flat's cells, each row stored as the m one-byte product-quantizer codes of its
// residual to its cell's centroid (index/ivf_pq_lists.hpp), scanned through lookup tables by
// the backends (cpu/ivf/ivf_pq_search.cpp, cuda/ivf/), optionally re-ranked exactly against
// the original rows (refine > 0 keeps them).
//
// Training draws one sample (train_sample rows, seeded) for both stages: the coarse k-means of
// the prepared rows (as ivf_flat: spherical for cosine / pearson, squared distance otherwise),
// then the product quantizer on the sample's residuals to its nearest centroids under `coarse`,
// the same rule add() files rows by.
//
// An allow-list is met exactly (index.hpp) when the vectors are kept: the allowed rows are
// searched as ivf_flat searches them. An index with codes only has nothing exact to rank with;
// it then ranks every allowed row by its code estimate (the refine = 0 result restricted to the
// allowed rows, every list probed), so a selective filter still fills k slots.

#include "index/ivf_pq_index.hpp"

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
#include "core/exact_metric.hpp"
#include "core/expects.hpp"
#include "core/sample_rows.hpp"
#include "cpu/parallel.hpp"
#include "index/filtered_search.hpp"
#include "index/id_set.hpp"
#include "index/index_support.hpp"
#include "index/ivf_pq_prep.hpp"
#include "index/product_quantizer.hpp"

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

PqTable table_form(Metric m) {
  switch (m) {
    case Metric::dot: return PqTable::neg_dot;
    case Metric::l1: return PqTable::l1;
    default: return PqTable::sqdist;
  }
}

/// m = 0: the largest divisor of dim not above max(1, dim / 4) (about 4 coordinates a byte).
int64_t resolve_m(int64_t dim, int64_t m) {
  if (m > 0) return m;
  for (int64_t c = std::max<int64_t>(1, dim / 4); c >= 1; --c)
    if (dim % c == 0) return c;
  return 1;
}

Matrix<float> prepared(MatrixView<const float> X, const MetricPlan& plan) {
  Matrix<float> out(X.rows, X.cols);
  prepare_pq_rows(plan, X.data, X.rows, X.cols, out.data());
  return out;
}

/// Spherical k-means leaves unit centroids, but the unit rows of a cell lie inside the sphere's
/// cap around it: scaling centroid l to the mean projection x.c of its training rows moves it to
/// their centre along its own direction. Cosine assignment and probing ignore a centroid's length,
/// so no row or query changes cell, while the residuals x - c the codes quantize shrink (on
/// WordNet the codes alone then rank better: recall@10 0.58 -> see bench/results/2026-11-25-cpu2-pq-lsh.md).
void shrink_to_cells(MatrixView<const float> Tp, const std::vector<int64_t>& cells, IvfPqLists& L) {
  const int64_t d = L.dim;
  std::vector<double> sum(static_cast<size_t>(L.nlist), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(L.nlist), 0);
  for (int64_t i = 0; i < Tp.rows; ++i) {
    const int64_t l = cells[static_cast<size_t>(i)];
    sum[size_t(l)] += exact_dot_vector(Tp.row(i), L.centroids.data() + l * d, d);
    ++count[size_t(l)];
  }
  for (int64_t l = 0; l < L.nlist; ++l) {
    if (count[size_t(l)] == 0 || !(sum[size_t(l)] > 0))
      continue;  // an empty or degenerate cell keeps its unit centroid
    const double scale = sum[size_t(l)] / static_cast<double>(count[size_t(l)]);
    float* c = L.centroids.data() + l * d;
    for (int64_t t = 0; t < d; ++t) c[t] = static_cast<float>(c[t] * scale);
  }
}

/// Each row's nearest centroid under `coarse`.
std::vector<int64_t> nearest_cells(const Context& ctx, MatrixView<const float> Xp, const IvfPqLists& L) {
  Context quiet = ctx;
  quiet.progress = nullptr;
  const KnnResult cell = knn(quiet, Xp, L.centroid_rows(), 1, L.coarse);
  return std::vector<int64_t>(cell.ids.data(), cell.ids.data() + Xp.rows);
}

/// Residuals of the prepared rows to their cells' centroids, in place.
void subtract_centroids(Matrix<float>& Xp, const std::vector<int64_t>& cells, const IvfPqLists& L) {
  const int64_t d = Xp.cols();
  for (int64_t i = 0; i < Xp.rows(); ++i) {
    const float* c = L.centroids.data() + cells[size_t(i)] * d;
    float* r = Xp.data() + i * d;
    for (int64_t t = 0; t < d; ++t) r[t] -= c[t];
  }
}

class IvfPqIndex final : public Index {
 public:
  IvfPqIndex(int64_t dim, Metric metric, const IvfPqParams& p)
      : params_(p), metric_(metric), pq_(dim, resolve_m(dim, p.m)) {
    params_.m = pq_.m();  // the description names the m in use
    lists_.dim = dim;
    lists_.nlist = p.nlist;
    lists_.m = pq_.m();
    lists_.plan = plan_metric(metric);
    lists_.coarse = coarse_metric(metric);
    lists_.table = table_form(metric);
    lists_.keeps_vectors = p.refine > 0;
    lists_.refine_on_device = p.refine_on_device;
  }

  /// What the index stores, for ivf_pq_lists_of (tests read the codes through it).
  const IvfPqLists& lists() const noexcept { return lists_; }

  std::string type() const override { return "ivf_pq"; }
  std::string description() const override { return describe_ivf_pq(params_); }
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
  /// Codes, the squared-distance row terms (4 bytes a row, l2 / sqeuclidean / cosine / pearson),
  /// the lists' ids and the id set's sorted copy, offsets, centroids, code books, and the original
  /// rows when kept: n (m + 20) bytes (n (m + 20 + 4 dim) with refine) plus fixed parts (4 bytes
  /// less a row for dot and l1).
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    return lists_.codes.size() + lists_.row_terms.size() * sizeof(float) +
           (lists_.vectors.size() + lists_.centroids.size() + lists_.codebooks.size()) * sizeof(float) +
           (lists_.ids.size() + lists_.offsets.size() + static_cast<size_t>(ids_.size())) * sizeof(int64_t);
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
    const int64_t cap = params_.train_sample > 0 ? params_.train_sample : std::max<int64_t>(256 * params_.nlist, 65536);
    SplitMix64 rng(params_.seed ^ 0x1f0a5eedull);
    Matrix<float> sample;
    MatrixView<const float> T = X;
    if (cap < X.rows) {
      sample = draw_sample(X, std::max(cap, params_.nlist), rng);
      T = sample.view();
    }
    Matrix<float> Tp = prepared(T, lists_.plan);

    Context quiet = ctx;
    quiet.progress = nullptr;
    KmeansParams kp;
    kp.k = params_.nlist;
    kp.metric =
        lists_.coarse == Metric::cosine || lists_.coarse == Metric::pearson ? Metric::cosine : Metric::sqeuclidean;
    kp.max_iterations = params_.iterations;
    kp.seed = params_.seed;
    if (ctx.progress)
      kp.on_iteration = [&](int it, double) { ctx.progress(0.5 * std::min(1.0, it / double(params_.iterations + 1))); };
    const KmeansResult r = kmeans(quiet, Tp.view(), kp);
    IvfPqLists& L = lists_;
    L.centroids.assign(r.centroids.data(), r.centroids.data() + r.centroids.size());
    const std::vector<int64_t> cells = nearest_cells(ctx, Tp.view(), L);
    if (L.coarse == Metric::cosine || L.coarse == Metric::pearson) shrink_to_cells(Tp.view(), cells, L);
    subtract_centroids(Tp, cells, L);
    ProductQuantizer pq(L.dim, L.m);
    pq.train(quiet, Tp.view(), params_.seed + 0x9e3779b9ull, params_.iterations);
    L.ksub = pq.ksub();
    L.codebooks.assign(pq.codebooks().data(), pq.codebooks().data() + pq.codebooks().size());
    pq_ = std::move(pq);
    L.offsets.assign(static_cast<size_t>(params_.nlist + 1), 0);
    if (ctx.progress) ctx.progress(1.0);
    drop_device_copy();
  }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, lists_.dim, "add");
    std::unique_lock lock(mutex_);
    SIMKIT_EXPECTS(!lists_.offsets.empty(), invalid_argument, "add: train the ivf_pq index first");
    const std::vector<int64_t> ids = ids_.assign(given, X.rows);
    IvfPqLists& L = lists_;
    Matrix<float> Xp = prepared(X, L.plan);
    const std::vector<int64_t> cell = nearest_cells(ctx, Xp.view(), L);
    subtract_centroids(Xp, cell, L);
    const int64_t nlist = L.nlist, d = L.dim, mc = L.m, n_old = L.size(), n = X.rows;
    std::vector<uint8_t> fresh_codes(static_cast<size_t>(n * mc));
    pq_.encode(Xp.view(), fresh_codes.data());

    // The new layout: each list's old and new rows, merged in id order (ivf_pq_lists.hpp).
    std::vector<int64_t> offsets(static_cast<size_t>(nlist + 1), 0);
    std::vector<std::vector<int64_t>> members(static_cast<size_t>(nlist));
    for (int64_t i = 0; i < n; ++i) members[size_t(cell[size_t(i)])].push_back(i);
    for (int64_t l = 0; l < nlist; ++l)
      offsets[size_t(l + 1)] = offsets[size_t(l)] + (L.offsets[size_t(l + 1)] - L.offsets[size_t(l)]) +
                               static_cast<int64_t>(members[size_t(l)].size());
    std::vector<uint8_t> codes(static_cast<size_t>((n_old + n) * mc));
    std::vector<float> vectors(L.keeps_vectors ? static_cast<size_t>((n_old + n) * d) : 0);
    std::vector<int64_t> row_ids;
    row_ids.reserve(static_cast<size_t>(n_old + n));
    for (int64_t l = 0; l < nlist; ++l) {
      std::vector<int64_t>& fresh = members[size_t(l)];
      std::sort(fresh.begin(), fresh.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
      int64_t out = offsets[size_t(l)], r = L.offsets[size_t(l)];
      const int64_t r_end = L.offsets[size_t(l + 1)];
      size_t f = 0;
      for (; r < r_end || f < fresh.size(); ++out) {
        const bool take_old = f == fresh.size() || (r < r_end && L.ids[size_t(r)] < ids[size_t(fresh[f])]);
        const uint8_t* code = take_old ? L.codes.data() + r * mc : fresh_codes.data() + fresh[f] * mc;
        const float* row = take_old ? (L.keeps_vectors ? L.vectors.data() + r * d : nullptr) : X.row(fresh[f]);
        std::copy_n(code, mc, codes.data() + out * mc);
        if (L.keeps_vectors) std::copy_n(row, d, vectors.data() + out * d);
        row_ids.push_back(take_old ? L.ids[size_t(r++)] : ids[size_t(fresh[f++])]);
      }
      if (ctx.progress) ctx.progress(static_cast<double>(l + 1) / nlist);
    }
    L.codes = std::move(codes);
    L.vectors = std::move(vectors);
    L.ids = std::move(row_ids);
    L.offsets = std::move(offsets);
    make_row_terms(L);
    ids_.insert(ids);
    drop_device_copy();
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    std::unique_lock lock(mutex_);
    const int64_t removed = ids_.erase(gone);
    if (removed == 0) return 0;
    std::vector<int64_t> sorted_gone(gone.data, gone.data + gone.size);
    std::sort(sorted_gone.begin(), sorted_gone.end());
    IvfPqLists& L = lists_;
    const int64_t d = L.dim, mc = L.m;
    int64_t out = 0;
    std::vector<int64_t> offsets(static_cast<size_t>(L.nlist + 1), 0);
    for (int64_t l = 0; l < L.nlist; ++l) {
      for (int64_t r = L.offsets[size_t(l)]; r < L.offsets[size_t(l + 1)]; ++r) {
        if (std::binary_search(sorted_gone.begin(), sorted_gone.end(), L.ids[size_t(r)])) continue;
        if (out != r) {
          std::copy_n(L.codes.data() + r * mc, mc, L.codes.data() + out * mc);
          if (L.keeps_vectors) std::copy_n(L.vectors.data() + r * d, d, L.vectors.data() + out * d);
          L.ids[size_t(out)] = L.ids[size_t(r)];
        }
        ++out;
      }
      offsets[size_t(l + 1)] = out;
    }
    L.codes.resize(static_cast<size_t>(out * mc));
    if (L.keeps_vectors) L.vectors.resize(static_cast<size_t>(out * d));
    L.ids.resize(static_cast<size_t>(out));
    L.offsets = std::move(offsets);
    make_row_terms(L);
    drop_device_copy();
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, lists_.dim, k, values, ids);
    const int64_t nprobe = resolve_nprobe(sp.nprobe);
    const int64_t refine = resolve_refine(sp.refine);
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    int64_t short_rows = 0, candidates = 0;
    if (sp.allowed) {
      search_allowed_rows(ctx, Q, k, *sp.allowed, values, ids, short_rows, candidates);
    } else {
      SearchOutput out(values, ids);
      if (lists_.size() == 0) {
        out.pad_all(metric_);
        short_rows = Q.rows;
      } else {
        const Backend& backend = backend_for(ctx, {Q.where}, "search");
        backend.ivf_pq_search(ctx, IvfPqSearchArgs{&lists_, Q, k, nprobe, depth(refine, k, lists_.size()), out.values(),
                                                   out.ids(), &short_rows, &candidates});
      }
      out.deliver(ctx);
    }
    if (sp.stats) sp.stats->short_rows += short_rows, sp.stats->candidates += candidates;
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    const IvfPqLists& L = lists_;
    IndexFileWriter w;
    write_common(w, "ivf_pq", metric_, L.dim, L.size(), ids_.next());
    w.add_text("description", describe_ivf_pq(params_));
    w.add_u64("trained", L.offsets.empty() ? 0 : 1);
    w.add_u64("ksub", static_cast<uint64_t>(L.ksub));
    w.add("centroids", L.centroids.data(), L.centroids.size() * sizeof(float));
    w.add("codebooks", L.codebooks.data(), L.codebooks.size() * sizeof(float));
    w.add("offsets", L.offsets.data(), L.offsets.size() * sizeof(int64_t));
    w.add("ids", L.ids.data(), L.ids.size() * sizeof(int64_t));
    w.add("codes", L.codes.data(), L.codes.size());
    w.add("vectors", L.vectors.data(), L.vectors.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    IvfPqLists& L = lists_;
    const bool trained = f.u64("trained") != 0;
    if (!trained && h.size != 0) refuse_file(f, "an untrained ivf_pq index cannot hold vectors");
    const int64_t nlist = params_.nlist, d = h.dim, n = h.size;
    if (trained) {
      const uint64_t ksub = f.u64("ksub");
      if (ksub < 1 || ksub > 256) refuse_file(f, "ksub = " + std::to_string(ksub) + " is not in [1, 256]");
      L.ksub = static_cast<int64_t>(ksub);
      L.centroids = read_array<float>(f, "centroids", nlist * d);
      check_finite_section(f, "centroids", L.centroids);
      L.codebooks = read_array<float>(f, "codebooks", L.m * L.ksub * L.dsub());
      check_finite_section(f, "codebooks", L.codebooks);
      pq_.assign(L.codebooks.data(), L.ksub);
      L.offsets = read_array<int64_t>(f, "offsets", nlist + 1);
      const auto& o = L.offsets;
      if (o.front() != 0 || o.back() != n || !std::is_sorted(o.begin(), o.end()))
        refuse_file(f, "the list offsets do not partition the " + std::to_string(n) + " vectors");
    }
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", n);
    for (int64_t l = 0; l < nlist && trained; ++l)
      if (!std::is_sorted(ids.begin() + L.offsets[size_t(l)], ids.begin() + L.offsets[size_t(l + 1)]))
        refuse_file(f, "list " + std::to_string(l) + " is not in id order");
    L.codes = read_array<uint8_t>(f, "codes", n * L.m);
    for (size_t i = 0; i < L.codes.size(); ++i)
      if (L.codes[i] >= L.ksub)
        refuse_file(f, "code " + std::to_string(L.codes[i]) + " of row " + std::to_string(i / size_t(L.m)) +
                           " is past the " + std::to_string(L.ksub) + " code book entries");
    L.vectors = read_array<float>(f, "vectors", L.keeps_vectors ? n * d : 0);
    check_finite_section(f, "vectors", L.vectors);
    L.ids = ids;
    make_row_terms(L);  // derived from what was read, so not in the file
    ids_.reset(std::move(ids), h.next_id, f.path());
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

  /// The re-rank factor of one search: the caller's, else the build's; 0 means codes only.
  int64_t resolve_refine(int64_t asked) const {
    SIMKIT_EXPECTS(asked >= 0, invalid_argument, "search: refine must be >= 0, got ", asked);
    SIMKIT_EXPECTS(asked == 0 || lists_.keeps_vectors, invalid_argument, "search: refine = ", asked,
                   " needs the original vectors, which this ivf_pq index (built with refine=0) does not keep;"
                   " build it with refine >= 1 to re-rank");
    return asked > 0 ? asked : params_.refine;
  }

  /// Candidates re-ranked per query: refine * k, at least k, at most every stored row.
  static int64_t depth(int64_t refine, int64_t k, int64_t n) {
    if (refine == 0) return 0;
    const int64_t want = refine > n / k ? n : refine * k;
    return std::max(k, std::min(want, n));
  }

  void search_allowed_rows(const Context& ctx, MatrixView<const float> Q, int64_t k, ArrayView<const int64_t> allowed,
                           MatrixView<float> values, MatrixView<int64_t> ids, int64_t& short_rows,
                           int64_t& candidates) const {
    const IvfPqLists& L = lists_;
    const AllowedRows rows = allowed_rows_any(L.ids, allowed);
    const int64_t have = static_cast<int64_t>(rows.rows.size());
    candidates = have * Q.rows;
    short_rows = have < k ? Q.rows : 0;
    if (L.keeps_vectors)
      return search_allowed(ctx, Q, k, metric_, MatrixView<const float>{L.vectors.data(), L.size(), L.dim}, rows,
                            values, ids);
    SearchOutput out(values, ids);
    if (have == 0) {
      out.pad_all(metric_);
    } else {
      // The allowed rows' codes, each list keeping its allowed rows in id order, all probed.
      IvfPqLists sub;
      sub.dim = L.dim, sub.nlist = L.nlist, sub.m = L.m, sub.ksub = L.ksub;
      sub.plan = L.plan, sub.coarse = L.coarse, sub.table = L.table;
      sub.centroids = L.centroids, sub.codebooks = L.codebooks;
      std::vector<char> keep(static_cast<size_t>(L.size()), 0);
      for (int64_t r : rows.rows) keep[size_t(r)] = 1;
      sub.offsets.assign(static_cast<size_t>(L.nlist + 1), 0);
      for (int64_t l = 0; l < L.nlist; ++l) {
        for (int64_t r = L.offsets[size_t(l)]; r < L.offsets[size_t(l + 1)]; ++r) {
          if (!keep[size_t(r)]) continue;
          sub.codes.insert(sub.codes.end(), L.codes.begin() + r * L.m, L.codes.begin() + (r + 1) * L.m);
          sub.ids.push_back(L.ids[size_t(r)]);
          if (!L.row_terms.empty()) sub.row_terms.push_back(L.row_terms[size_t(r)]);
        }
        sub.offsets[size_t(l + 1)] = static_cast<int64_t>(sub.ids.size());
      }
      int64_t ignored = 0;
      const Backend& backend = backend_for(ctx, {Q.where}, "search");
      backend.ivf_pq_search(ctx, IvfPqSearchArgs{&sub, Q, k, L.nlist, 0, out.values(), out.ids(), &ignored, &ignored});
    }
    out.deliver(ctx);
  }

  void drop_device_copy() {
    std::lock_guard g(lists_.device_mutex);
    lists_.device.reset();
  }

  IvfPqParams params_;
  Metric metric_;
  ProductQuantizer pq_;  // encodes added rows; its code books are lists_.codebooks
  IvfPqLists lists_;
  IdSet ids_;
  mutable std::shared_mutex mutex_;
};

}  // namespace

std::string describe_ivf_pq(const IvfPqParams& p) {
  std::string s = "ivf_pq,nlist=" + std::to_string(p.nlist);
  if (p.m > 0) s += ",m=" + std::to_string(p.m);
  s += ",refine=" + std::to_string(p.refine);
  s += std::string(",refine_on=") + (p.refine_on_device ? "device" : "host");
  if (p.nprobe == kSeedProbes) s += ",nprobe=seed";
  if (p.nprobe > 0) s += ",nprobe=" + std::to_string(p.nprobe);
  if (p.train_sample > 0) s += ",train_sample=" + std::to_string(p.train_sample);
  s += ",iterations=" + std::to_string(p.iterations) + ",seed=" + std::to_string(p.seed);
  return s;
}

std::unique_ptr<Index> make_ivf_pq_index(int64_t dim, Metric metric, const IvfPqParams& p) {
  SIMKIT_EXPECTS(p.m == 0 || dim % p.m == 0, invalid_argument, "ivf_pq: m = ", p.m, " must divide the dimension ", dim,
                 " (each sub-quantizer codes dim / m coordinates)");
  return std::make_unique<IvfPqIndex>(dim, metric, p);
}

const IvfPqLists* ivf_pq_lists_of(const Index& index) {
  const auto* pq = dynamic_cast<const IvfPqIndex*>(&index);
  return pq ? &pq->lists() : nullptr;
}

std::unique_ptr<Index> load_ivf_pq_index(const IndexFile& f, const IvfPqParams& p) {
  const CommonHeader h = read_common(f, "ivf_pq");
  if (p.m != 0 && h.dim % p.m != 0) refuse_file(f, "its m does not divide the dimension");
  auto index = std::make_unique<IvfPqIndex>(h.dim, h.metric, p);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
