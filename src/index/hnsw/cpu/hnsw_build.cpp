// The hnsw build on the CPU: nodes appended, then linked in batches, each batch in two phases.
//
//   1. search (parallel over the batch's nodes): each node walks the graph as it stood before the
//      batch -- greedy descent to its own top layer, then an ef_construction search of each layer
//      below -- and also measures every earlier node of its own batch directly (which the frozen
//      graph cannot show it). The nearest ef_construction of both, per layer, go through the
//      neighbour-selection heuristic: its forward links, m per upper layer, 2m on layer 0.
//   2. link (parallel over the nodes that gain links): each node's new list is its forward links
//      (batch nodes), plus every batch node that chose it, in node order; a list past its
//      capacity is cut back to it by the same heuristic. Then the entry point moves to the first
//      node of a new top layer, in node order.
//
// Phase 1 reads a graph no thread writes; phase 2 writes each list from one task that reads no
// other list. Neither depends on which thread runs what, so the graph depends on the seed and on
// how the rows were split into add() calls (the batches are cut from each call's rows by the
// graph's size alone), never on the thread count. A sequential insertion -- hnswlib's, in one
// thread -- is the special case of batches of one; the batches cost little quality because the
// nodes of a batch see each other exactly, and they let the searches, nearly all the work, run
// in parallel.
//
// Both phases choose links with the heuristic of cpu/hnsw_select.hpp.

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/parallel.hpp"
#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/cpu/hnsw_select.hpp"
#include "index/hnsw/cpu/hnsw_sq8.hpp"
#include "index/hnsw/cpu/hnsw_walk.hpp"
#include "index/hnsw/hnsw_graph.hpp"

namespace simkit::detail::cpu {

namespace {

using hnsw::Meter;
using hnsw::Near;
using hnsw::Probe;
using hnsw::ReverseLink;
using hnsw::select_links;
using hnsw::WalkScratch;

// Batch sizes: an eighth of the graph, within [32, 1024]. A batch's node measures every earlier
// node of its batch directly -- up to 1,023 distances, against the ~ef_construction x 2m a walk
// computes -- and a small graph is grown in small steps, so that the early nodes, which every
// later walk passes through, are linked as a sequential build would link them.
constexpr int64_t kBatchMin = 32, kBatchMax = 1024;
int64_t batch_size(int64_t nodes) { return std::clamp<int64_t>(nodes / 8, kBatchMin, kBatchMax); }

/// Appends the rows as unlinked nodes: unreachable until phase 2 links them.
void append_nodes(HnswGraph& g, MatrixView<const float> X, const std::vector<int64_t>& ids, uint64_t seed) {
  const int64_t first = g.nodes(), n = X.rows, d = g.dim;
  // Growth by half: a stream of small adds copies the arrays O(log n) times.
  auto grow = [](auto& v, size_t needed) {
    if (needed > v.capacity()) v.reserve(std::max(needed, v.size() + v.size() / 2));
    v.resize(needed);
  };
  grow(g.vectors, static_cast<size_t>((first + n) * d));
  grow(g.links0, static_cast<size_t>((first + n) * g.stride0()));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = first + i;
    std::copy_n(X.row(i), d, g.vectors.data() + v * d);
    std::fill_n(g.links0.data() + v * g.stride0(), g.stride0(), 0u);
    g.ids.push_back(ids[static_cast<size_t>(i)]);
    const int level = hnsw_level(seed, v, g.m);
    g.level.push_back(static_cast<uint8_t>(level));
    g.deleted.push_back(0);
    g.upper_at.push_back(level > 0 ? static_cast<int64_t>(g.upper.size()) : -1);
    if (level > 0) g.upper.resize(g.upper.size() + static_cast<size_t>(level * (1 + g.m)), 0u);
  }
  hnsw_row_scales(g, first);
  if (g.sq8) {
    if (g.sq_lo.empty() && n > 0) hnsw::sq8_train(g, first);  // the first add's rows (cpu/hnsw_sq8.hpp)
    hnsw::sq8_encode(g, first);
  }
}

/// Drops nodes [keep, nodes()), which no list may name.
void truncate_nodes(HnswGraph& g, int64_t keep) {
  const auto k = static_cast<size_t>(keep);
  for (size_t v = k; v < g.upper_at.size(); ++v)
    if (g.upper_at[v] >= 0) {
      g.upper.resize(static_cast<size_t>(g.upper_at[v]));
      break;
    }
  g.vectors.resize(k * static_cast<size_t>(g.dim));
  g.links0.resize(k * static_cast<size_t>(g.stride0()));
  g.ids.resize(k), g.level.resize(k), g.deleted.resize(k), g.upper_at.resize(k);
  if (g.normalised()) g.inv_norm.resize(k), g.norm2.resize(k);
  if (g.space == HnswSpace::pearson) g.mean.resize(k), g.mean64.resize(k);
  if (g.sq8) {
    g.codes.resize(k * static_cast<size_t>(g.code_stride()));
    if (g.space == HnswSpace::sqdist) g.code_sq.resize(k);
    if (keep == 0) g.sq_lo.clear(), g.sq_step.clear();  // the first add trained it: the next one will
  }
}

/// Phase 1 for node v of the batch [b0, v]: its forward links, per layer 0 .. level(v).
void plan_links(const HnswGraph& g, const Meter& meter, int64_t b0, uint32_t v, int64_t ef, VisitedList& visited,
                WalkScratch& s, std::vector<std::vector<uint32_t>>& out) {
  const int level = g.level[v];
  const Probe p = meter.node(v);
  std::vector<std::vector<Near>> cands(static_cast<size_t>(level + 1));
  if (g.entry >= 0) {  // the graph before the batch
    const auto entry = static_cast<uint32_t>(g.entry);
    Near from = hnsw::descend(g, meter, p, {meter(p, entry), entry}, g.top, level, s);
    std::vector<Near> starts = {from};
    auto live = [&](uint32_t u) { return g.deleted[u] == 0; };  // removed nodes are passed, not linked
    for (int layer = std::min(level, g.top); layer >= 0; --layer) {
      visited.begin(g.nodes());
      for (const Near& n : starts) visited.first_visit(n.node);
      hnsw::search_layer(g, meter, p, starts, ef, layer, live, visited, s);
      cands[size_t(layer)] = s.best;
      if (!s.best.empty()) starts = s.best;
    }
  }
  for (int64_t u = b0; u < v; ++u) {  // the batch's earlier nodes, directly
    const int top = std::min<int>(level, g.level[size_t(u)]);
    if (g.deleted[size_t(u)]) continue;
    const Near n{meter(p, static_cast<uint32_t>(u)), static_cast<uint32_t>(u)};
    for (int layer = 0; layer <= top; ++layer) cands[size_t(layer)].push_back(n);
  }
  s.distances += v - b0;
  out.resize(static_cast<size_t>(level + 1));
  for (int layer = 0; layer <= level; ++layer) {
    std::vector<Near>& c = cands[size_t(layer)];
    std::sort(c.begin(), c.end());
    if (static_cast<int64_t>(c.size()) > ef) c.resize(static_cast<size_t>(ef));
    select_links(meter, c, g.capacity(layer), out[size_t(layer)]);
  }
}

/// Phase 2 for one list: `node`'s list on `layer` gains `sources` (ascending), cut back to its
/// capacity by the heuristic when they overflow it.
void extend_list(HnswGraph& g, const Meter& meter, uint32_t node, int layer, const uint32_t* sources, int64_t count,
                 std::vector<Near>& scratch, std::vector<uint32_t>& kept) {
  uint32_t* list = g.links(node, layer);
  const int64_t cap = g.capacity(layer), have = list[0];
  if (have + count <= cap) {
    std::copy_n(sources, count, list + 1 + have);
    list[0] = static_cast<uint32_t>(have + count);
    return;
  }
  const Probe p = meter.node(node);
  scratch.clear();
  for (int64_t i = 0; i < have; ++i) scratch.push_back({meter(p, list[1 + i]), list[1 + i]});
  for (int64_t i = 0; i < count; ++i) scratch.push_back({meter(p, sources[i]), sources[i]});
  std::sort(scratch.begin(), scratch.end());
  select_links(meter, scratch, cap, kept);
  std::copy(kept.begin(), kept.end(), list + 1);
  list[0] = static_cast<uint32_t>(kept.size());
}

/// Phase 2: forward lists written, reverse links added, the entry point moved.
void link_batch(const Context& ctx, int threads, HnswGraph& g, const Meter& meter, int64_t b0,
                const std::vector<std::vector<std::vector<uint32_t>>>& plans) {
  std::vector<ReverseLink> reverse;
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto v = static_cast<uint32_t>(b0 + static_cast<int64_t>(i));
    for (size_t layer = 0; layer < plans[i].size(); ++layer) {
      uint32_t* list = g.links(v, static_cast<int>(layer));
      list[0] = static_cast<uint32_t>(plans[i][layer].size());
      std::copy(plans[i][layer].begin(), plans[i][layer].end(), list + 1);
      for (uint32_t u : plans[i][layer]) reverse.push_back({static_cast<uint32_t>(layer), u, v});
    }
  }
  std::sort(reverse.begin(), reverse.end());
  std::vector<size_t> starts;  // one group per (layer, target)
  for (size_t e = 0; e < reverse.size(); ++e)
    if (e == 0 || reverse[e].layer != reverse[e - 1].layer || reverse[e].target != reverse[e - 1].target)
      starts.push_back(e);
  starts.push_back(reverse.size());
  std::vector<uint32_t> sources(reverse.size());
  for (size_t e = 0; e < reverse.size(); ++e) sources[e] = reverse[e].source;
  Context quiet = ctx;
  quiet.progress = nullptr;
  std::vector<std::vector<Near>> scratch(static_cast<size_t>(threads));
  std::vector<std::vector<uint32_t>> kept(static_cast<size_t>(threads));
  run_tasks(quiet, threads, static_cast<int64_t>(starts.size()) - 1, [&](int64_t t, int tid) {
    const ReverseLink& e = reverse[starts[size_t(t)]];
    extend_list(g, meter, e.target, static_cast<int>(e.layer), sources.data() + starts[size_t(t)],
                static_cast<int64_t>(starts[size_t(t) + 1] - starts[size_t(t)]), scratch[size_t(tid)],
                kept[size_t(tid)]);
  });
  for (size_t i = 0; i < plans.size(); ++i) {
    const int64_t v = b0 + static_cast<int64_t>(i);
    if (g.entry < 0 || g.level[size_t(v)] > g.top) g.entry = v, g.top = g.level[size_t(v)];
  }
}

}  // namespace

void hnsw_insert(const Context& ctx, HnswGraph& g, MatrixView<const float> X, const std::vector<int64_t>& ids,
                 int64_t ef_construction, uint64_t seed) {
  const int64_t first = g.nodes(), end = first + X.rows;
  append_nodes(g, X, ids, seed);
  const Meter meter(g);
  const int threads = cpu_threads(ctx);
  std::vector<std::unique_ptr<VisitedList>> visited(static_cast<size_t>(threads));
  for (auto& v : visited) v = g.visited.take();
  std::vector<WalkScratch> scratch(static_cast<size_t>(threads));
  int64_t b0 = first;
  try {
    while (b0 < end) {
      const int64_t b1 = std::min(end, b0 + batch_size(b0));
      std::vector<std::vector<std::vector<uint32_t>>> plans(static_cast<size_t>(b1 - b0));
      const double lo = double(b0 - first) / double(X.rows), hi = double(b1 - first) / double(X.rows);
      run_tasks(
          ctx, threads, b1 - b0,
          [&](int64_t i, int tid) {
            plan_links(g, meter, b0, static_cast<uint32_t>(b0 + i), ef_construction, *visited[size_t(tid)],
                       scratch[size_t(tid)], plans[size_t(i)]);
          },
          lo, hi);
      link_batch(ctx, threads, g, meter, b0, plans);
      b0 = b1;
    }
  } catch (...) {
    // Interrupted (Context::progress threw) or out of memory in phase 1: the batches linked so
    // far stay, the rest -- appended, never linked, so no list names them -- are dropped.
    truncate_nodes(g, b0);
    throw;
  }
  for (auto& v : visited) g.visited.give_back(std::move(v));
}

void hnsw_derive_code_terms(HnswGraph& g) {
  if (g.sq8 && g.space == HnswSpace::sqdist) hnsw::sq8_code_norms(g);
}

}  // namespace simkit::detail::cpu
