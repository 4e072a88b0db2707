// Packet walks of the point tree on the CPU (tree_search.hpp), after the ray packets of the
// parallel case-studies lecture: a packet of up to 64 Morton-neighbouring queries walks the tree
// together, depth first, nearer child first (seen from the packet's centre). At each node every
// still-active query measures its distance to the node's box and drops out (for this subtree)
// when the box is farther than its bound -- its current k-th key, or the radius -- so a node is
// fetched once per packet, not once per query, and each query prunes as sharply as it would
// alone. A leaf's rows are then scored for the active queries only.
//
// Exactness. Keys are core/exact_metric.hpp's exact_sqdist, the function brute-force knn
// re-scores with, so keys agree bit for bit; ranking is by (key, id). The box tests and a
// first pass over a leaf's rows run in float32, eight lanes at a time (leaf_soa, the queries'
// coordinates in the same layout); they only ever reject, and only what is certainly worse than
// the bound (float_bound below), so the rows that could tie or beat it all get their exact key.

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "spatial/tree_search.hpp"

namespace simkit::detail::spatial::cpu {

namespace {

using simd::f8;
using Pair = std::pair<double, int64_t>;  // key, base row

constexpr int64_t kMaxPacket = 64;  // a packet's queries are the bits of a uint64_t

bool candidate(const uint64_t* mask, int64_t row) { return !mask || ((mask[row >> 6] >> (row & 63)) & 1u); }

/// The float32 threshold of a float64 bound: a box or row whose float32 estimate s exceeds it is
/// certainly farther than the bound. s sums d <= 8 terms fl(fl(a - b)^2) (a gap of a box: each
/// rounded difference is at most (1 + u) times the exact one), rounded d more times (fused or
/// not), so s <= D (1 + u)^11 + 11 * 2^-150 for the exact squared distance D (u = 2^-24, the
/// second term what underflow can add); a box's D is at most each of its rows', and
/// exact_sqdist's key is >= D (1 - 2^-49) (d + 1 roundings in float64). So s > bound (1 + 2^-18)
/// + 2^-120, even after this threshold's own rounding to float (relative 2^-24), gives D > bound
/// (1 + 2^-19) and key > bound: a row that ties or beats the bound always gets its exact key. A
/// bound past FLT_MAX gives +inf, and an overflowed s (+inf) is then kept (inf <= inf).
float float_bound(double bound) {
  return bound < std::numeric_limits<double>::infinity() ? float(bound * (1 + 0x1p-18) + 0x1p-120) : INFINITY;
}

/// The lanes where a <= b, as bits (NaN lanes, the padding rows, fail).
uint32_t lanes_le(f8 a, f8 b) {
#if defined(__AVX__)
  return uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LE_OQ)));
#else
  const auto m = a <= b;
  uint32_t bits = 0;
  for (int l = 0; l < 8; ++l) bits |= uint32_t(m[l] & 1) << l;
  return bits;
#endif
}

/// Float32 squared distances of q to eight rows stored by axis (axis c at x + c * stride).
template <int D>
f8 rows_sqdist(const float* x, int64_t stride, const float* q) {
  f8 s = {};
  for (int c = 0; c < D; ++c) {
    const f8 e = simd::load8(x + c * stride) - q[c];
    s += e * e;
  }
  return s;
}

/// Float32 squared distances of eight queries (axis c at q[c]) to the box [lo, hi].
template <int D>
f8 box_sqdist(const float (*q)[kMaxPacket], int64_t lane, const float* lo, const float* hi) {
  const f8 zero = {};
  f8 s = zero;
  for (int c = 0; c < D; ++c) {
    const f8 x = simd::load8(q[c] + lane), below = lo[c] - x, above = x - hi[c];
    const f8 gap = below > above ? below : above;
    s += gap > zero ? gap * gap : zero;
  }
  return s;
}

template <int D>
inline float box_sqdist(const float* q, const float* lo, const float* hi) {
  float s = 0;
  for (int c = 0; c < D; ++c) {
    const float g = std::max(std::max(lo[c] - q[c], q[c] - hi[c]), 0.f);
    s += g * g;
  }
  return s;
}

/// One packet: its queries (rows of Q), their bounds, and the walk.
template <int D>
struct Packet {
  const PointTree& t;
  int64_t count;
  const float* q[kMaxPacket];
  alignas(32) float axes[D][kMaxPacket] = {};  // the queries by axis; lanes past count 0
  alignas(32) float thr[kMaxPacket];           // float_bound(bound); -1 past count (never <=)
  double bound[kMaxPacket];
  float centre[D];
  int64_t visits = 0, pairs = 0;

  Packet(const PointTree& tree, MatrixView<const float> Q, const int64_t* rows, int64_t n) : t(tree), count(n) {
    std::fill_n(thr, kMaxPacket, -1.f);
    for (int64_t i = 0; i < count; ++i) {
      q[i] = Q.data + rows[i] * D;
      for (int c = 0; c < D; ++c) axes[c][i] = q[i][c];
      set_bound(int(i), std::numeric_limits<double>::infinity());
    }
    for (int c = 0; c < D; ++c) {
      double s = 0;
      for (int64_t i = 0; i < count; ++i) s += axes[c][i];
      centre[c] = float(s / double(count));
    }
  }

  void set_bound(int i, double b) { bound[i] = b, thr[i] = float_bound(b); }

  /// The active queries of `mask` whose bound reaches node v's box.
  uint64_t reaching(int64_t v, uint64_t mask) const {
    uint64_t active = 0;
    for (int64_t lane = 0; lane < count; lane += 8)
      if ((mask >> lane) & 0xff)
        active |= uint64_t(lanes_le(box_sqdist<D>(axes, lane, t.node_lo(v), t.node_hi(v)), simd::load8(thr + lane)))
                  << lane;
    return active & mask;
  }

  /// Depth first from the root; `leaf(j, i)` scores leaf j for query i, which then updates
  /// its bound itself.
  template <class Leaf>
  void walk(Leaf&& leaf) {
    // Each level down pops one node and pushes two: the stack never holds more than the depth
    // (below 63: heap indices are int64_t) plus one.
    std::pair<int64_t, uint64_t> stack[64];
    int top = 0;
    stack[top++] = {1, count == 64 ? ~0ull : (1ull << count) - 1};
    while (top > 0) {
      const auto [v, mask] = stack[--top];
      const uint64_t active = reaching(v, mask);
      if (!active) continue;
      ++visits;
      if (v >= t.first_leaf) {
        const int64_t j = v - t.first_leaf;
        if (j >= t.leaves) continue;  // a padding leaf, reached by a bound still infinite
        for (uint64_t m = active; m; m &= m - 1) leaf(j, __builtin_ctzll(m));
        pairs += (t.leaf_last(j) - t.leaf_first(j)) * __builtin_popcountll(active);
        continue;
      }
      const float left = box_sqdist<D>(centre, t.node_lo(2 * v), t.node_hi(2 * v));
      const float right = box_sqdist<D>(centre, t.node_lo(2 * v + 1), t.node_hi(2 * v + 1));
      const bool left_first = left <= right;
      stack[top++] = {left_first ? 2 * v + 1 : 2 * v, active};
      stack[top++] = {left_first ? 2 * v : 2 * v + 1, active};
    }
  }

  /// Calls `row(r)` for the rows r of leaf j (Morton positions) that the float32 prefilter
  /// leaves to query i; thr[i] is read once per eight rows, so `row` may tighten it.
  template <class Row>
  void survivors(int64_t j, int i, Row&& row) const {
    const float* x = t.leaf_axes(j);
    const int64_t first = t.leaf_first(j), rows = t.leaf_last(j) - first;
    float qi[D];
    for (int c = 0; c < D; ++c) qi[c] = axes[c][i];
    for (int64_t g = 0; g < rows; g += 8)
      for (uint32_t keep = lanes_le(rows_sqdist<D>(x + g, t.soa_stride, qi), f8{} + thr[i]); keep; keep &= keep - 1)
        row(first + g + __builtin_ctz(keep));
  }
};

/// Runs `body(packet, rows, codes, count)` over the queries in Morton order (rows of Q and their
/// codes), packets split over threads.
template <int D, class Body>
TreeSearchStats for_each_packet(const Context& ctx, const PointTree& t, MatrixView<const float> Q, int64_t packet,
                                Body&& body) {
  const MortonOrder sorted = morton_order(ctx, t, Q);
  packet = std::clamp<int64_t>(packet, 1, kMaxPacket);
  const int64_t m = Q.rows, packets = (m + packet - 1) / packet;
  int64_t visits = 0, pairs = 0;
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) reduction(+ : visits, pairs)
  for (int64_t b = 0; b < packets; ++b) {
    const int64_t first = b * packet, count = std::min(packet, m - first);
    Packet<D> p(t, Q, sorted.order.data() + first, count);
    body(p, sorted.order.data() + first, sorted.codes.data() + first, count);
    visits += p.visits, pairs += p.pairs;
  }
  return {packets, visits, pairs};
}

/// The leaves around a query's place in the base's Morton order, [first, last], holding at least
/// k rows: scanned before the walk, they give its bound a first value near the final one, so the
/// walk opens little beyond them (without it a query's bound stays loose until the packet's walk
/// happens to reach the query's own neighbourhood).
/// `from` is a place at or before the query's (the previous query's in the packet: codes ascend),
/// galloped from, since Morton neighbours sit a few rows apart and a search of all of `codes`
/// misses the cache at each of its first levels.
std::pair<int64_t, int64_t> seed_leaves(const PointTree& t, int64_t code, int64_t k, int64_t& from) {
  int64_t lo = from, hi = from;
  for (int64_t step = 1; hi < t.n && t.codes[size_t(hi)] < code; step *= 2) lo = hi + 1, hi = std::min(hi + step, t.n);
  const int64_t at = std::lower_bound(t.codes.begin() + lo, t.codes.begin() + hi, code) - t.codes.begin();
  from = at;
  int64_t first = std::min(at / t.leaf_size, t.leaves - 1), last = first;
  while (t.leaf_last(last) - t.leaf_first(first) < std::min(k, t.n)) {
    if (first > 0) --first;
    if (last < t.leaves - 1) ++last;
  }
  return {first, last};
}

/// Keeps (key, id) in the sorted list best[0, size) of at most k: `size` grows until k, then
/// the last falls out. Returns whether the list is full.
inline bool insert(Pair* best, int64_t& size, int64_t k, const Pair& cand) {
  if (size == k) {
    if (!(cand < best[k - 1])) return true;
  } else {
    ++size;
  }
  // From the end: a newcomer is usually near the bound, so few entries move.
  int64_t at = size - 1;
  for (; at > 0 && cand < best[at - 1]; --at) best[at] = best[at - 1];
  best[at] = cand;
  return size == k;
}

/// One packet's k nearest: its seeds, its walk, its rows of values / ids.
template <int D>
void knn_packet(Packet<D>& p, const int64_t* rows, const int64_t* codes, int64_t k, const MetricPlan& plan,
                float* values, int64_t* ids, const uint64_t* mask) {
  const PointTree& t = p.t;
  const int64_t count = p.count;
  std::vector<Pair> best(static_cast<size_t>(count * k));
  std::vector<int64_t> size(static_cast<size_t>(count), 0);
  std::vector<std::pair<int64_t, int64_t>> seeded(static_cast<size_t>(count));
  auto scan = [&](int64_t j, int i) {
    Pair* b = best.data() + i * k;
    p.survivors(j, i, [&](int64_t r) {
      const double key = exact_sqdist(p.q[i], t.rows.data() + r * D, D);
      if (key > p.bound[i] || !candidate(mask, t.ids[size_t(r)])) return;
      if (insert(b, size[size_t(i)], k, {key, t.ids[size_t(r)]})) p.set_bound(i, b[k - 1].first);
    });
  };
  int64_t from = std::lower_bound(t.codes.begin(), t.codes.end(), codes[0]) - t.codes.begin();
  for (int64_t i = 0; i < count; ++i) {
    seeded[size_t(i)] = seed_leaves(t, codes[i], k, from);
    for (int64_t j = seeded[size_t(i)].first; j <= seeded[size_t(i)].second; ++j) scan(j, int(i));
  }
  p.walk([&](int64_t j, int i) {
    if (j < seeded[size_t(i)].first || j > seeded[size_t(i)].second) scan(j, i);  // seeds are in already
  });
  for (int64_t i = 0; i < count; ++i) {
    const Pair* b = best.data() + i * k;
    const int64_t row = rows[i];
    for (int64_t c = 0; c < k; ++c) {
      const bool found = c < size[size_t(i)];
      values[row * k + c] = found ? float(plan.value_of_key(b[c].first)) : INFINITY;
      ids[row * k + c] = found ? b[c].second : -1;
    }
  }
}

/// Each query's (key, id) pairs within the radius, sorted and cut at `cap`; capped[i] = 1 where cut.
template <int D>
TreeSearchStats radius_packets(const Context& ctx, const PointTree& t, MatrixView<const float> Q, double radius,
                               const MetricPlan& plan, int64_t cap, int64_t packet, const uint64_t* mask,
                               std::vector<std::vector<Pair>>& found, std::vector<int64_t>& capped) {
  // The key bound: value_of_key is monotone (a square root, or the key itself).
  const double key_bound = plan.root ? radius * radius : radius;
  return for_each_packet<D>(ctx, t, Q, packet, [&](Packet<D>& p, const int64_t* rows, const int64_t*, int64_t count) {
    for (int64_t i = 0; i < count; ++i) p.set_bound(int(i), key_bound * (1 + 1e-12));  // value_of_key rounds
    p.walk([&](int64_t j, int i) {
      std::vector<Pair>& f = found[size_t(rows[i])];
      p.survivors(j, i, [&](int64_t r) {
        if (!candidate(mask, t.ids[size_t(r)])) return;
        const double key = exact_sqdist(p.q[i], t.rows.data() + r * D, D);
        if (plan.value_of_key(key) <= radius) f.emplace_back(key, t.ids[size_t(r)]);
      });
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
}

/// Calls run.template operator()<D>() with D = d, 1 <= d <= kMaxDim.
template <class Run>
decltype(auto) with_dim(int64_t d, Run&& run) {
  switch (d) {
    case 1: return run.template operator()<1>();
    case 2: return run.template operator()<2>();
    case 3: return run.template operator()<3>();
    case 4: return run.template operator()<4>();
    case 5: return run.template operator()<5>();
    case 6: return run.template operator()<6>();
    case 7: return run.template operator()<7>();
    default: return run.template operator()<8>();
  }
}

}  // namespace

TreeSearchStats tree_knn(const Context& ctx, const PointTree& t, MatrixView<const float> Q, int64_t k,
                         const MetricPlan& plan, float* values, int64_t* ids, int64_t packet, const uint64_t* mask) {
  return with_dim(t.d, [&]<int D>() {
    return for_each_packet<D>(ctx, t, Q, packet, [&](Packet<D>& p, const int64_t* rows, const int64_t* codes, int64_t) {
      knn_packet<D>(p, rows, codes, k, plan, values, ids, mask);
    });
  });
}

RadiusResult tree_radius(const Context& ctx, const PointTree& t, MatrixView<const float> Q, double radius,
                         const MetricPlan& plan, int64_t cap, int64_t packet, const uint64_t* mask,
                         TreeSearchStats* stats) {
  const int64_t m = Q.rows;
  std::vector<std::vector<Pair>> found(static_cast<size_t>(m));
  std::vector<int64_t> capped(static_cast<size_t>(m), 0);
  TreeSearchStats walked;
  with_dim(t.d,
           [&]<int D>() { walked = radius_packets<D>(ctx, t, Q, radius, plan, cap, packet, mask, found, capped); });
  if (stats) *stats = walked;
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
