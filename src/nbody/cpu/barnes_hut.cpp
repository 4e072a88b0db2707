// Barnes-Hut on the CPU, walked by groups of targets (Barnes 1990).
//
// The tree (octree.hpp): the sources in Morton order, nodes in preorder with float64-summed
// monopoles (mass, centre of mass), b_max (the radius about the centre of mass that holds all the
// node's bodies) and optionally traceless quadrupoles. The targets are grouped into Morton cells
// of at most 128 (the bodies themselves when they are the targets; other targets sorted by their
// code in the sources' cube, clamped to it).
//
// Opening rule. A group walks the tree once with the bounding box of its targets. A node is taken
// whole when the distance d from its centre of mass to the nearest point of that box satisfies
//     d > b_max / min(theta, 1),
// so b_max / r < theta at every target of the group (r >= d its own distance). The error of a
// multipole expansion is set by the extent of the bodies about the expansion centre over the
// distance, (b_max / r)^(p+1), not by the cell's side, so this is both safer than the classical
// s / d < theta (a centre of mass near a corner of its cell, Salmon & Warren 1994) and cheaper
// for clustered cells (b_max << s); measured at 2^20 bodies it reaches a given median error with
// fewer interactions than s / d + |centre of mass - centre| (GADGET / Bonsai). theta is capped
// at 1 so that the box never reaches into the sphere that holds the node's bodies: no target is
// one of them. Otherwise a leaf's bodies, an inner node's children are visited. theta = 0 opens
// everything: every group sums every body, the direct sum in Morton order.
//
// Evaluation. Taken nodes (mass at the centre of mass) and the bodies of opened leaves are
// gathered into one list in float32 structure-of-arrays form, which every target of the group
// then sums eight entries at a time, in tiles of kPairTile entries: float32 within a tile,
// float64 across tiles, so accumulation chains stay short. A pair at distance zero contributes
// nothing. Quadrupoles (when asked) are a second list, of the taken nodes. The sums are those of
// pair_sums.hpp (AVX2 intrinsics, plain C++ elsewhere), shared with the direct sum.
//
// Work assignment (cost zones): the groups, in Morton order, are split into one contiguous range
// per thread by equal work, the work of a group being the sum of its targets' interaction counts
// from the previous call (NbodyOptions::costs), prefix-summed in that order; without counts the
// split is by equal numbers of targets. A target's count is the length of its group's list. The
// report measures both splits on this call's counts.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/parallel.hpp"
#include "nbody/cpu/octree.hpp"
#include "nbody/cpu/pair_sums.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit::detail::cpu {

namespace {

using octree::Groups;
using octree::Node;
using octree::Tree;

/// A float32 structure of arrays that grows.
struct Columns {
  std::vector<std::vector<float>> col;
  int64_t size = 0;
  explicit Columns(int columns) : col(size_t(columns)) {}
  /// Room for `more` entries after `size`.
  void reserve(int64_t more) {
    if (size + more <= int64_t(col[0].size())) return;
    const size_t want = std::max<size_t>(size_t(size + more), 2 * col[0].size() + 1024);
    for (auto& c : col) c.resize(want);
  }
  /// Zeros after the last entry up to a multiple of 8 (massless entries at the origin, which add
  /// nothing); returns that multiple.
  int64_t pad() {
    const int64_t end = (size + 7) / 8 * 8;
    reserve(end - size);
    for (auto& c : col) std::fill(c.begin() + size, c.begin() + end, 0.f);
    return end;
  }
  float* operator[](int c) { return col[size_t(c)].data(); }
  const float* operator[](int c) const { return col[size_t(c)].data(); }
};

/// One thread's scratch: the group's interaction lists and its targets.
struct Scratch {
  Columns list{4};          // x, y, z, mass: taken nodes and bodies of opened leaves
  Columns quad{9};          // x, y, z and the quadrupole (xx, yy, zz, xy, xz, yz) of taken nodes
  Columns group{3};         // the group's targets
  std::vector<double> sum;  // ax, ay, az, phi per target
};

/// The group's walk: fills s.list (and s.quad) for the box centred at c with half-sides h.
void walk(const Tree& t, const float c[3], const float h[3], bool quadrupole, Scratch& s) {
  s.list.size = 0, s.quad.size = 0;
  const Node* nodes = t.nodes.data();
  const int32_t count = int32_t(t.nodes.size());
  for (int32_t i = 0; i < count;) {
    const Node& n = nodes[i];
    const float dx = std::max(std::fabs(n.x - c[0]) - h[0], 0.f), dy = std::max(std::fabs(n.y - c[1]) - h[1], 0.f),
                dz = std::max(std::fabs(n.z - c[2]) - h[2], 0.f);
    if (dx * dx + dy * dy + dz * dz > n.open2) {  // far from the whole box: the node as one mass
      s.list.reserve(1);
      const int64_t k = s.list.size++;
      s.list[0][k] = n.x, s.list[1][k] = n.y, s.list[2][k] = n.z, s.list[3][k] = n.mass;
      if (quadrupole) {
        s.quad.reserve(1);
        const int64_t q = s.quad.size++;
        s.quad[0][q] = n.x, s.quad[1][q] = n.y, s.quad[2][q] = n.z;
        for (int e = 0; e < 6; ++e) s.quad[3 + e][q] = t.quad[size_t(i) * 6 + size_t(e)];
      }
      i = n.next;
    } else if (n.next == i + 1) {  // a leaf: its bodies
      s.list.reserve(n.count);
      const int64_t k = s.list.size;
      std::copy_n(t.x.data() + n.first, n.count, s.list[0] + k);
      std::copy_n(t.y.data() + n.first, n.count, s.list[1] + k);
      std::copy_n(t.z.data() + n.first, n.count, s.list[2] + k);
      std::copy_n(t.m.data() + n.first, n.count, s.list[3] + k);
      s.list.size += n.count;
      i = n.next;
    } else {  // open it: its first child follows
      ++i;
    }
  }
}

/// One group: its box, its walk, its sums, its outputs. Returns its list length.
int64_t run_group(const Tree& t, const NbodyArgs& a, const int64_t* order, int64_t begin, int64_t end, bool quadrupole,
                  Scratch& s) {
  s.group.size = 0;
  s.group.reserve(end - begin);
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t w = begin; w < end; ++w) {
    const float* p = a.targets + order[w] * a.target_stride;
    for (int c = 0; c < 3; ++c)
      s.group[c][w - begin] = p[c], lo[c] = std::min(lo[c], p[c]), hi[c] = std::max(hi[c], p[c]);
  }
  s.group.size = end - begin;
  float c[3], h[3];
  for (int k = 0; k < 3; ++k) {
    c[k] = 0.5f * (lo[k] + hi[k]);
    // The half-side reaches both corners whatever the rounding of the centre.
    h[k] = std::max(hi[k] - c[k], c[k] - lo[k]) * (1 + 1e-6f);
  }
  walk(t, c, h, quadrupole, s);
  s.sum.assign(size_t(s.group.size) * 4, 0.0);
  const float eps2 = float(a.softening * a.softening);
  const int64_t list_end = s.list.pad(), quad_end = s.quad.pad();
  const float *tx = s.group[0], *ty = s.group[1], *tz = s.group[2];
  for (int64_t j = 0; j < list_end; j += kPairTile)
    sum_monopoles(s.list[0], s.list[1], s.list[2], s.list[3], j, std::min(list_end, j + kPairTile), tx, ty, tz,
                  s.group.size, eps2, InvSqrt::estimate, s.sum.data());
  const float* const Q[6] = {s.quad[3], s.quad[4], s.quad[5], s.quad[6], s.quad[7], s.quad[8]};
  for (int64_t j = 0; j < quad_end; j += kPairTile)
    sum_quadrupoles(s.quad[0], s.quad[1], s.quad[2], Q, j, std::min(quad_end, j + kPairTile), tx, ty, tz, s.group.size,
                    eps2, s.sum.data());
  for (int64_t w = begin; w < end; ++w) {
    const int64_t i = order[w];
    const double* out = s.sum.data() + (w - begin) * 4;
    for (int k = 0; k < 3; ++k) a.accel.data[i * 3 + k] = float(a.G * out[k]);
    if (!a.potential.empty()) a.potential.data[i] = float(a.G * out[3]);
  }
  return s.list.size;
}

/// Group boundaries for `parts` threads with equal cumulative cost.
std::vector<int64_t> cost_zones(const std::vector<int64_t>& cost, int parts) {
  std::vector<int64_t> prefix(cost.size() + 1, 0);
  std::partial_sum(cost.begin(), cost.end(), prefix.begin() + 1);
  std::vector<int64_t> bounds(size_t(parts) + 1, 0);
  for (int p = 1; p <= parts; ++p) {
    const int64_t want = prefix.back() * p / parts;
    int64_t b = std::lower_bound(prefix.begin(), prefix.end(), want) - prefix.begin();
    // The nearer of the two group boundaries around the wanted share.
    if (b > bounds[size_t(p) - 1] && want - prefix[size_t(b) - 1] < prefix[size_t(b)] - want) --b;
    bounds[size_t(p)] = b;
  }
  bounds.back() = int64_t(cost.size());
  return bounds;
}

/// max / mean of the per-part sums of `cost` over `bounds`.
double imbalance(const std::vector<int64_t>& cost, const std::vector<int64_t>& bounds) {
  const int parts = int(bounds.size()) - 1;
  double total = 0, worst = 0;
  for (int p = 0; p < parts; ++p) {
    double w = 0;
    for (int64_t g = bounds[size_t(p)]; g < bounds[size_t(p) + 1]; ++g) w += double(cost[size_t(g)]);
    total += w, worst = std::max(worst, w);
  }
  return total > 0 ? worst / (total / parts) : 1.0;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

NbodyReport nbody_barnes_hut(const Context& ctx, const NbodyArgs& a, double theta, bool quadrupole,
                             ArrayView<int64_t> costs) {
  const auto start = std::chrono::steady_clock::now();
  const int threads = std::max(1, cpu_threads(ctx));
  const Tree t = octree::build(a.sources, a.n, theta, quadrupole, threads);
  const Groups g = a.targets == a.sources && a.m == a.n && a.target_stride == 4
                       ? octree::group_bodies(t)
                       : octree::group_targets(t, a.targets, a.m, a.target_stride, threads);
  const int64_t groups = int64_t(g.bounds.size()) - 1;
  NbodyReport report;
  report.build_ms = ms_since(start);
  const auto walk_start = std::chrono::steady_clock::now();
  // Work per group: its targets' previous counts (at least 1 each), or its size.
  std::vector<int64_t> size(static_cast<size_t>(groups)), previous(static_cast<size_t>(groups));
  const bool have_costs =
      !costs.empty() && std::any_of(costs.data, costs.data + costs.size, [](int64_t c) { return c > 0; });
  for (int64_t k = 0; k < groups; ++k) {
    size[size_t(k)] = g.bounds[size_t(k) + 1] - g.bounds[size_t(k)];
    int64_t work = 0;
    for (int64_t w = g.bounds[size_t(k)]; w < g.bounds[size_t(k) + 1] && have_costs; ++w)
      work += std::max<int64_t>(1, costs[g.order[size_t(w)]]);
    previous[size_t(k)] = have_costs ? work : size[size_t(k)];
  }
  const std::vector<int64_t> zones = cost_zones(previous, threads);
  std::vector<int64_t> length(static_cast<size_t>(groups), 0);
#pragma omp parallel num_threads(threads)
  {
    Scratch s;
#pragma omp for schedule(static, 1)
    for (int part = 0; part < threads; ++part)
      for (int64_t k = zones[size_t(part)]; k < zones[size_t(part) + 1]; ++k)
        length[size_t(k)] =
            run_group(t, a, g.order.data(), g.bounds[size_t(k)], g.bounds[size_t(k) + 1], quadrupole, s);
  }
  report.walk_ms = ms_since(walk_start);
  std::vector<int64_t> work(static_cast<size_t>(groups));
  for (int64_t k = 0; k < groups; ++k) work[size_t(k)] = length[size_t(k)] * size[size_t(k)];
  report.interactions = std::accumulate(work.begin(), work.end(), int64_t{0});
  report.threads = threads;
  report.imbalance = imbalance(work, zones);
  report.imbalance_equal_count = imbalance(work, cost_zones(size, threads));
  if (!costs.empty())
    for (int64_t k = 0; k < groups; ++k)
      for (int64_t w = g.bounds[size_t(k)]; w < g.bounds[size_t(k) + 1]; ++w)
        costs[g.order[size_t(w)]] = length[size_t(k)];
  return report;
}

}  // namespace simkit::detail::cpu
