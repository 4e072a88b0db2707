#pragma once
// The low-dimensional point tree behind knn(method = tree) and radius_search: a bounding-volume
// hierarchy over the base rows in Morton order.
//
// Build: each row's Morton code (63 / d bits per axis, interleaved, in the box of the rows), one
// sort of (code, row) pairs with simkit's sort, the rows copied into that order, cut into leaves
// of kLeafSize consecutive rows; the inner nodes form an implicit complete binary tree over the
// leaves (heap order: node v has children 2v and 2v + 1, leaf j is node first_leaf + j, the
// padding leaves past the last are empty), each node's box the union of its children's. Morton
// order makes consecutive rows close, so a leaf's box is small and the halves of a node split
// its rows roughly in space; no node splitting heuristic is needed, and the build is a sort and
// a sweep.
//
// Queries are grouped the same way: sorted by their Morton code in the tree's box (clamped), cut
// into packets that walk the tree together (cpu/tree_search.cpp).

#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail::spatial {

inline constexpr int64_t kMaxDim = 8;

/// Rows per leaf on the CPU (knn, radius_search and the tree index). Measured against SciPy's cKDTree
/// (bench/peers/tree_peers.py's method, uniform rows, k = 16, 2 threads, queries/s relative to cKDTree's, d = 3 / d =
/// 8, packets of 32, 2026-11-26, with the float32 prefilter of cpu/tree_search.cpp). 1,000,000 rows, 100,000 queries:
/// leaves of 16: 1.89 / 2.55; 32: 2.29 / 3.61; 64: 2.40 / 4.45; 128: 2.24 / 4.77 (with packets of 64, 64: 2.54 / 4.96,
/// 128: 2.29 / 5.50). 200,000 rows, 20,000 queries: 32: 1.91 / 3.07; 64: 2.04 / 3.53. Larger leaves suit d = 8 (fewer
/// boxes to test, the rows cheap to prefilter); 64 is the best at d = 3. Before the prefilter, where every row of a
/// visited leaf was scored in float64 (200,000 rows): 8: 0.73 / 0.52; 16: 0.83 / 0.62; 32: 0.89 / 0.79; 64: 0.88 /
/// 0.77.
inline constexpr int64_t kLeafSize = 64;

struct PointTree {
  int64_t n = 0, d = 0;
  int64_t leaf_size = 0;
  std::vector<float> rows;            // n x d, in Morton order
  std::vector<int64_t> ids;           // Morton position -> row of X
  std::vector<int64_t> codes;         // the rows' Morton codes, ascending
  int64_t leaves = 0;                 // ceil(n / leaf_size)
  int64_t first_leaf = 1;             // heap index of leaf 0: the power of two >= leaves
  std::vector<float> lo, hi;          // 2 * first_leaf boxes of d floats in heap order (index 0 unused);
                                      // an empty node has lo = +inf, hi = -inf
  std::vector<float> box_lo, box_hi;  // the rows' bounding box, d floats each (Morton codes)
  // The rows again, leaf by leaf in structure of arrays, for the searches' eight-lane float32
  // prefilter: leaf j's axis c holds its rows' coordinates at leaf_soa[(j * d + c) * soa_stride
  // + r], soa_stride the leaf size rounded up to 8, the rows past a leaf's last NaN (no
  // comparison holds for them, so they drop out of every test).
  int64_t soa_stride = 0;
  std::vector<float> leaf_soa;

  const float* node_lo(int64_t v) const { return lo.data() + v * d; }
  const float* node_hi(int64_t v) const { return hi.data() + v * d; }
  const float* leaf_axes(int64_t j) const { return leaf_soa.data() + j * d * soa_stride; }
  /// Rows [first, last) of leaf j, in Morton order.
  int64_t leaf_first(int64_t j) const { return j * leaf_size; }
  int64_t leaf_last(int64_t j) const { return (j + 1) * leaf_size < n ? (j + 1) * leaf_size : n; }
};

/// The tree over the rows of X (host, n x d, 1 <= d <= kMaxDim); the sort runs on ctx's threads.
PointTree build_point_tree(const Context& ctx, MatrixView<const float> X, int64_t leaf_size);

/// Rows in Morton order: position -> row, and their codes, ascending.
struct MortonOrder {
  std::vector<int64_t> order, codes;
};

/// The rows of P (host, m x d) in the Morton order of `tree`'s box (rows outside clamped to it).
MortonOrder morton_order(const Context& ctx, const PointTree& tree, MatrixView<const float> P);

}  // namespace simkit::detail::spatial
