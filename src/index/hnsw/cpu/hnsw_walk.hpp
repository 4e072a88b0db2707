#pragma once
// The two walks both the build and the search run: the greedy descent through the upper layers
// and the ef-bounded best-first search of one layer. Every comparison is on (distance, node), so
// a walk over the same graph visits the same nodes in the same order on any thread: the build's
// determinism rests on it.

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/hnsw_graph.hpp"

namespace simkit::detail::cpu::hnsw {

struct Near {
  float dist;
  uint32_t node;
  friend bool operator<(const Near& a, const Near& b) noexcept {
    return a.dist != b.dist ? a.dist < b.dist : a.node < b.node;
  }
  friend bool operator>(const Near& a, const Near& b) noexcept { return b < a; }
};

/// What one thread's walks reuse.
struct WalkScratch {
  std::vector<Near> frontier;   // min-heap of nodes to expand
  std::vector<Near> best;       // max-heap of the ef nearest admitted nodes
  std::vector<uint32_t> fresh;  // an expanded node's unvisited links
  int64_t distances = 0;        // computed, over the walks
};

/// Both walks take any meter (Meter over the float32 rows, CodeMeter over sq8 codes) with its
/// own probe type.
///
/// From `from` (distance `dist`), the greedy walk down to layer `stop` + 1 .. `top`: at each
/// layer, move to the nearest link while one is nearer. Returns the node reached.
template <class M, class P>
Near descend(const HnswGraph& g, const M& meter, const P& p, Near from, int top, int stop, WalkScratch& s) {
  for (int layer = top; layer > stop; --layer) {
    for (bool moved = true; moved;) {
      moved = false;
      const uint32_t* list = g.links(from.node, layer);
      for (uint32_t i = 1; i <= list[0]; ++i) {
        const Near c{meter(p, list[i]), list[i]};
        ++s.distances;
        if (c < from) from = c, moved = true;
      }
    }
  }
  return from;
}

/// The best-first search of one layer from `starts` (their distances known): keeps the ef
/// nearest nodes that `admit` accepts in s.best (a max-heap), walking through the others too --
/// removed and disallowed nodes still carry the walk. Stops when the nearest unexpanded node is
/// farther than the ef-th kept one. `visited` must be begun, with the starts marked.
template <class M, class P, class Admit>
void search_layer(const HnswGraph& g, const M& meter, const P& p, const std::vector<Near>& starts, int64_t ef,
                  int layer, Admit admit, VisitedList& visited, WalkScratch& s) {
  auto& frontier = s.frontier;
  auto& best = s.best;
  frontier.clear();
  best.clear();
  for (const Near& n : starts) {
    frontier.push_back(n);
    std::push_heap(frontier.begin(), frontier.end(), std::greater<>{});
    if (admit(n.node)) best.push_back(n), std::push_heap(best.begin(), best.end());
  }
  while (static_cast<int64_t>(best.size()) > ef) std::pop_heap(best.begin(), best.end()), best.pop_back();
  while (!frontier.empty()) {
    const Near c = frontier.front();
    if (static_cast<int64_t>(best.size()) >= ef && best.front() < c) break;
    std::pop_heap(frontier.begin(), frontier.end(), std::greater<>{});
    frontier.pop_back();
    // The next node to expand is most likely the frontier's new head: its links start loading
    // while this node's neighbours are measured.
    if (!frontier.empty()) __builtin_prefetch(g.links(frontier.front().node, layer));
    // The unvisited links first, their rows prefetched, then their distances: the loads of the
    // later rows overlap the arithmetic on the earlier ones.
    const uint32_t* list = g.links(c.node, layer);
    s.fresh.clear();
    for (uint32_t i = 1; i <= list[0]; ++i)
      if (visited.first_visit(list[i])) {
        meter.prefetch(list[i]);
        s.fresh.push_back(list[i]);
      }
    s.distances += static_cast<int64_t>(s.fresh.size());
    for (uint32_t v : s.fresh) {
      const Near n{meter(p, v), v};
      const bool full = static_cast<int64_t>(best.size()) >= ef;
      if (full && !(n < best.front())) continue;
      frontier.push_back(n);
      std::push_heap(frontier.begin(), frontier.end(), std::greater<>{});
      if (!admit(v)) continue;
      best.push_back(n);
      std::push_heap(best.begin(), best.end());
      if (full) std::pop_heap(best.begin(), best.end()), best.pop_back();
    }
  }
}

}  // namespace simkit::detail::cpu::hnsw
