// The hnsw search on the CPU: per query, the greedy descent to layer 1, the ef search of layer 0
// (removed and disallowed nodes walked through, never kept), then knn's rule over what it kept:
// the nearest plan.candidates(k, found) by the walk's float32 key re-scored in float64 and ranked
// by (key, id) (core/rescore.hpp); l1, which knn ranks on its float32 sums, gets knn's own sums
// (cpu/l1.hpp) for every node kept, so its values carry knn's bits. Queries run in parallel, each
// thread with its own visited list from the graph's pool, so concurrent searches share nothing
// they write. storage=sq8 walks the codes (cpu/hnsw_sq8.hpp) and re-ranks the best refine x k
// of its nodes on the float32 rows by the same rule: the codes only choose which rows it reads.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "core/rescore.hpp"
#include "cpu/l1.hpp"
#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/cpu/hnsw_sq8.hpp"
#include "index/hnsw/cpu/hnsw_walk.hpp"
#include "index/hnsw/hnsw_graph.hpp"
#include "index/id_filter.hpp"

namespace simkit::detail::cpu {

namespace {

using hnsw::CodeMeter;
using hnsw::CodeQuery;
using hnsw::Meter;
using hnsw::Near;
using hnsw::Probe;
using hnsw::WalkScratch;

struct Thread {
  std::unique_ptr<VisitedList> visited;
  WalkScratch walk;
  std::vector<Near> starts;
  CodeQuery code_query;
  ExactPairs pairs;
  int64_t short_rows = 0;
};

/// The query's own sums of exact_cosine (core/exact_metric.hpp): its mean and |q (- mean)|^2.
struct QueryStats {
  double mean = 0, norm2 = 0;
};
QueryStats query_stats(ExactForm form, const float* q, int64_t d) {
  QueryStats s;
  if (form == ExactForm::centred_cosine) s.mean = exact_mean(q, d);
  if (form == ExactForm::cosine || form == ExactForm::centred_cosine) s.norm2 = exact_dot(q, q, d, s.mean, s.mean);
  return s;
}

/// exact_key for cosine and pearson with the two norms known (the query's once, the node's from
/// the add): exact_cosine's own expression over the same double sums, so the same bits
/// (FullBeamEqualsKnnOnEveryMetric checks them), for a third of its arithmetic. Its three serial
/// sums a row were 22% of an sq8 search's profile (perf, ef 48); without them, one run on
/// WordNet, sq8, queries/s: ef 16 17,965 -> 30,220; ef 48 9,835 -> 11,888; ef 96 7,043 -> 7,208.
double exact_cosine_key(const HnswGraph& g, ExactForm form, const QueryStats& qs, const float* q, uint32_t v) {
  const double mx = form == ExactForm::centred_cosine ? g.mean64[v] : 0.0;
  const double ab = exact_dot(q, g.row(v), g.dim, qs.mean, mx), aa = qs.norm2, bb = g.norm2[v];
  if (!(aa > 0 && bb > 0)) return -0.0;
  const double c = ab / (std::sqrt(aa) * std::sqrt(bb));
  return -(c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c));
}

/// sq8: the walk's best refine x k (by their codes) re-measured on the float32 rows and re-sorted,
/// found cut to them. The float64 re-score then takes knn's candidates(k) of these, as for float32,
/// instead of re-scoring all refine x k in float64 (a float32 AVX-512 row costs a fraction of a
/// float64 one). Measured together with the codes of unit rows and the links prefetch (one run,
/// WordNet, 2 threads, queries/s): ef 48 7,595 -> 9,835; ef 128 4,572 -> 5,854.
void refine(const HnswSearchArgs& a, const Meter& meter, int64_t q, std::vector<Near>& found) {
  const auto count = std::min<int64_t>(static_cast<int64_t>(found.size()), a.refine * a.k);
  found.resize(size_t(count));
  // Every row is requested before the first is measured: they are scattered over the float32
  // array, so each is a miss, and the misses overlap instead of following one another.
  for (const Near& n : found) meter.prefetch(n.node);
  const Probe p = meter.query(a.Q.row(q));
  for (Near& n : found) n.dist = meter(p, n.node);
  std::sort(found.begin(), found.end());
}

/// Query q's results from the walk's kept nodes (s.best, unordered).
void finish(const HnswSearchArgs& a, const Meter& meter, int64_t q, Thread& t) {
  const HnswGraph& g = *a.graph;
  std::vector<Near>& found = t.walk.best;
  std::sort(found.begin(), found.end());
  // l1 (no float64 re-score: knn's own float32 sums for every node kept) takes refine x k as they are.
  if (a.refine > 0 && a.plan.rescores()) refine(a, meter, q, found);
  const auto count = static_cast<int64_t>(found.size());
  int64_t keep = a.plan.rescores() ? a.plan.candidates(a.k, count) : count;
  if (a.refine > 0 && !a.plan.rescores()) keep = std::min(count, a.refine * a.k);
  const float* query = a.Q.row(q);
  const QueryStats qs = query_stats(a.plan.exact, query, g.dim);
  t.pairs.clear();
  for (int64_t i = 0; i < keep; ++i) {
    const uint32_t v = found[size_t(i)].node;
    double key;
    if (a.plan.rescores()) {
      key = g.normalised() ? exact_cosine_key(g, a.plan.exact, qs, query, v)
                           : exact_key(a.plan.exact, query, g.row(v), g.dim);
    } else {
      float value;
      l1_block(query, 1, g.row(v), 1, g.dim, &value, 1);
      key = value;
    }
    t.pairs.emplace_back(key, g.ids[v]);
  }
  float* values = a.values.row(q);
  int64_t* ids = a.ids.row(q);
  rank_pairs(a.plan, t.pairs, a.k, values, ids);
  const float worst = a.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t p = std::min(a.k, count); p < a.k; ++p) values[p] = worst, ids[p] = -1;
  if (count < a.k) ++t.short_rows;
}

template <class M, class P>
void walk(const HnswSearchArgs& a, const M& meter, const P& p, Thread& t) {
  const HnswGraph& g = *a.graph;
  const auto entry = static_cast<uint32_t>(g.entry);
  const Near from = hnsw::descend(g, meter, p, {meter(p, entry), entry}, g.top, 0, t.walk);
  ++t.walk.distances;
  t.visited->begin(g.nodes());
  t.visited->first_visit(from.node);
  t.starts.assign(1, from);
  const IdFilter* filter = a.filter;
  if (filter)
    hnsw::search_layer(
        g, meter, p, t.starts, a.ef, 0, [&](uint32_t v) { return g.deleted[v] == 0 && filter->allows(g.ids[v]); },
        *t.visited, t.walk);
  else if (a.any_removed)
    hnsw::search_layer(
        g, meter, p, t.starts, a.ef, 0, [&](uint32_t v) { return g.deleted[v] == 0; }, *t.visited, t.walk);
  else  // no mark to read: one random access less for every node the walk keeps
    hnsw::search_layer(
        g, meter, p, t.starts, a.ef, 0, [](uint32_t) { return true; }, *t.visited, t.walk);
}

/// `codes`: the sq8 walk's meter; null for the float32 walk.
void search_one(const HnswSearchArgs& a, const Meter& meter, const CodeMeter* codes, int64_t q, Thread& t) {
  if (codes)
    walk(a, *codes, codes->query(meter, a.Q.row(q), t.code_query), t);
  else
    walk(a, meter, meter.query(a.Q.row(q)), t);
  finish(a, meter, q, t);
}

}  // namespace

void hnsw_search(const Context& ctx, const HnswSearchArgs& a) {
  const HnswGraph& g = *a.graph;
  const Meter meter(g);
  std::optional<CodeMeter> codes;
  if (g.sq8) codes.emplace(g);
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu_threads(ctx), a.Q.rows)));
  std::atomic<int64_t> distances{0}, short_rows{0};
#pragma omp parallel num_threads(threads)
  {
    Thread t;
    t.visited = g.visited.take();
#pragma omp for schedule(dynamic, 4)
    for (int64_t q = 0; q < a.Q.rows; ++q) search_one(a, meter, codes ? &*codes : nullptr, q, t);
    g.visited.give_back(std::move(t.visited));
    distances += t.walk.distances;
    short_rows += t.short_rows;
  }
  if (a.candidates) *a.candidates += distances.load();
  if (a.short_rows) *a.short_rows += short_rows.load();
}

}  // namespace simkit::detail::cpu
