// The point tree's build and the Morton order of query rows (point_tree.hpp).

#include "spatial/point_tree.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <simkit/primitives.hpp>

#include "core/parallel.hpp"
#include "spatial/morton_code.hpp"

namespace simkit::detail::spatial {

namespace {

/// Rows of P sorted by their codes in the box [lo, hi]; ties keep row order (a stable sort).
MortonOrder sorted_by_code(const Context& ctx, MatrixView<const float> P, const std::vector<float>& lo,
                           const std::vector<float>& hi) {
  const int64_t m = P.rows, d = P.cols;
  const int bits = morton_bits(d);
  double scale[kMaxDim];
  for (int64_t c = 0; c < d; ++c) scale[c] = morton_scale(lo[size_t(c)], hi[size_t(c)], bits);
  std::vector<int64_t> codes(static_cast<size_t>(m)), order(static_cast<size_t>(m));
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < m; ++i) {
    codes[size_t(i)] = morton_code(P.data + i * d, d, lo.data(), scale, bits);
    order[size_t(i)] = i;
  }
  Context cpu = ctx;
  cpu.device = Device::cpu;
  sort(cpu, ArrayView<int64_t>(codes), ArrayView<int64_t>(order));
  return {std::move(order), std::move(codes)};
}

}  // namespace

PointTree build_point_tree(const Context& ctx, MatrixView<const float> X, int64_t leaf_size) {
  PointTree t;
  t.n = X.rows, t.d = X.cols, t.leaf_size = leaf_size;
  const int64_t n = t.n, d = t.d;
  t.box_lo.assign(size_t(d), std::numeric_limits<float>::infinity());
  t.box_hi.assign(size_t(d), -std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) {
      const float v = X.data[i * d + c];
      t.box_lo[size_t(c)] = std::min(t.box_lo[size_t(c)], v), t.box_hi[size_t(c)] = std::max(t.box_hi[size_t(c)], v);
    }
  MortonOrder sorted = sorted_by_code(ctx, X, t.box_lo, t.box_hi);
  t.ids = std::move(sorted.order), t.codes = std::move(sorted.codes);
  t.leaves = (n + leaf_size - 1) / leaf_size;
  while (t.first_leaf < t.leaves) t.first_leaf *= 2;
  t.rows.resize(size_t(n * d));
  t.lo.assign(size_t(2 * t.first_leaf * d), std::numeric_limits<float>::infinity());
  t.hi.assign(size_t(2 * t.first_leaf * d), -std::numeric_limits<float>::infinity());
  t.soa_stride = (leaf_size + 7) / 8 * 8;
  t.leaf_soa.assign(size_t(t.leaves * d * t.soa_stride), std::numeric_limits<float>::quiet_NaN());
  // Leaf by leaf on ctx's threads: the gather of the rows into Morton order misses the cache on
  // nearly every row, the slowest sweep of the build after the sort.
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t j = 0; j < t.leaves; ++j) {
    float* lo = t.lo.data() + (t.first_leaf + j) * d;
    float* hi = t.hi.data() + (t.first_leaf + j) * d;
    float* soa = t.leaf_soa.data() + j * d * t.soa_stride;
    for (int64_t p = t.leaf_first(j); p < t.leaf_last(j); ++p)
      for (int64_t c = 0; c < d; ++c) {
        const float v = X.data[t.ids[size_t(p)] * d + c];
        t.rows[size_t(p * d + c)] = v, soa[c * t.soa_stride + p - t.leaf_first(j)] = v;
        lo[c] = std::min(lo[c], v), hi[c] = std::max(hi[c], v);
      }
  }
  for (int64_t v = t.first_leaf - 1; v >= 1; --v)
    for (int64_t c = 0; c < d; ++c) {
      t.lo[size_t(v * d + c)] = std::min(t.lo[size_t(2 * v * d + c)], t.lo[size_t((2 * v + 1) * d + c)]);
      t.hi[size_t(v * d + c)] = std::max(t.hi[size_t(2 * v * d + c)], t.hi[size_t((2 * v + 1) * d + c)]);
    }
  return t;
}

MortonOrder morton_order(const Context& ctx, const PointTree& tree, MatrixView<const float> P) {
  return sorted_by_code(ctx, P, tree.box_lo, tree.box_hi);
}

}  // namespace simkit::detail::spatial
