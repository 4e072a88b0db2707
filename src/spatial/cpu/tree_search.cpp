// Packet walks of the point tree on the CPU (tree_search.hpp), after the ray packets of the
// parallel case-studies lecture: a packet of up to 64 Morton-neighbouring queries walks the tree
// together, depth first, nearer child first (seen from the packet's centre). At each node every
// still-active query measures its distance to the node's box and drops out (for this subtree)
// when the box is farther than its bound -- its current k-th key, or the radius -- so a node is
// fetched once per packet, not once per query, and each query prunes as sharply as it would
// alone. A leaf's rows are then scored in float64 for the active queries only.
//
// Exactness. Keys are core/exact_metric.hpp's exact_sqdist, the function brute-force knn
// re-scores with, so keys agree bit for bit; ranking is by (key, id). A box's distance is a lower
// bound of its rows' keys up to the rounding of a differently ordered sum (a few units of 2^-53),
// so a box is dropped only beyond bound * (1 + 1e-12): a row that ties or beats the bound is
// never pruned.

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "spatial/tree_search.hpp"

namespace simkit::detail::spatial::cpu {

namespace {

constexpr double kSlack = 1 + 1e-12;

using Pair = std::pair<double, int64_t>;  // key, base row

bool candidate(const uint64_t* mask, int64_t row) { return !mask || ((mask[row >> 6] >> (row & 63)) & 1u); }

double box_distance2(const float* q, const float* lo, const float* hi, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) {
    const double below = double(lo[c]) - double(q[c]), above = double(q[c]) - double(hi[c]);
    const double g = below > 0 ? below : (above > 0 ? above : 0.0);
    s += g * g;
  }
  return s;
}

/// One packet: its queries (rows of Q), their bounds, and the walk.
struct Packet {
  const PointTree& t;
  std::vector<const float*> q;
  std::vector<double> bound;
  float centre[kMaxDim] = {};
  int64_t visits = 0, pairs = 0;

  Packet(const PointTree& tree, MatrixView<const float> Q, const int64_t* rows, int64_t count)
      : t(tree), q(size_t(count)), bound(size_t(count), std::numeric_limits<double>::infinity()) {
    for (int64_t i = 0; i < count; ++i) q[size_t(i)] = Q.data + rows[i] * Q.cols;
    for (int64_t c = 0; c < t.d; ++c) {
      double s = 0;
      for (int64_t i = 0; i < count; ++i) s += q[size_t(i)][c];
      centre[c] = float(s / double(count));
    }
  }

  /// Depth first from the root; `leaf(j, i)` scores leaf j for query i, which then updates
  /// bound[i] itself.
  template <class Leaf>
  void walk(Leaf&& leaf) {
    const int64_t count = int64_t(q.size()), d = t.d;
    std::vector<std::pair<int64_t, uint64_t>> stack{{1, count == 64 ? ~0ull : (1ull << count) - 1}};
    while (!stack.empty()) {
      const auto [v, mask] = stack.back();
      stack.pop_back();
      uint64_t active = 0;
      for (uint64_t m = mask; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (box_distance2(q[size_t(i)], t.node_lo(v), t.node_hi(v), d) <= bound[size_t(i)] * kSlack)
          active |= 1ull << i;
      }
      if (!active) continue;
      ++visits;
      if (v >= t.first_leaf) {
        const int64_t j = v - t.first_leaf;
        for (uint64_t m = active; m; m &= m - 1) leaf(j, __builtin_ctzll(m));
        pairs += (t.leaf_last(j) - t.leaf_first(j)) * __builtin_popcountll(active);
        continue;
      }
      const double left = box_distance2(centre, t.node_lo(2 * v), t.node_hi(2 * v), d);
      const double right = box_distance2(centre, t.node_lo(2 * v + 1), t.node_hi(2 * v + 1), d);
      const bool left_first = left <= right;
      stack.emplace_back(left_first ? 2 * v + 1 : 2 * v, active);
      stack.emplace_back(left_first ? 2 * v : 2 * v + 1, active);
    }
  }
};

/// Runs `body(packet, rows, codes, count)` over the queries in Morton order (rows of Q and their
/// codes), packets split over threads.
template <class Body>
TreeSearchStats for_each_packet(const Context& ctx, const PointTree& t, MatrixView<const float> Q, int64_t packet,
                                Body&& body) {
  const MortonOrder sorted = morton_order(ctx, t, Q);
  const int64_t m = Q.rows, packets = (m + packet - 1) / packet;
  int64_t visits = 0, pairs = 0;
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(+ : visits, pairs)
  for (int64_t b = 0; b < packets; ++b) {
    const int64_t first = b * packet, count = std::min(packet, m - first);
    Packet p(t, Q, sorted.order.data() + first, count);
    body(p, sorted.order.data() + first, sorted.codes.data() + first, count);
    visits += p.visits, pairs += p.pairs;
  }
  return {packets, visits, pairs};
}

/// The leaves around a query's place in the base's Morton order, [first, last], holding at least
/// k rows: scanned before the walk, they give its bound a first value near the final one, so the
/// walk opens little beyond them (without it a query's bound stays loose until the packet's walk
/// happens to reach the query's own neighbourhood).
std::pair<int64_t, int64_t> seed_leaves(const PointTree& t, int64_t code, int64_t k) {
  const int64_t at = std::lower_bound(t.codes.begin(), t.codes.end(), code) - t.codes.begin();
  int64_t first = std::min(at / t.leaf_size, t.leaves - 1), last = first;
  while (t.leaf_last(last) - t.leaf_first(first) < std::min(k, t.n)) {
    if (first > 0) --first;
    if (last < t.leaves - 1) ++last;
  }
  return {first, last};
}

}  // namespace

TreeSearchStats tree_knn(const Context& ctx, const PointTree& t, MatrixView<const float> Q, int64_t k,
                         const MetricPlan& plan, float* values, int64_t* ids, int64_t packet, const uint64_t* mask) {
  const int64_t d = t.d;
  return for_each_packet(ctx, t, Q, packet, [&](Packet& p, const int64_t* rows, const int64_t* codes, int64_t count) {
    std::vector<std::vector<Pair>> best(static_cast<size_t>(count));
    std::vector<std::pair<int64_t, int64_t>> seeded(static_cast<size_t>(count));
    auto scan = [&](int64_t j, int i) {
      std::vector<Pair>& b = best[size_t(i)];
      for (int64_t r = t.leaf_first(j); r < t.leaf_last(j); ++r) {
        if (!candidate(mask, t.ids[size_t(r)])) continue;
        const Pair cand{exact_sqdist(p.q[size_t(i)], t.rows.data() + r * d, d), t.ids[size_t(r)]};
        if (int64_t(b.size()) < k) {
          b.push_back(cand);
          std::push_heap(b.begin(), b.end());
        } else if (cand < b.front()) {
          std::pop_heap(b.begin(), b.end());
          b.back() = cand;
          std::push_heap(b.begin(), b.end());
        }
      }
      if (int64_t(b.size()) == k) p.bound[size_t(i)] = b.front().first;
    };
    for (int64_t i = 0; i < count; ++i) {
      best[size_t(i)].reserve(size_t(k));
      seeded[size_t(i)] = seed_leaves(t, codes[i], k);
      for (int64_t j = seeded[size_t(i)].first; j <= seeded[size_t(i)].second; ++j) scan(j, int(i));
    }
    p.walk([&](int64_t j, int i) {
      if (j < seeded[size_t(i)].first || j > seeded[size_t(i)].second) scan(j, i);  // seeds are in already
    });
    for (int64_t i = 0; i < count; ++i) {
      std::vector<Pair>& b = best[size_t(i)];
      std::sort_heap(b.begin(), b.end());
      const int64_t row = rows[i];
      for (int64_t c = 0; c < k; ++c) {
        const bool found = c < int64_t(b.size());
        values[row * k + c] = found ? float(plan.value_of_key(b[size_t(c)].first)) : INFINITY;
        ids[row * k + c] = found ? b[size_t(c)].second : -1;
      }
    }
  });
}

RadiusResult tree_radius(const Context& ctx, const PointTree& t, MatrixView<const float> Q, double radius,
                         const MetricPlan& plan, int64_t cap, int64_t packet, const uint64_t* mask) {
  const int64_t d = t.d, m = Q.rows;
  // The key bound: value_of_key is monotone (a square root, or the key itself).
  const double key_bound = plan.root ? radius * radius : radius;
  std::vector<std::vector<Pair>> found(static_cast<size_t>(m));
  std::vector<int64_t> capped(static_cast<size_t>(m), 0);
  for_each_packet(ctx, t, Q, packet, [&](Packet& p, const int64_t* rows, const int64_t*, int64_t count) {
    for (int64_t i = 0; i < count; ++i) p.bound[size_t(i)] = key_bound;
    p.walk([&](int64_t j, int i) {
      std::vector<Pair>& f = found[size_t(rows[i])];
      for (int64_t r = t.leaf_first(j); r < t.leaf_last(j); ++r) {
        if (!candidate(mask, t.ids[size_t(r)])) continue;
        const double key = exact_sqdist(p.q[size_t(i)], t.rows.data() + r * d, d);
        if (plan.value_of_key(key) <= radius) f.emplace_back(key, t.ids[size_t(r)]);
      }
    });
    for (int64_t i = 0; i < count; ++i) {
      std::vector<Pair>& f = found[size_t(rows[i])];
      if (cap > 0 && int64_t(f.size()) > cap) {
        std::nth_element(f.begin(), f.begin() + cap, f.end());
        f.resize(size_t(cap));
        capped[size_t(rows[i])] = 1;
      }
      std::sort(f.begin(), f.end());
    }
  });
  RadiusResult out;
  out.offsets.assign(size_t(m) + 1, 0);
  for (int64_t i = 0; i < m; ++i) {
    out.offsets[size_t(i) + 1] = out.offsets[size_t(i)] + int64_t(found[size_t(i)].size());
    out.capped += capped[size_t(i)];
  }
  out.ids.resize(size_t(out.offsets.back()));
  out.values.resize(size_t(out.offsets.back()));
  for (int64_t i = 0; i < m; ++i) {
    int64_t at = out.offsets[size_t(i)];
    for (const Pair& f : found[size_t(i)])
      out.ids[size_t(at)] = f.second, out.values[size_t(at++)] = float(plan.value_of_key(f.first));
    std::vector<Pair>().swap(found[size_t(i)]);
  }
  return out;
}

}  // namespace simkit::detail::spatial::cpu
