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
// then sums eight entries at a time, in tiles of kTile entries: float32 within a tile, float64
// across tiles, so accumulation chains stay short. A pair at distance zero contributes nothing.
// Quadrupoles (when asked) are a second loop over the taken nodes. The loops are AVX2 intrinsics:
// GCC 12 leaves `#pragma omp simd` loops with a square root scalar unless -fno-math-errno and
// -fno-trapping-math are given, and vrsqrtps with one Newton step (relative error below 3e-7)
// beats vsqrtps + vdivps anyway; other targets get the same loops in plain C++.
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

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "core/parallel.hpp"
#include "nbody/cpu/octree.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit::detail::cpu {

namespace {

using octree::Groups;
using octree::Node;
using octree::Tree;

/// List entries summed per target before the float32 partial sums go into float64 (4 KiB of each array).
constexpr int64_t kTile = 1024;

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

#if defined(__AVX2__) && defined(__FMA__)

/// 1 / sqrt(r2) to about 2^-22: the estimate of vrsqrtps and one Newton step.
inline __m256 rsqrt(__m256 r2) {
  const __m256 y = _mm256_rsqrt_ps(r2);
  const __m256 t = _mm256_fnmadd_ps(_mm256_mul_ps(r2, y), y, _mm256_set1_ps(3.f));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), y), t);
}

/// The eight lanes' sum, in float64.
inline double lanes(__m256 v) {
  const __m256d s =
      _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

/// Adds the monopole sums of s.list over [begin, end) (multiples of 8: the list is padded with
/// massless entries) at every target of the group to s.sum.
void sum_monopoles(Scratch& s, int64_t begin, int64_t end, float eps2) {
  const float *X = s.list[0], *Y = s.list[1], *Z = s.list[2], *M = s.list[3];
  const __m256 e2 = _mm256_set1_ps(eps2), zero = _mm256_setzero_ps();
  for (int64_t t = 0; t < s.group.size; ++t) {
    const __m256 x = _mm256_set1_ps(s.group[0][t]), y = _mm256_set1_ps(s.group[1][t]),
                 z = _mm256_set1_ps(s.group[2][t]);
    __m256 ax = zero, ay = zero, az = zero, p = zero;
    for (int64_t j = begin; j < end; j += 8) {
      const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(X + j), x), dy = _mm256_sub_ps(_mm256_loadu_ps(Y + j), y),
                   dz = _mm256_sub_ps(_mm256_loadu_ps(Z + j), z);
      const __m256 d2 = _mm256_fmadd_ps(dz, dz, _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dx, dx)));
      // A pair at distance zero (the body itself) contributes nothing (nbody.hpp).
      const __m256 inv = _mm256_and_ps(rsqrt(_mm256_add_ps(d2, e2)), _mm256_cmp_ps(d2, zero, _CMP_GT_OQ));
      const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(M + j), inv);
      const __m256 w3 = _mm256_mul_ps(w, _mm256_mul_ps(inv, inv));
      ax = _mm256_fmadd_ps(w3, dx, ax), ay = _mm256_fmadd_ps(w3, dy, ay), az = _mm256_fmadd_ps(w3, dz, az);
      p = _mm256_add_ps(p, w);
    }
    double* out = s.sum.data() + t * 4;
    out[0] += lanes(ax), out[1] += lanes(ay), out[2] += lanes(az), out[3] -= lanes(p);
  }
}

/// Adds the quadrupole terms of s.quad over [begin, end) (padded as the list) to s.sum: with r
/// from the centre of mass to the target, phi = -(1/2) r.Q.r / r^5 and
/// a = Q r / r^5 - (5/2) (r.Q.r) r / r^7 (softened distances, as the monopole's).
void sum_quadrupoles(Scratch& s, int64_t begin, int64_t end, float eps2) {
  const __m256 e2 = _mm256_set1_ps(eps2), zero = _mm256_setzero_ps(), five_halves = _mm256_set1_ps(2.5f);
  for (int64_t t = 0; t < s.group.size; ++t) {
    const __m256 x = _mm256_set1_ps(s.group[0][t]), y = _mm256_set1_ps(s.group[1][t]),
                 z = _mm256_set1_ps(s.group[2][t]);
    __m256 ax = zero, ay = zero, az = zero, p = zero;
    for (int64_t j = begin; j < end; j += 8) {
      auto at = [&](int c) { return _mm256_loadu_ps(s.quad[c] + j); };
      const __m256 rx = _mm256_sub_ps(x, at(0)), ry = _mm256_sub_ps(y, at(1)), rz = _mm256_sub_ps(z, at(2));
      const __m256 r2 = _mm256_add_ps(_mm256_fmadd_ps(rz, rz, _mm256_fmadd_ps(ry, ry, _mm256_mul_ps(rx, rx))), e2);
      // r2 = 0 only for a padding entry (massless, at the origin) seen from a target there.
      const __m256 inv = _mm256_and_ps(rsqrt(r2), _mm256_cmp_ps(r2, zero, _CMP_GT_OQ)), inv2 = _mm256_mul_ps(inv, inv),
                   inv5 = _mm256_mul_ps(_mm256_mul_ps(inv2, inv2), inv);
      const __m256 xx = at(3), yy = at(4), zz = at(5), xy = at(6), xz = at(7), yz = at(8);
      const __m256 qx = _mm256_fmadd_ps(xz, rz, _mm256_fmadd_ps(xy, ry, _mm256_mul_ps(xx, rx)));
      const __m256 qy = _mm256_fmadd_ps(yz, rz, _mm256_fmadd_ps(yy, ry, _mm256_mul_ps(xy, rx)));
      const __m256 qz = _mm256_fmadd_ps(zz, rz, _mm256_fmadd_ps(yz, ry, _mm256_mul_ps(xz, rx)));
      const __m256 rqr = _mm256_fmadd_ps(rz, qz, _mm256_fmadd_ps(ry, qy, _mm256_mul_ps(rx, qx)));
      const __m256 k = _mm256_mul_ps(_mm256_mul_ps(five_halves, rqr), inv2);
      ax = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, rx, qx), ax);
      ay = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, ry, qy), ay);
      az = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, rz, qz), az);
      p = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), rqr), inv5, p);
    }
    double* out = s.sum.data() + t * 4;
    out[0] += lanes(ax), out[1] += lanes(ay), out[2] += lanes(az), out[3] -= lanes(p);
  }
}

#else  // the same sums in plain C++ (see the header comment)

void sum_monopoles(Scratch& s, int64_t begin, int64_t end, float eps2) {
  const float *X = s.list[0], *Y = s.list[1], *Z = s.list[2], *M = s.list[3];
  for (int64_t t = 0; t < s.group.size; ++t) {
    const float x = s.group[0][t], y = s.group[1][t], z = s.group[2][t];
    float ax = 0, ay = 0, az = 0, p = 0;
#pragma omp simd reduction(+ : ax, ay, az, p)
    for (int64_t j = begin; j < end; ++j) {
      const float dx = X[j] - x, dy = Y[j] - y, dz = Z[j] - z;
      const float d2 = dx * dx + dy * dy + dz * dz;
      const float inv = d2 > 0.f ? 1.f / std::sqrt(d2 + eps2) : 0.f;  // distance zero: nothing
      const float w = M[j] * inv;
      const float w3 = w * inv * inv;
      ax += w3 * dx, ay += w3 * dy, az += w3 * dz;
      p += w;
    }
    double* out = s.sum.data() + t * 4;
    out[0] += ax, out[1] += ay, out[2] += az, out[3] -= p;
  }
}

void sum_quadrupoles(Scratch& s, int64_t begin, int64_t end, float eps2) {
  const float *X = s.quad[0], *Y = s.quad[1], *Z = s.quad[2];
  const float *Qxx = s.quad[3], *Qyy = s.quad[4], *Qzz = s.quad[5], *Qxy = s.quad[6], *Qxz = s.quad[7],
              *Qyz = s.quad[8];
  for (int64_t t = 0; t < s.group.size; ++t) {
    const float x = s.group[0][t], y = s.group[1][t], z = s.group[2][t];
    float ax = 0, ay = 0, az = 0, p = 0;
#pragma omp simd reduction(+ : ax, ay, az, p)
    for (int64_t j = begin; j < end; ++j) {
      const float rx = x - X[j], ry = y - Y[j], rz = z - Z[j];
      const float r2 = rx * rx + ry * ry + rz * rz + eps2;
      const float inv = r2 > 0.f ? 1.f / std::sqrt(r2) : 0.f, inv2 = inv * inv, inv5 = inv2 * inv2 * inv;
      const float qx = Qxx[j] * rx + Qxy[j] * ry + Qxz[j] * rz, qy = Qxy[j] * rx + Qyy[j] * ry + Qyz[j] * rz,
                  qz = Qxz[j] * rx + Qyz[j] * ry + Qzz[j] * rz;
      const float rqr = rx * qx + ry * qy + rz * qz, k = 2.5f * rqr * inv2;
      ax += inv5 * (qx - k * rx), ay += inv5 * (qy - k * ry), az += inv5 * (qz - k * rz);
      p += 0.5f * rqr * inv5;
    }
    double* out = s.sum.data() + t * 4;
    out[0] += ax, out[1] += ay, out[2] += az, out[3] -= p;
  }
}

#endif

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
  for (int64_t j = 0; j < list_end; j += kTile) sum_monopoles(s, j, std::min(list_end, j + kTile), eps2);
  for (int64_t j = 0; j < quad_end; j += kTile) sum_quadrupoles(s, j, std::min(quad_end, j + kTile), eps2);
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
