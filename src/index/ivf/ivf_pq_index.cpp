// ivf_pq: ivf_flat's cells, each row stored as the m one-byte product-quantizer codes of its
// residual to its cell's centroid (ivf_pq_lists.hpp), scanned through lookup tables by the
// backends (cpu/ivf_pq_search.cpp, cuda/), optionally re-ranked exactly against the original
// rows (refine > 0 keeps them). Training, add and remove are the inverted file's
// (ivf_index_base.hpp); what is particular here is the coded space and the search.
//
// Training draws one sample (train_sample rows, seeded) for both stages: the coarse k-means of
// the prepared rows (as ivf_flat: spherical for cosine / pearson, squared distance otherwise),
// then the product quantizer on the sample's residuals to its nearest centroids under `coarse`,
// the same rule add() files rows by.
//
// An allow-list (index.hpp) is met as ivf_flat meets it when the vectors are kept: a selective
// list's rows are gathered and searched exactly, a broad one is tested inside the code scan. An
// index with codes only has nothing exact to rank with; for a selective list it ranks every
// allowed row by its code estimate (the scan of every list, the others skipped), so the filter
// still fills k slots, and a broad one is tested inside its usual scan.

#include "index/ivf/ivf_pq_index.hpp"
#include "index/search_params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/knn.hpp>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/expects.hpp"
#include "core/parallel.hpp"
#include "core/sample_rows.hpp"
#include "core/shards.hpp"
#include "index/filtered_search.hpp"
#include "index/index_support.hpp"
#include "index/ivf/ivf_index_base.hpp"
#include "index/ivf/ivf_pq_prep.hpp"
#include "index/ivf/ivf_pq_shards.hpp"
#include "index/ivf/ivf_searchers.hpp"
#include "index/ivf/product_quantizer.hpp"
#include "index/shard_hooks.hpp"

namespace simkit::detail {

namespace {

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

/// Residuals of the prepared rows to their cells' centroids, in place.
void subtract_centroids(Matrix<float>& Xp, const std::vector<int64_t>& cells, const IvfPqLists& L) {
  const int64_t d = Xp.cols();
  for (int64_t i = 0; i < Xp.rows(); ++i) {
    const float* c = L.centroids.data() + cells[size_t(i)] * d;
    float* r = Xp.data() + i * d;
    for (int64_t t = 0; t < d; ++t) r[t] -= c[t];
  }
}

IvfCellParams cell_params(const IvfPqParams& p) { return {p.nlist, p.nprobe, p.train_sample, p.iterations, p.seed}; }

class IvfPqIndex final : public IvfIndexBase {
 public:
  IvfPqIndex(int64_t dim, Metric metric, const IvfPqParams& p)
      : IvfIndexBase(metric, cell_params(p)), params_(p), pq_(dim, resolve_m(dim, p.m)), columns_(lists_) {
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
  /// Codes, the squared-distance row terms (4 bytes a row, l2 / sqeuclidean / cosine / pearson),
  /// the arena's ids, the id map, list bounds, centroids, code books, and the original rows when
  /// kept, each over the arena's rows (held ones plus room to grow).
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    const IvfPqLists& L = lists_;
    return L.codes.size() + L.row_terms.size() * sizeof(float) +
           (L.vectors.size() + L.centroids.size() + L.codebooks.size()) * sizeof(float) +
           (L.arena.ids.size() + 3 * L.arena.begin.size()) * sizeof(int64_t) + ids_.memory_bytes();
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, lists_.dim, k, values, ids);
    const IvfPqSearchParams* own = own_search_params<IvfPqSearchParams>(sp, "ivf_pq", "IvfPqSearchParams");
    int64_t lists = nprobe(own ? own->nprobe : 0);
    const int64_t refine = resolve_refine(own ? own->refine : 0);
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    const IvfPqLists& L = lists_;
    int64_t short_rows = 0, candidates = 0;
    if (!sp.allowed && L.size() > 0)
      if (const std::vector<Context> shards = gpu_shard_contexts(ctx, {Q.where, values.where, ids.where});
          !shards.empty()) {
        if (gpu_split(L, shards, 2 * memory_bytes()) == GpuSplit::queries)
          return search_replicas(shards, Q, k, lists, depth(refine, k, L.size()), values, ids, sp.stats);
        return search_shards(shards, Q, k, lists, depth(refine, k, L.size()), values, ids, sp.stats);
      }
    SearchOutput out(values, ids);
    if (L.size() == 0) {
      out.pad_all(metric_);
      short_rows = Q.rows;
    } else {
      const Device device = backend_for(ctx, {Q.where}, "search").device();
      IvfPqSearchArgs args{&L,           Q,         k,           lists,      depth(refine, k, L.size()),
                           out.values(), out.ids(), &short_rows, &candidates};
      std::optional<IdFilter> filter;
      if (sp.allowed) {
        const bool scan = scan_filters(device, *sp.allowed, lists, k);
        if (!scan && L.keeps_vectors)
          return search_allowed(ctx, Q, k, metric_,
                                MatrixView<const float>{L.vectors.data(), L.arena.arena_rows(), L.dim},
                                allowed_rows(*sp.allowed), values, ids, sp.stats);
        if (!scan) {  // codes only, a selective list: every allowed row by its code estimate
          args.nprobe = L.nlist;
          args.refine = 0;
        }
        filter.emplace(*sp.allowed);
        args.filter = &*filter;
      }
      device == Device::gpu ? cuda::ivf_pq_search(ctx, args) : cpu::ivf_pq_search(ctx, args);
    }
    out.deliver(ctx);
    if (sp.stats) sp.stats->short_rows += short_rows, sp.stats->candidates += candidates;
  }

  /// Several GPUs holding the whole index each (GpuSplit::queries): a slice of the queries on
  /// each, searched as on one device. Under the shared lock.
  void search_replicas(const std::vector<Context>& shards, MatrixView<const float> Q, int64_t k, int64_t nprobe,
                       int64_t candidates, MatrixView<float> values, MatrixView<int64_t> ids,
                       SearchStats* stats) const {
    std::vector<int64_t> short_rows(shards.size(), 0), scanned(shards.size(), 0);
    run_on_query_slices(shards, Q.rows, [&](const Context& on, RowRange r) {
      const size_t s = size_t(&on - shards.data());
      const IvfPqSearchArgs args{
          &lists_,           view_rows(Q, r), k,          nprobe, candidates, view_rows(values, r),
          view_rows(ids, r), &short_rows[s],  &scanned[s]};
      on.device == Device::gpu ? cuda::ivf_pq_search(on, args) : cpu::ivf_pq_search(on, args);
    });
    if (stats)
      for (size_t s = 0; s < shards.size(); ++s) stats->short_rows += short_rows[s], stats->candidates += scanned[s];
  }

  /// Several GPUs (Context::gpu_ids): a slice of every list on each, searched in two rounds
  /// (ivf_pq_shards.hpp). `candidates`: the re-rank's depth, 0 for codes only. Under the shared lock.
  void search_shards(const std::vector<Context>& shards, MatrixView<const float> Q, int64_t k, int64_t nprobe,
                     int64_t candidates, MatrixView<float> values, MatrixView<int64_t> ids, SearchStats* stats) const {
    const std::shared_ptr<const SplitLists<IvfPqLists>> split = split_over(lists_, int64_t(shards.size()));
    int64_t short_rows = 0, scanned = 0;
    PqShardSearch s;
    s.whole = &lists_;
    s.slices = &split->lists;
    s.arena_row = [&](int64_t id) { return lists_.arena.find(*ids_.find(id), id); };
    s.Q = Q, s.k = k, s.nprobe = nprobe;
    s.keep = candidates > 0 ? candidates : k;
    s.rerank = candidates > 0;
    s.values = values, s.ids = ids;
    s.short_rows = &short_rows, s.candidates = &scanned;
    ivf_pq_search_shards(shards, s, cpu_threads(shards[0]));
    if (stats) stats->short_rows += short_rows, stats->candidates += scanned;
  }

  // A sharded search in two rounds (index/shard_hooks.hpp): the code scan's selection, then the
  // exact re-rank's keys for the whole base's survivors held here.
  int64_t shard_depth(int64_t refine, int64_t k, int64_t n) const { return depth(resolve_refine(refine), k, n); }

  void shard_estimates(const Context& ctx, MatrixView<const float> Q, int64_t nprobe_asked, int64_t keep,
                       MatrixView<float> keys, MatrixView<float> values, MatrixView<int64_t> ids, int64_t* candidates,
                       bool* device_scan) const {
    check_search(ctx, Q, lists_.dim, keep, values, ids);
    SIMKIT_EXPECTS(Q.where == Memory::host && keys.rows == Q.rows && keys.cols == keep, invalid_argument,
                   "ivf_pq_estimates: host queries and a ", Q.rows, " x ", keep, " key matrix are needed");
    const int64_t lists = nprobe(nprobe_asked);
    std::shared_lock lock(mutex_);
    if (lists_.size() == 0) {
      SearchOutput(values, ids).pad_all(metric_);
      std::fill_n(keys.data, keys.size(), std::numeric_limits<float>::infinity());
      return;
    }
    int64_t short_rows = 0;
    IvfPqSearchArgs args{&lists_, Q, keep, lists, 0, values, ids, &short_rows, candidates};
    args.keys = keys;
    args.device_scan = device_scan;
    if (device_scan) *device_scan = false;
    backend_for(ctx, {Q.where}, "search").device() == Device::gpu ? cuda::ivf_pq_search(ctx, args)
                                                                  : cpu::ivf_pq_search(ctx, args);
  }

  void shard_rerank_keys(MatrixView<const float> Q, MatrixView<const int64_t> ids, MatrixView<float> shortlist,
                         MatrixView<double> exact, bool gpu_rule) const {
    SIMKIT_EXPECTS(lists_.keeps_vectors, invalid_argument,
                   "ivf_pq_rerank_keys: this ivf_pq index keeps no vectors (built with refine=0)");
    std::shared_lock lock(mutex_);
    std::vector<int64_t> rows, slots;
    std::vector<float> f32;
    std::vector<double> f64;
    for (int64_t i = 0; i < ids.rows; ++i) {
      rows.clear();
      slots.clear();
      for (int64_t j = 0; j < ids.cols; ++j) {
        shortlist(i, j) = std::numeric_limits<float>::infinity();
        exact(i, j) = std::numeric_limits<double>::infinity();
        const int64_t id = ids(i, j);
        if (id < 0) continue;
        const std::optional<int64_t> l = ids_.find(id);
        SIMKIT_EXPECTS(l.has_value(), invalid_argument, "ivf_pq_rerank_keys: id ", id, " is not stored here");
        rows.push_back(lists_.arena.find(*l, id));
        slots.push_back(j);
      }
      f32.resize(rows.size());
      f64.resize(rows.size());
      cpu::ivf_pq_rerank_keys(lists_, Q.row(i), rows.data(), static_cast<int64_t>(rows.size()), f32.data(), f64.data());
      if (gpu_rule && !lists_.plan.rescores())  // l1 on the GPU: knn's column-order float sums
        for (size_t c = 0; c < rows.size(); ++c)
          f64[c] = l1_column_order(Q.row(i), lists_.vectors.data() + rows[c] * lists_.dim, lists_.dim);
      for (size_t c = 0; c < rows.size(); ++c) shortlist(i, slots[c]) = f32[c], exact(i, slots[c]) = f64[c];
    }
  }

  void shard_rank_shortlist(std::vector<std::pair<double, int64_t>>& ranked, int64_t k, float* values, int64_t* ids,
                            bool gpu_rule) const {
    cpu::ivf_pq_rank_shortlist(lists_.plan, ranked, k, values, ids, !gpu_rule);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    std::unique_ptr<IvfPqLists> packed;  // the file holds the compact form
    const IvfPqLists& L = compact_view(lists_, packed);
    std::vector<int64_t> offsets;
    IndexFileWriter w;
    write_lists(w, "ivf_pq", describe_ivf_pq(params_), L.arena.ids, offsets);
    w.add_u64("ksub", static_cast<uint64_t>(L.ksub));
    w.add("codebooks", L.codebooks.data(), L.codebooks.size() * sizeof(float));
    w.add("codes", L.codes.data(), L.codes.size());
    w.add("vectors", L.vectors.data(), L.vectors.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    IvfPqLists& L = lists_;
    read_lists(f, h);
    const int64_t d = h.dim, n = h.size;
    if (L.trained()) {
      const uint64_t ksub = f.u64("ksub");
      if (ksub < 1 || ksub > 256) refuse_file(f, "ksub = " + std::to_string(ksub) + " is not in [1, 256]");
      L.ksub = static_cast<int64_t>(ksub);
      L.codebooks = read_array<float>(f, "codebooks", L.m * L.ksub * L.dsub());
      check_finite_section(f, "codebooks", L.codebooks);
      pq_.assign(L.codebooks.data(), L.ksub);
    }
    L.codes = read_array<uint8_t>(f, "codes", n * L.m);
    for (size_t i = 0; i < L.codes.size(); ++i)
      if (L.codes[i] >= L.ksub)
        refuse_file(f, "code " + std::to_string(L.codes[i]) + " of row " + std::to_string(i / size_t(L.m)) +
                           " is past the " + std::to_string(L.ksub) + " code book entries");
    L.vectors = read_array<float>(f, "vectors", L.keeps_vectors ? n * d : 0);
    check_finite_section(f, "vectors", L.vectors);
    make_row_terms(L);  // derived from what was read, so not in the file
  }

 private:
  IvfCore& core() noexcept override { return lists_; }
  const IvfCore& core() const noexcept override { return lists_; }
  ListArena::Columns& columns() override { return columns_; }

  int64_t default_sample() const override { return std::max<int64_t>(256 * params_.nlist, 65536); }

  MatrixView<const float> training_rows(const Context&, MatrixView<const float> T,
                                        Matrix<float>& holder) const override {
    holder = prepared(T, lists_.plan);
    return holder.view();
  }

  /// The code books, from the sample's residuals to its nearest centroids under `coarse` (the
  /// rule add() files rows by).
  void trained(const Context& ctx, Matrix<float>& Tp) override {
    IvfPqLists& L = lists_;
    const std::vector<int64_t> cells = nearest_cells(ctx, Tp.view(), L);
    if (L.coarse == Metric::cosine || L.coarse == Metric::pearson) shrink_to_cells(Tp.view(), cells, L);
    subtract_centroids(Tp, cells, L);
    Context quiet = ctx;
    quiet.progress = nullptr;
    ProductQuantizer pq(L.dim, L.m);
    pq.train(quiet, Tp.view(), params_.seed + 0x9e3779b9ull, params_.iterations);
    L.ksub = pq.ksub();
    L.codebooks.assign(pq.codebooks().data(), pq.codebooks().data() + pq.codebooks().size());
    pq_ = std::move(pq);
  }

  std::vector<int64_t> stage(const Context& ctx, MatrixView<const float> X) override {
    IvfPqLists& L = lists_;
    Matrix<float> Xp = prepared(X, L.plan);
    const std::vector<int64_t> cells = nearest_cells(ctx, Xp.view(), L);
    subtract_centroids(Xp, cells, L);
    staged_codes_.resize(static_cast<size_t>(X.rows * L.m));
    pq_.encode(Xp.view(), staged_codes_.data());
    staged_ = X;
    return cells;
  }

  void put(int64_t at, int64_t i, int64_t list) override {
    IvfPqLists& L = lists_;
    const uint8_t* code = staged_codes_.data() + i * L.m;
    std::copy_n(code, L.m, L.codes.data() + at * L.m);
    if (L.keeps_vectors) std::copy_n(staged_.row(i), L.dim, L.vectors.data() + at * L.dim);
    if (L.has_row_terms()) L.row_terms[size_t(at)] = pq_row_term(L, list, code);
  }

  void unstage() override {
    staged_ = {};
    staged_codes_.clear();
  }

  void append_trained_state(std::vector<float>& state) const override {
    state.insert(state.end(), lists_.codebooks.begin(), lists_.codebooks.end());
  }
  const float* stored_row(int64_t at) const override {
    return lists_.keeps_vectors ? lists_.vectors.data() + at * lists_.dim : nullptr;
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

  IvfPqParams params_;
  ProductQuantizer pq_;  // encodes added rows; its code books are lists_.codebooks
  IvfPqLists lists_;
  IvfPqColumns columns_;
  MatrixView<const float> staged_;     // the rows of the add in progress
  std::vector<uint8_t> staged_codes_;  // and their codes
};

}  // namespace

std::string describe_ivf_pq(const IvfPqParams& p) {
  std::string s = "ivf_pq,nlist=" + std::to_string(p.nlist);
  if (p.m > 0) s += ",m=" + std::to_string(p.m);
  s += ",refine=" + std::to_string(p.refine);
  s += std::string(",refine_on=") + (p.refine_on_device ? "device" : "host");
  if (p.nprobe == kProbeFourFifths) s += ",nprobe=seed";
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

namespace {
const IvfPqIndex& pq_shard(const Index& index) {
  const auto* pq = dynamic_cast<const IvfPqIndex*>(&index);
  SIMKIT_EXPECTS(pq != nullptr, invalid_argument, "ivf_pq's sharded search was given a ", index.type(), " index");
  return *pq;
}
}  // namespace

int64_t ivf_pq_depth(const Index& index, int64_t refine, int64_t k, int64_t n) {
  return pq_shard(index).shard_depth(refine, k, n);
}

void ivf_pq_estimates(const Index& index, const Context& ctx, MatrixView<const float> Q, int64_t nprobe, int64_t keep,
                      MatrixView<float> keys, MatrixView<float> values, MatrixView<int64_t> ids, int64_t* candidates,
                      bool* device_scan) {
  pq_shard(index).shard_estimates(ctx, Q, nprobe, keep, keys, values, ids, candidates, device_scan);
}

void ivf_pq_rerank_keys(const Index& index, MatrixView<const float> Q, MatrixView<const int64_t> ids,
                        MatrixView<float> shortlist, MatrixView<double> exact, bool gpu_rule) {
  pq_shard(index).shard_rerank_keys(Q, ids, shortlist, exact, gpu_rule);
}

void ivf_pq_rank_shortlist(const Index& index, std::vector<std::pair<double, int64_t>>& ranked, int64_t k,
                           float* values, int64_t* ids, bool gpu_rule) {
  pq_shard(index).shard_rank_shortlist(ranked, k, values, ids, gpu_rule);
}

std::unique_ptr<Index> load_ivf_pq_index(const IndexFile& f, const IvfPqParams& p) {
  const CommonHeader h = read_common(f, "ivf_pq");
  if (p.m != 0 && h.dim % p.m != 0) refuse_file(f, "its m does not divide the dimension");
  auto index = std::make_unique<IvfPqIndex>(h.dim, h.metric, p);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
