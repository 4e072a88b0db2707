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

  const float* node_lo(int64_t v) const { return lo.data() + v * d; }
  const float* node_hi(int64_t v) const { return hi.data() + v * d; }
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
