// Barnes-Hut on the CPU: an octree over the sources built from their Morton order, monopole
// moments (mass and centre of mass, in float64) and optionally traceless quadrupoles summed
// bottom-up, and per target a depth-first
// walk that takes a node whole when it looks small from there (its side s over the distance d
// to its centre of mass below theta) and opens it otherwise; leaves are summed pair by pair.
//
// Work assignment (the lecture's cost zones): the targets are visited in the sources' Morton
// order -- so consecutive targets walk almost the same nodes -- and split into one contiguous
// range per thread by equal work, the work of a target being its interaction count from the
// previous call (NbodyOptions::costs), prefix-summed in that order; without counts the split is
// by equal numbers of targets. The report measures both splits on this call's counts.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/parallel.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit::detail::cpu {

namespace {

/// 21 bits per axis interleaved: x in bit 3k + 2, y in 3k + 1, z in 3k.
uint64_t spread(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

struct Node {
  double cx = 0, cy = 0, cz = 0, mass = 0;  // centre of mass and mass
  double q[6] = {0, 0, 0, 0, 0, 0};         // traceless quadrupole about it: xx, yy, zz, xy, xz, yz
  double side = 0;                          // the cell's side
  int64_t first = 0, last = 0;              // its bodies, in Morton order
  int64_t child = -1;                       // first of its children (consecutive), -1 for a leaf
  int children = 0;
};

constexpr int64_t kLeafSize = 8;

struct Tree {
  std::vector<Node> nodes;
  std::vector<float> x, y, z, m;  // sources in Morton order
  std::vector<int64_t> order;     // Morton position -> source index
};

/// Nodes for [first, last) of the sorted codes at `level` (0 = the whole box), children first
/// appended as a block so that they are consecutive.
void build(Tree& t, const std::vector<uint64_t>& codes, int64_t self, int level, double side) {
  Node& node = t.nodes[size_t(self)];
  node.side = side;
  double mx = 0, my = 0, mz = 0, mass = 0;
  if (node.last - node.first <= kLeafSize || level == 21) {
    for (int64_t p = node.first; p < node.last; ++p) {
      const double w = t.m[size_t(p)];
      mass += w, mx += w * t.x[size_t(p)], my += w * t.y[size_t(p)], mz += w * t.z[size_t(p)];
    }
  } else {
    const int shift = 3 * (20 - level);
    int64_t begin = node.first;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    while (begin < node.last) {
      const uint64_t octant = (codes[size_t(begin)] >> shift) & 7u;
      int64_t end = begin;
      while (end < node.last && ((codes[size_t(end)] >> shift) & 7u) == octant) ++end;
      ranges.emplace_back(begin, end);
      begin = end;
    }
    const int64_t child = int64_t(t.nodes.size());
    t.nodes.resize(t.nodes.size() + ranges.size());
    t.nodes[size_t(self)].child = child, t.nodes[size_t(self)].children = int(ranges.size());
    for (size_t c = 0; c < ranges.size(); ++c) {
      t.nodes[size_t(child) + c].first = ranges[c].first, t.nodes[size_t(child) + c].last = ranges[c].second;
      build(t, codes, child + int64_t(c), level + 1, side / 2);
      const Node& k = t.nodes[size_t(child) + c];
      mass += k.mass, mx += k.mass * k.cx, my += k.mass * k.cy, mz += k.mass * k.cz;
    }
  }
  Node& done = t.nodes[size_t(self)];  // `node` may dangle: the vector grew
  done.mass = mass;
  if (mass > 0) {
    done.cx = mx / mass, done.cy = my / mass, done.cz = mz / mass;
  } else {  // massless cell: its centre is its first body (it contributes nothing anyway)
    done.cx = t.x[size_t(done.first)], done.cy = t.y[size_t(done.first)], done.cz = t.z[size_t(done.first)];
  }
  // The quadrupole about the centre of mass: the bodies' own for a leaf, else each child's
  // moved to this centre (parallel-axis: plus the child's mass at its offset).
  auto add_point = [&](double m, double x, double y, double z) {
    const double dx = x - done.cx, dy = y - done.cy, dz = z - done.cz, r2 = dx * dx + dy * dy + dz * dz;
    done.q[0] += m * (3 * dx * dx - r2), done.q[1] += m * (3 * dy * dy - r2), done.q[2] += m * (3 * dz * dz - r2);
    done.q[3] += m * 3 * dx * dy, done.q[4] += m * 3 * dx * dz, done.q[5] += m * 3 * dy * dz;
  };
  if (done.child < 0) {
    for (int64_t p = done.first; p < done.last; ++p)
      add_point(t.m[size_t(p)], t.x[size_t(p)], t.y[size_t(p)], t.z[size_t(p)]);
  } else {
    for (int c = 0; c < done.children; ++c) {
      const Node& k = t.nodes[size_t(done.child + c)];
      for (int e = 0; e < 6; ++e) done.q[e] += k.q[e];
      add_point(k.mass, k.cx, k.cy, k.cz);
    }
  }
}

Tree make_tree(const NbodyArgs& a) {
  const int64_t n = a.n;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t j = 0; j < n; ++j)
    for (int c = 0; c < 3; ++c)
      lo[c] = std::min(lo[c], double(a.sources[j * 4 + c])), hi[c] = std::max(hi[c], double(a.sources[j * 4 + c]));
  const double side = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-30}) * (1 + 1e-6);
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    uint64_t cell[3];
    for (int c = 0; c < 3; ++c)
      cell[c] = std::min<uint64_t>(uint64_t((a.sources[j * 4 + c] - lo[c]) / side * 2097152.0), 2097151);
    keys[size_t(j)] = spread(cell[0]) << 2 | spread(cell[1]) << 1 | spread(cell[2]);
  }
  Tree t;
  t.order.resize(size_t(n));
  std::iota(t.order.begin(), t.order.end(), int64_t{0});
  std::sort(t.order.begin(), t.order.end(), [&](int64_t p, int64_t q) {
    return keys[size_t(p)] < keys[size_t(q)] || (keys[size_t(p)] == keys[size_t(q)] && p < q);
  });
  std::vector<uint64_t> codes(static_cast<size_t>(n));
  for (auto* v : {&t.x, &t.y, &t.z, &t.m}) v->resize(size_t(n));
  for (int64_t p = 0; p < n; ++p) {
    const int64_t j = t.order[size_t(p)];
    codes[size_t(p)] = keys[size_t(j)];
    t.x[size_t(p)] = a.sources[j * 4], t.y[size_t(p)] = a.sources[j * 4 + 1], t.z[size_t(p)] = a.sources[j * 4 + 2];
    t.m[size_t(p)] = a.sources[j * 4 + 3];
  }
  t.nodes.reserve(size_t(2 * n / kLeafSize + 16));
  t.nodes.emplace_back();
  t.nodes[0].first = 0, t.nodes[0].last = n;
  build(t, codes, 0, 0, side);
  return t;
}

/// One target's walk: accel and potential in float64, and the interactions it made.
int64_t walk(const Tree& t, double x, double y, double z, double theta2, double eps2, bool quadrupole, double out[4],
             std::vector<int64_t>& stack) {
  int64_t interactions = 0;
  double ax = 0, ay = 0, az = 0, phi = 0;
  auto add = [&](double dx, double dy, double dz, double mass) {
    const double d2 = dx * dx + dy * dy + dz * dz;
    if (d2 == 0) return;  // a pair at distance zero contributes nothing (nbody.hpp)
    const double inv = 1 / std::sqrt(d2 + eps2), w = mass * inv, w3 = w * inv * inv;
    ax += w3 * dx, ay += w3 * dy, az += w3 * dz, phi -= w;
  };
  stack.clear();
  stack.push_back(0);
  while (!stack.empty()) {
    const Node& node = t.nodes[size_t(stack.back())];
    stack.pop_back();
    const double dx = node.cx - x, dy = node.cy - y, dz = node.cz - z;
    const double d2 = dx * dx + dy * dy + dz * dz;
    if (node.side * node.side < theta2 * d2) {  // s / d < theta: the node as one mass
      add(dx, dy, dz, node.mass);
      if (quadrupole) {
        // phi = -(1/2) r.Q.r / r^5 with r from the centre of mass to the target, so
        // a = Q r / r^5 - (5/2) (r.Q.r) r / r^7 (softened distances, as the monopole's).
        const double rx = -dx, ry = -dy, rz = -dz, r2 = d2 + eps2, inv2 = 1 / r2, inv5 = inv2 * inv2 / std::sqrt(r2);
        const double* q = node.q;
        const double qx = q[0] * rx + q[3] * ry + q[4] * rz, qy = q[3] * rx + q[1] * ry + q[5] * rz,
                     qz = q[4] * rx + q[5] * ry + q[2] * rz;
        const double rqr = rx * qx + ry * qy + rz * qz;
        ax += inv5 * (qx - 2.5 * rqr * inv2 * rx), ay += inv5 * (qy - 2.5 * rqr * inv2 * ry),
            az += inv5 * (qz - 2.5 * rqr * inv2 * rz);
        phi -= 0.5 * rqr * inv5;
      }
      ++interactions;
    } else if (node.child < 0) {
      for (int64_t p = node.first; p < node.last; ++p)
        add(double(t.x[size_t(p)]) - x, double(t.y[size_t(p)]) - y, double(t.z[size_t(p)]) - z, t.m[size_t(p)]);
      interactions += node.last - node.first;
    } else {
      for (int c = node.children - 1; c >= 0; --c) stack.push_back(node.child + c);
    }
  }
  out[0] = ax, out[1] = ay, out[2] = az, out[3] = phi;
  return interactions;
}

/// Ranges of `order` (the targets in walk order) for `parts` threads with equal cumulative cost.
std::vector<int64_t> cost_zones(const std::vector<int64_t>& cost_in_order, int parts) {
  std::vector<int64_t> prefix(cost_in_order.size() + 1, 0);
  std::partial_sum(cost_in_order.begin(), cost_in_order.end(), prefix.begin() + 1);
  std::vector<int64_t> bounds(size_t(parts) + 1, 0);
  for (int p = 1; p <= parts; ++p) {
    const int64_t want = prefix.back() * p / parts;
    bounds[size_t(p)] = std::lower_bound(prefix.begin(), prefix.end(), want) - prefix.begin();
  }
  bounds.back() = int64_t(cost_in_order.size());
  return bounds;
}

/// max / mean of the per-part sums of `cost_in_order` over `bounds`.
double imbalance(const std::vector<int64_t>& cost_in_order, const std::vector<int64_t>& bounds) {
  const int parts = int(bounds.size()) - 1;
  double total = 0, worst = 0;
  for (int p = 0; p < parts; ++p) {
    double w = 0;
    for (int64_t i = bounds[size_t(p)]; i < bounds[size_t(p) + 1]; ++i) w += double(cost_in_order[size_t(i)]);
    total += w, worst = std::max(worst, w);
  }
  return total > 0 ? worst / (total / parts) : 1.0;
}

}  // namespace

NbodyReport nbody_barnes_hut(const Context& ctx, const NbodyArgs& a, double theta, bool quadrupole,
                             ArrayView<int64_t> costs) {
  const Tree t = make_tree(a);
  const int64_t m = a.m;
  // The targets in walk order: the bodies in Morton order when they are the sources, else as given.
  std::vector<int64_t> walk_order(static_cast<size_t>(m));
  if (a.target_stride == 4 && m == a.n)
    walk_order = t.order;
  else
    std::iota(walk_order.begin(), walk_order.end(), int64_t{0});
  const int threads = std::max(1, cpu_threads(ctx));
  std::vector<int64_t> previous(static_cast<size_t>(m), 1);
  const bool have_costs =
      !costs.empty() && std::any_of(costs.data, costs.data + costs.size, [](int64_t c) { return c > 0; });
  if (have_costs)
    for (int64_t i = 0; i < m; ++i) previous[size_t(i)] = std::max<int64_t>(1, costs[walk_order[size_t(i)]]);
  const std::vector<int64_t> zones = cost_zones(previous, threads);
  std::vector<int64_t> counts(static_cast<size_t>(m), 0);
  const double theta2 = theta * theta, eps2 = a.softening * a.softening;
#pragma omp parallel num_threads(threads)
  {
    std::vector<int64_t> stack;
    stack.reserve(256);
#pragma omp for schedule(static, 1)
    for (int part = 0; part < threads; ++part)
      for (int64_t w = zones[size_t(part)]; w < zones[size_t(part) + 1]; ++w) {
        const int64_t i = walk_order[size_t(w)];
        const float* p = a.targets + i * a.target_stride;
        double out[4];
        counts[size_t(w)] = walk(t, p[0], p[1], p[2], theta2, eps2, quadrupole, out, stack);
        for (int c = 0; c < 3; ++c) a.accel.data[i * 3 + c] = float(a.G * out[c]);
        if (!a.potential.empty()) a.potential.data[i] = float(a.G * out[3]);
      }
  }
  NbodyReport report;
  for (int64_t c : counts) report.interactions += c;
  report.threads = threads;
  report.imbalance = imbalance(counts, zones);
  std::vector<int64_t> equal(size_t(threads) + 1);
  for (int p = 0; p <= threads; ++p) equal[size_t(p)] = m * p / threads;
  report.imbalance_equal_count = imbalance(counts, equal);
  if (!costs.empty())
    for (int64_t w = 0; w < m; ++w) costs[walk_order[size_t(w)]] = counts[size_t(w)];
  return report;
}

}  // namespace simkit::detail::cpu
