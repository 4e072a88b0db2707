// hnsw on the Index contract: the graph (hnsw_graph.hpp) with the id map, the allow-list planner
// and the file format every index shares.
//
// Nodes are numbered in insertion order. remove() marks a node, which the walks pass through and
// never return (an id removed and added again is a new node); once the marks reach a tenth of
// the nodes, it repairs the graph (cpu::hnsw_repair): the marked nodes' neighbours re-linked, the
// live nodes renumbered, the memory of the others returned for later adds. Searches
// with ef >= size() (and on an index with nothing live) skip the graph for the exact scan over
// the live rows (search_rows, flat's search): the walk would have to reach every node, and a
// pruned graph is not guaranteed to connect them all. Allow-lists go through the planner
// (filter_in_graph): a selective one is gathered and searched exactly, a broad one tested in
// the walk.

#include "index/hnsw/hnsw_index.hpp"

#include <algorithm>
#include <bit>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "index/filtered_search.hpp"
#include "index/hnsw/hnsw_graph.hpp"
#include "index/id_filter.hpp"
#include "index/id_map.hpp"
#include "index/index_support.hpp"
#include "index/search_params.hpp"

namespace simkit::detail {

namespace {

int64_t words(int64_t bits) { return (bits + 63) / 64; }

class HnswIndex final : public Index {
 public:
  HnswIndex(int64_t dim, Metric metric, const HnswParams& p) : params_(p), metric_(metric) {
    g_.dim = dim;
    g_.m = p.m;
    g_.space = hnsw_space(metric);
    g_.sq8 = p.storage == "sq8";
  }

  std::string type() const override { return "hnsw"; }
  std::string description() const override { return describe_hnsw(params_); }
  int64_t dim() const noexcept override { return g_.dim; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return ids_.size();
  }
  bool is_trained() const override { return true; }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    // Capacities: the arrays grow by half, and what they reserved is held.
    return g_.vectors.capacity() * sizeof(float) + (g_.links0.capacity() + g_.upper.capacity()) * sizeof(uint32_t) +
           (g_.inv_norm.capacity() + g_.mean.capacity()) * sizeof(float) +
           (g_.ids.capacity() + g_.upper_at.capacity()) * sizeof(int64_t) + g_.level.capacity() +
           g_.deleted.capacity() + g_.codes.capacity() +
           (g_.code_sq.capacity() + g_.sq_lo.capacity() + g_.sq_step.capacity()) * sizeof(float) +
           (g_.norm2.capacity() + g_.mean64.capacity()) * sizeof(double) + ids_.memory_bytes() +
           g_.visited.memory_bytes(g_.nodes());
  }
  int64_t next_id() const override {
    std::shared_lock lock(mutex_);
    return ids_.next();
  }

  void train(const Context& ctx, MatrixView<const float> X) override { check_rows(ctx, X, g_.dim, "train"); }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, g_.dim, "add");
    std::unique_lock lock(mutex_);
    const std::vector<int64_t> ids = ids_.assign(given, X.rows);
    SIMKIT_EXPECTS(g_.nodes() + X.rows < (int64_t(1) << 32) - 1, invalid_argument, "add: an hnsw index holds at most ",
                   (int64_t(1) << 32) - 2, " nodes (removed ones included)");
    const int64_t first = g_.nodes();
    // The nodes the build linked are held even when it is interrupted (hnsw_insert keeps whole
    // batches): their ids are recorded either way.
    struct Record {
      HnswIndex& self;
      int64_t first;
      ~Record() { self.record(first); }
    } record{*this, first};
    cpu::hnsw_insert(ctx, g_, X, ids, params_.ef_construction, params_.seed);
    if (ctx.progress) ctx.progress(1.0);
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    check_remove_ids(gone);
    std::unique_lock lock(mutex_);
    int64_t removed = 0;
    for (int64_t i = 0; i < gone.size; ++i)
      if (const std::optional<int64_t> node = ids_.erase(gone[i])) {
        g_.deleted[size_t(*node)] = 1;
        ++removed;
      }
    if (removed > 0 && (g_.nodes() - ids_.size()) * kRepairShare >= g_.nodes()) repair();
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override;

  void save(const std::string& path) const override;
  void load(const IndexFile& f, const CommonHeader& h);
  void load_codes(const IndexFile& f);

 private:
  MatrixView<const float> stored() const noexcept { return {g_.vectors.data(), g_.nodes(), g_.dim}; }

  /// The marks cost every walk that passes them and hold their rows' memory; a repair costs a
  /// few hundred distances per live node (cpu/hnsw_repair.cpp). A tenth keeps repairs rare (a
  /// stream of single removes repairs once per tenth of the graph) and the marks a small part of
  /// what a walk passes.
  static constexpr int64_t kRepairShare = 10;

  /// The marked nodes taken out of the graph, with the id map moved to the new node numbers.
  /// remove() has no Context: the repair runs on every hardware thread.
  void repair() {
    cpu::hnsw_repair(Context{}, g_);
    ascending_ = true;
    for (int64_t v = 0; v < g_.nodes(); ++v) {
      ids_.set(g_.ids[size_t(v)], v);
      if (v > 0 && g_.ids[size_t(v)] < g_.ids[size_t(v - 1)]) ascending_ = false;
    }
  }

  /// Records the ids of nodes [first, nodes()) in the id map.
  void record(int64_t first) {
    for (int64_t v = first; v < g_.nodes(); ++v) {
      ids_.set(g_.ids[size_t(v)], v);
      if (v > 0 && g_.ids[size_t(v)] < g_.ids[size_t(v - 1)]) ascending_ = false;
    }
  }

  void search_exact(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
                    MatrixView<float> values, MatrixView<int64_t> ids) const;

  HnswParams params_;
  Metric metric_;
  HnswGraph g_;
  IdMap ids_;              // id -> node, live nodes only
  bool ascending_ = true;  // node ids ascend with the nodes (removed ones included)
  mutable std::shared_mutex mutex_;
};

void HnswIndex::search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
                       MatrixView<float> values, MatrixView<int64_t> ids) const {
  check_search(ctx, Q, g_.dim, k, values, ids);
  const HnswSearchParams* own = own_search_params<HnswSearchParams>(sp, "hnsw", "HnswSearchParams");
  const int64_t asked = own ? own->ef : 0;
  SIMKIT_EXPECTS(asked >= 0, invalid_argument, "search: ef must be >= 1 (0: the index's default), got ", asked);
  if (sp.allowed) check_allowed(*sp.allowed);
  std::shared_lock lock(mutex_);
  const int64_t live = ids_.size();
  const int64_t ef = std::max(k, asked > 0 ? asked : params_.ef);
  if (ef >= live) return search_exact(ctx, Q, k, sp, values, ids);
  if (sp.allowed && !filter_in_graph(sp.allowed->size, live, ef, 2 * g_.m, g_.sq8))
    return search_allowed(ctx, Q, k, metric_, stored(), allowed_rows_mapped(ids_, *sp.allowed), values, ids, sp.stats);
  // The graph is searched on the host: queries on the device come over first (index.hpp).
  const Backend& backend = backend_for(ctx, {Q.where, values.where}, "search");
  Matrix<float> q_host;
  MatrixView<const float> Qh = Q;
  if (Q.where == Memory::device) {
    q_host = Matrix<float>(Q.rows, Q.cols);
    backend.copy_to_host(ctx, q_host.data(), Q.data, static_cast<size_t>(Q.size()) * sizeof(float));
    Qh = q_host.view();
  }
  std::optional<IdFilter> filter;
  if (sp.allowed) filter.emplace(*sp.allowed);
  SearchOutput out(values, ids);
  int64_t candidates = 0, short_rows = 0;
  const HnswSearchArgs args{&g_,
                            plan_metric(metric_),
                            Qh,
                            k,
                            ef,
                            g_.sq8 ? params_.refine : 0,
                            filter ? &*filter : nullptr,
                            live < g_.nodes(),
                            out.values(),
                            out.ids(),
                            &candidates,
                            &short_rows};
  cpu::hnsw_search(ctx, args);
  if (sp.stats) sp.stats->candidates += candidates, sp.stats->short_rows += short_rows;
  out.deliver(ctx);
}

void HnswIndex::search_exact(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
                             MatrixView<float> values, MatrixView<int64_t> ids) const {
  const int64_t n = g_.nodes();
  IdRows rows{stored(), stored(), g_.ids.data(), ascending_};
  std::vector<uint64_t> mask;
  if (sp.allowed || ids_.size() < n) {  // the live (and allowed) nodes, as the scan's row mask
    mask.assign(size_t(words(n)), 0);
    if (sp.allowed) {
      IdFilter(*sp.allowed).mark(g_.ids.data(), n, 0, mask.data());
    } else {
      std::fill(mask.begin(), mask.end(), ~uint64_t(0));
      if (n % 64) mask.back() = (uint64_t(1) << (n % 64)) - 1;
    }
    int64_t count = 0;
    for (int64_t v = 0; v < n; ++v) {
      if (g_.deleted[size_t(v)]) mask[size_t(v >> 6)] &= ~(uint64_t(1) << (v & 63));
      count += (mask[size_t(v >> 6)] >> (v & 63)) & 1u;
    }
    rows.mask = mask.data();
    rows.allowed = count;
  }
  search_rows(ctx, Q, k, metric_, rows, values, ids, sp.stats);
}

// The file: the common sections, the description, then the graph as it is in memory (removed
// nodes included, so that node numbers -- and with them the layers later adds draw -- survive).
// The scales of cosine and pearson are recomputed from the vectors. sq8 adds its quantizer and
// codes (sq_lo, sq_step, codes: sections a float32 file does not have, so those load as before).
void HnswIndex::save(const std::string& path) const {
  std::shared_lock lock(mutex_);
  IndexFileWriter w;
  write_common(w, "hnsw", metric_, g_.dim, ids_.size(), ids_.next());
  w.add_text("description", describe_hnsw(params_));
  w.add_u64("nodes", static_cast<uint64_t>(g_.nodes()));
  w.add_u64("entry", static_cast<uint64_t>(g_.entry + 1));  // 0: none
  w.add_u64("top", static_cast<uint64_t>(g_.top));
  w.add("ids", g_.ids.data(), g_.ids.size() * sizeof(int64_t));
  w.add("vectors", g_.vectors.data(), g_.vectors.size() * sizeof(float));
  w.add("level", g_.level.data(), g_.level.size());
  w.add("deleted", g_.deleted.data(), g_.deleted.size());
  w.add("links0", g_.links0.data(), g_.links0.size() * sizeof(uint32_t));
  w.add("upper", g_.upper.data(), g_.upper.size() * sizeof(uint32_t));
  if (g_.sq8) {
    w.add("sq_lo", g_.sq_lo.data(), g_.sq_lo.size() * sizeof(float));
    w.add("sq_step", g_.sq_step.data(), g_.sq_step.size() * sizeof(float));
    w.add("codes", g_.codes.data(), g_.codes.size());
  }
  w.write(path);
}

/// Refuses a list on `layer` that is longer than `cap` or names a node outside [0, nodes) or
/// one that does not reach that layer: every walk reads the named node's list on it.
void check_list(const IndexFile& f, const HnswGraph& g, const uint32_t* list, int layer) {
  if (list[0] > g.capacity(layer)) refuse_file(f, "an hnsw node holds more links than its layer allows");
  for (uint32_t i = 1; i <= list[0]; ++i)
    if (list[i] >= g.nodes() || g.level[list[i]] < layer)
      refuse_file(f, "an hnsw link names a node outside the graph or its layer");
}

void HnswIndex::load(const IndexFile& f, const CommonHeader& h) {
  const uint64_t nodes64 = f.u64("nodes");
  if (nodes64 < static_cast<uint64_t>(h.size) || nodes64 > (uint64_t(1) << 32) - 2)
    refuse_file(f, "the hnsw node count is out of range");
  const auto n = static_cast<int64_t>(nodes64);
  g_.ids = read_array<int64_t>(f, "ids", n);
  g_.vectors = read_array<float>(f, "vectors", n * h.dim);
  check_finite_section(f, "vectors", g_.vectors);
  g_.level = read_array<uint8_t>(f, "level", n);
  g_.deleted = read_array<uint8_t>(f, "deleted", n);
  g_.links0 = read_array<uint32_t>(f, "links0", n * g_.stride0());
  int64_t upper = 0, live = 0, top = 0;
  for (int64_t v = 0; v < n; ++v) {
    const int level = g_.level[size_t(v)];
    if (level > kHnswMaxLevel || g_.deleted[size_t(v)] > 1) refuse_file(f, "an hnsw node's layer or mark is invalid");
    g_.upper_at.push_back(level > 0 ? upper : -1);
    upper += level * (1 + g_.m);
    live += 1 - g_.deleted[size_t(v)];
    top = std::max<int64_t>(top, level);
  }
  g_.upper = read_array<uint32_t>(f, "upper", upper);
  for (int64_t v = 0; v < n; ++v)
    for (int layer = 0; layer <= g_.level[size_t(v)]; ++layer) check_list(f, g_, g_.links(v, layer), layer);
  const uint64_t entry = f.u64("entry");
  if (live != h.size || entry > nodes64 || (n == 0) != (entry == 0) || f.u64("top") != static_cast<uint64_t>(top) ||
      (n > 0 && g_.level[size_t(entry - 1)] != top))
    refuse_file(f, "the hnsw graph's entry point, top layer or live count contradicts its nodes");
  g_.entry = static_cast<int64_t>(entry) - 1;
  g_.top = static_cast<int>(top);
  std::vector<int64_t> live_ids, slots;
  for (int64_t v = 0; v < n; ++v) {
    if (g_.deleted[size_t(v)]) continue;
    live_ids.push_back(g_.ids[size_t(v)]);
    slots.push_back(v);
  }
  ids_.reset(live_ids, slots, h.next_id, f.path());
  for (int64_t v = 1; v < n; ++v)
    if (g_.ids[size_t(v)] < g_.ids[size_t(v - 1)]) ascending_ = false;
  hnsw_row_scales(g_, 0);
  if (g_.sq8) load_codes(f);
}

/// sq8's sections: the quantizer (empty until the first add trained it) and the codes.
void HnswIndex::load_codes(const IndexFile& f) {
  const int64_t n = g_.nodes(), d = g_.dim, trained = n > 0 ? d : 0;
  g_.sq_lo = read_array<float>(f, "sq_lo", trained);
  g_.sq_step = read_array<float>(f, "sq_step", trained);
  check_finite_section(f, "sq_lo", g_.sq_lo);
  check_finite_section(f, "sq_step", g_.sq_step);
  for (float step : g_.sq_step)
    if (step < 0) refuse_file(f, "an hnsw quantizer step is negative");
  g_.codes = read_array<uint8_t>(f, "codes", n * g_.code_stride());
  cpu::hnsw_derive_code_terms(g_);
}

}  // namespace

std::string describe_hnsw(const HnswParams& p) {
  std::string d = "hnsw,m=" + std::to_string(p.m) + ",ef_construction=" + std::to_string(p.ef_construction) +
                  ",ef=" + std::to_string(p.ef) + ",seed=" + std::to_string(p.seed);
  if (p.storage != "float32") d += ",storage=" + p.storage + ",refine=" + std::to_string(p.refine);
  return d;
}

std::unique_ptr<Index> make_hnsw_index(int64_t dim, Metric metric, const HnswParams& p) {
  return std::make_unique<HnswIndex>(dim, metric, p);
}

std::unique_ptr<Index> load_hnsw_index(const IndexFile& f, const HnswParams& p) {
  const CommonHeader h = read_common(f, "hnsw");
  auto index = std::make_unique<HnswIndex>(h.dim, h.metric, p);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
