#pragma once
// The neighbour-selection heuristic the build and the repair both link with (the paper's
// algorithm 4, without extending the candidates or keeping pruned ones): candidates nearest
// first; one is kept when it is nearer to the base node than to every link kept so far, so the
// links spread in direction instead of bunching in one cluster.

#include <cstdint>
#include <vector>

#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/cpu/hnsw_walk.hpp"

namespace simkit::detail::cpu::hnsw {

/// A link to add back, source -> target's list on `layer`: the build and the repair sort them so
/// that each list gains its links in one order whatever the thread count.
struct ReverseLink {
  uint32_t layer, target, source;
  bool operator<(const ReverseLink& o) const noexcept {
    return layer != o.layer ? layer < o.layer : (target != o.target ? target < o.target : source < o.source);
  }
};

/// The heuristic over `sorted` (nearest first, distances to the base node), adding to the links
/// already in `out` (each candidate measured against them too) until it holds cap.
inline void extend_links(const Meter& meter, const std::vector<Near>& sorted, int64_t cap, std::vector<uint32_t>& out) {
  for (const Near& c : sorted) {
    if (static_cast<int64_t>(out.size()) >= cap) break;
    const Probe pc = meter.node(c.node);
    bool keep = true;
    for (uint32_t r : out)
      if (meter(pc, r) < c.dist) {
        keep = false;
        break;
      }
    if (keep) out.push_back(c.node);
  }
}

/// The heuristic over `sorted` alone: at most cap links.
inline void select_links(const Meter& meter, const std::vector<Near>& sorted, int64_t cap, std::vector<uint32_t>& out) {
  out.clear();
  extend_links(meter, sorted, cap, out);
}

}  // namespace simkit::detail::cpu::hnsw
