// The hnsw search on the CPU: per query, the greedy descent to layer 1, the ef search of layer 0
// (removed and disallowed nodes walked through, never kept), then knn's rule over what it kept:
// the nearest plan.candidates(k, found) by the walk's float32 key re-scored in float64 and ranked
// by (key, id) (core/rescore.hpp); l1, which knn ranks on its float32 sums, gets knn's own sums
// (cpu/l1.hpp) for every node kept, so its values carry knn's bits. Queries run in parallel, each
// thread with its own visited list from the graph's pool, so concurrent searches share nothing
// they write.

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <vector>

#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "core/rescore.hpp"
#include "cpu/l1.hpp"
#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/cpu/hnsw_walk.hpp"
#include "index/hnsw/hnsw_graph.hpp"
#include "index/id_filter.hpp"

namespace simkit::detail::cpu {

namespace {

using hnsw::Meter;
using hnsw::Near;
using hnsw::Probe;
using hnsw::WalkScratch;

struct Thread {
  std::unique_ptr<VisitedList> visited;
  WalkScratch walk;
  std::vector<Near> starts;
  ExactPairs pairs;
  int64_t short_rows = 0;
};

/// Query q's results from the walk's kept nodes (s.best, unordered).
void finish(const HnswSearchArgs& a, int64_t q, Thread& t) {
  const HnswGraph& g = *a.graph;
  std::vector<Near>& found = t.walk.best;
  std::sort(found.begin(), found.end());
  const auto count = static_cast<int64_t>(found.size());
  const int64_t keep = a.plan.rescores() ? a.plan.candidates(a.k, count) : count;
  const float* query = a.Q.row(q);
  t.pairs.clear();
  for (int64_t i = 0; i < keep; ++i) {
    const uint32_t v = found[size_t(i)].node;
    double key;
    if (a.plan.rescores()) {
      key = exact_key(a.plan.exact, query, g.row(v), g.dim);
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

void search_one(const HnswSearchArgs& a, const Meter& meter, int64_t q, Thread& t) {
  const HnswGraph& g = *a.graph;
  const Probe p = meter.query(a.Q.row(q));
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
  else
    hnsw::search_layer(
        g, meter, p, t.starts, a.ef, 0, [&](uint32_t v) { return g.deleted[v] == 0; }, *t.visited, t.walk);
  finish(a, q, t);
}

}  // namespace

void hnsw_search(const Context& ctx, const HnswSearchArgs& a) {
  const HnswGraph& g = *a.graph;
  const Meter meter(g);
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu_threads(ctx), a.Q.rows)));
  std::atomic<int64_t> distances{0}, short_rows{0};
#pragma omp parallel num_threads(threads)
  {
    Thread t;
    t.visited = g.visited.take();
#pragma omp for schedule(dynamic, 4)
    for (int64_t q = 0; q < a.Q.rows; ++q) search_one(a, meter, q, t);
    g.visited.give_back(std::move(t.visited));
    distances += t.walk.distances;
    short_rows += t.short_rows;
  }
  if (a.candidates) *a.candidates += distances.load();
  if (a.short_rows) *a.short_rows += short_rows.load();
}

}  // namespace simkit::detail::cpu
