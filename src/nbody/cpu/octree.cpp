// The octree and target groups of the CPU Barnes-Hut: see octree.hpp.

#include "nbody/cpu/octree.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "core/expects.hpp"
#include "nbody/morton.hpp"

namespace simkit::detail::cpu::octree {

namespace {

constexpr int kLevels = 21;              // bits per axis
constexpr double kCells = 2097152.0;     // 2^21
constexpr uint64_t kLastCell = 2097151;  // 2^21 - 1

/// The code of a point in the cube (lo, side), clamped to it: x in bit 3k + 2, y in 3k + 1, z in 3k.
uint64_t code_of(const float* p, const double lo[3], double side) {
  uint64_t cell[3];
  for (int c = 0; c < 3; ++c) {
    const double u = std::clamp((double(p[c]) - lo[c]) / side * kCells, 0.0, double(kLastCell));
    cell[c] = uint64_t(u);
  }
  return nbody::morton_code(cell[0], cell[1], cell[2]);
}

struct Keyed {
  uint64_t code;
  int64_t index;
  bool operator<(const Keyed& o) const { return code < o.code || (code == o.code && index < o.index); }
};

/// Codes of `count` points (rows of `stride` floats), sorted (ties by index): `threads` blocks
/// sorted side by side, then merged.
std::vector<Keyed> sorted_codes(const float* points, int64_t count, int64_t stride, const double lo[3], double side,
                                int threads) {
  std::vector<Keyed> keyed(static_cast<size_t>(count));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t j = 0; j < count; ++j) keyed[size_t(j)] = {code_of(points + j * stride, lo, side), j};
  const int blocks = int(std::clamp<int64_t>(count / 65536, 1, threads));
  std::vector<int64_t> edge(size_t(blocks) + 1);
  for (int b = 0; b <= blocks; ++b) edge[size_t(b)] = count * b / blocks;
#pragma omp parallel for schedule(static, 1) num_threads(blocks)
  for (int b = 0; b < blocks; ++b) std::sort(keyed.begin() + edge[size_t(b)], keyed.begin() + edge[size_t(b) + 1]);
  for (int b = 1; b < blocks; ++b)
    std::inplace_merge(keyed.begin(), keyed.begin() + edge[size_t(b)], keyed.begin() + edge[size_t(b) + 1]);
  return keyed;
}

/// What a subtree hands its parent, in float64.
struct Moments {
  double mass = 0, x = 0, y = 0, z = 0;
  double bmax = 0;
  double q[6] = {0, 0, 0, 0, 0, 0};
};

/// Adds m at (x, y, z) to the traceless quadrupole q about the centre c.
void add_point(double q[6], const Moments& c, double m, double x, double y, double z) {
  const double dx = x - c.x, dy = y - c.y, dz = z - c.z, r2 = dx * dx + dy * dy + dz * dz;
  q[0] += m * (3 * dx * dx - r2), q[1] += m * (3 * dy * dy - r2), q[2] += m * (3 * dz * dz - r2);
  q[3] += m * 3 * dx * dy, q[4] += m * 3 * dx * dz, q[5] += m * 3 * dy * dz;
}

class Builder {
 public:
  Builder(Tree& t, double theta, bool quadrupole) : t_(t), quadrupole_(quadrupole) {
    // open2 = (b_max / min(theta, 1))^2: d > b_max always, so no target lies among the node's bodies.
    scale_ = theta > 0 ? 1 / std::min(theta, 1.0) : 0;
  }

  /// The subtree of Morton positions [first, last), a cell of `side` with corner `corner` at `level`.
  Moments node(int64_t first, int64_t last, int level, const double corner[3], double side) {
    const size_t self = t_.nodes.size();
    t_.nodes.emplace_back();
    if (quadrupole_) t_.quad.resize(t_.quad.size() + 6);
    Moments mo;
    if (last - first <= kLeafSize || level == kLevels)
      leaf(mo, first, last);
    else
      inner(mo, first, last, level, corner, side);
    // b_max is at most the farthest corner of the cell from the centre of mass.
    double far2 = 0;
    const double c[3] = {mo.x, mo.y, mo.z};
    for (int k = 0; k < 3; ++k) {
      const double e = std::max(std::fabs(c[k] - corner[k]), std::fabs(corner[k] + side - c[k]));
      far2 += e * e;
    }
    mo.bmax = std::min(mo.bmax, std::sqrt(far2));
    Node& n = t_.nodes[self];
    n.x = float(mo.x), n.y = float(mo.y), n.z = float(mo.z), n.mass = float(mo.mass);
    // Rounding margin: the float32 centre moved by up to an ulp of the coordinates.
    const double margin = 4 * FLT_EPSILON * std::max({std::fabs(mo.x), std::fabs(mo.y), std::fabs(mo.z), side});
    const double radius = (mo.bmax * (1 + 1e-6) + margin) * scale_;
    n.open2 = scale_ > 0 ? float(radius * radius) : std::numeric_limits<float>::infinity();
    n.first = int32_t(first), n.count = int32_t(last - first), n.next = int32_t(t_.nodes.size());
    if (quadrupole_)
      for (int e = 0; e < 6; ++e) t_.quad[self * 6 + size_t(e)] = float(mo.q[e]);
    return mo;
  }

 private:
  void leaf(Moments& mo, int64_t first, int64_t last) {
    const std::vector<float>&X = t_.x, &Y = t_.y, &Z = t_.z, &M = t_.m;
    double mx = 0, my = 0, mz = 0;
    for (int64_t p = first; p < last; ++p) {
      const double w = M[size_t(p)];
      mo.mass += w, mx += w * X[size_t(p)], my += w * Y[size_t(p)], mz += w * Z[size_t(p)];
    }
    if (mo.mass > 0)
      mo.x = mx / mo.mass, mo.y = my / mo.mass, mo.z = mz / mo.mass;
    else  // massless: the centre is the first body (the node contributes nothing anyway)
      mo.x = X[size_t(first)], mo.y = Y[size_t(first)], mo.z = Z[size_t(first)];
    double b2 = 0;
    for (int64_t p = first; p < last; ++p) {
      const double dx = X[size_t(p)] - mo.x, dy = Y[size_t(p)] - mo.y, dz = Z[size_t(p)] - mo.z;
      b2 = std::max(b2, dx * dx + dy * dy + dz * dz);
      if (quadrupole_) add_point(mo.q, mo, M[size_t(p)], X[size_t(p)], Y[size_t(p)], Z[size_t(p)]);
    }
    mo.bmax = std::sqrt(b2);
  }

  void inner(Moments& mo, int64_t first, int64_t last, int level, const double corner[3], double side) {
    const int shift = 3 * (kLevels - 1 - level);
    const std::vector<uint64_t>& codes = t_.codes;
    Moments kids[8];
    int count = 0;
    for (int64_t begin = first; begin < last;) {
      // Within a cell the codes share their bits above `shift`, so the octant rises along the run.
      const uint64_t octant = (codes[size_t(begin)] >> shift) & 7u;
      const int64_t end = std::partition_point(codes.begin() + begin, codes.begin() + last,
                                               [&](uint64_t c) { return ((c >> shift) & 7u) <= octant; }) -
                          codes.begin();
      const double half = side / 2;
      const double child[3] = {corner[0] + half * double(octant >> 2 & 1), corner[1] + half * double(octant >> 1 & 1),
                               corner[2] + half * double(octant & 1)};
      kids[count++] = node(begin, end, level + 1, child, half);
      begin = end;
    }
    double mx = 0, my = 0, mz = 0;
    for (int k = 0; k < count; ++k)
      mo.mass += kids[k].mass, mx += kids[k].mass * kids[k].x, my += kids[k].mass * kids[k].y,
          mz += kids[k].mass * kids[k].z;
    if (mo.mass > 0)
      mo.x = mx / mo.mass, mo.y = my / mo.mass, mo.z = mz / mo.mass;
    else
      mo.x = kids[0].x, mo.y = kids[0].y, mo.z = kids[0].z;
    // Each child's bodies lie within its b_max of its centre; the quadrupoles move to this
    // centre by the parallel-axis rule (plus the child's mass at its offset).
    for (int k = 0; k < count; ++k) {
      const double dx = kids[k].x - mo.x, dy = kids[k].y - mo.y, dz = kids[k].z - mo.z;
      mo.bmax = std::max(mo.bmax, kids[k].bmax + std::sqrt(dx * dx + dy * dy + dz * dz));
      if (quadrupole_) {
        for (int e = 0; e < 6; ++e) mo.q[e] += kids[k].q[e];
        add_point(mo.q, mo, kids[k].mass, kids[k].x, kids[k].y, kids[k].z);
      }
    }
  }

  Tree& t_;
  bool quadrupole_;
  double scale_ = 0;
};

}  // namespace

Tree build(const float* sources, int64_t n, double theta, bool quadrupole, int threads) {
  SIMKIT_EXPECTS(n < int64_t(1) << 31, invalid_argument, "nbody: barnes_hut takes fewer than 2^31 bodies, got ", n);
  Tree t;
  float x0 = INFINITY, y0 = INFINITY, z0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, z1 = -INFINITY;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(min : x0, y0, z0) reduction(max : x1, y1, z1)
  for (int64_t j = 0; j < n; ++j) {
    const float* p = sources + j * 4;
    x0 = std::min(x0, p[0]), y0 = std::min(y0, p[1]), z0 = std::min(z0, p[2]);
    x1 = std::max(x1, p[0]), y1 = std::max(y1, p[1]), z1 = std::max(z1, p[2]);
  }
  const double lo[3] = {x0, y0, z0}, hi[3] = {x1, y1, z1};
  t.side = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-30}) * (1 + 1e-6);
  for (int c = 0; c < 3; ++c) t.lo[c] = lo[c];
  const std::vector<Keyed> keyed = sorted_codes(sources, n, 4, t.lo, t.side, threads);
  t.order.resize(size_t(n)), t.codes.resize(size_t(n));
  for (auto* v : {&t.x, &t.y, &t.z, &t.m}) v->resize(size_t(n));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t p = 0; p < n; ++p) {
    const int64_t j = keyed[size_t(p)].index;
    t.order[size_t(p)] = j, t.codes[size_t(p)] = keyed[size_t(p)].code;
    t.x[size_t(p)] = sources[j * 4], t.y[size_t(p)] = sources[j * 4 + 1], t.z[size_t(p)] = sources[j * 4 + 2];
    t.m[size_t(p)] = sources[j * 4 + 3];
  }
  t.nodes.reserve(size_t(n / kLeafSize * 2 + 16));
  Builder(t, theta, quadrupole).node(0, n, 0, t.lo, t.side);
  return t;
}

namespace {

/// Splits the sorted codes [first, last) at `level` by octant until at most `most` remain;
/// neighbouring octants that fit together (in Morton order) stay one group.
void split(const uint64_t* codes, int64_t first, int64_t last, int level, int64_t most, std::vector<int64_t>& bounds) {
  if (last - first <= most || level == kLevels) {
    bounds.push_back(last);
    return;
  }
  const int shift = 3 * (kLevels - 1 - level);
  int64_t open = first;  // start of the run of small octants not yet closed
  for (int64_t begin = first; begin < last;) {
    const uint64_t octant = (codes[begin] >> shift) & 7u;
    const int64_t end =
        std::partition_point(codes + begin, codes + last, [&](uint64_t c) { return ((c >> shift) & 7u) <= octant; }) -
        codes;
    if (end - begin > most) {
      if (open < begin) bounds.push_back(begin);
      split(codes, begin, end, level + 1, most, bounds);
      open = end;
    } else if (end - open > most) {
      bounds.push_back(begin);
      open = begin;
    }
    begin = end;
  }
  if (open < last) bounds.push_back(last);
}

}  // namespace

Groups group_bodies(const Tree& t) {
  Groups g;
  g.order = t.order;
  g.bounds.push_back(0);
  split(t.codes.data(), 0, int64_t(t.codes.size()), 0, group_size(int64_t(t.codes.size())), g.bounds);
  return g;
}

Groups group_targets(const Tree& t, const float* targets, int64_t m, int64_t stride, int threads) {
  const std::vector<Keyed> keyed = sorted_codes(targets, m, stride, t.lo, t.side, threads);
  Groups g;
  std::vector<uint64_t> codes(static_cast<size_t>(m));
  g.order.resize(size_t(m));
  for (int64_t i = 0; i < m; ++i) g.order[size_t(i)] = keyed[size_t(i)].index, codes[size_t(i)] = keyed[size_t(i)].code;
  g.bounds.push_back(0);
  split(codes.data(), 0, m, 0, group_size(m), g.bounds);
  return g;
}

}  // namespace simkit::detail::cpu::octree
