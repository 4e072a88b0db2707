#pragma once
// The point tree on the GPU: the layout of spatial/point_tree.hpp (rows in Morton order, leaves
// of leaf_size consecutive rows, an implicit heap of boxes, node v's children 2v and 2v + 1, leaf
// j at first_leaf + j), built on the call's stream in five steps:
//
//   bounds   the rows' bounding box, a reduction through atomics on order-preserving ints
//   codes    each row's Morton code in that box (spatial/morton_code.hpp, as on the CPU)
//   sort     the codes with the row indices (simkit's sort route), stable: the CPU's order
//   gather   the rows copied into Morton order
//   boxes    a thread per leaf, then one launch per level of the heap, bottom up
//
// Queries are put in the same Morton order (sort_queries) so that a packet of consecutive
// sorted queries is a compact group in space.

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/resources.hpp"

namespace simkit::detail::spatial::cuda {

using detail::cuda::Carver;

struct DeviceTree {
  int n = 0, d = 0, leaf_size = 0, leaves = 0, first_leaf = 1;
  const float* rows = nullptr;     // n x d, Morton order
  const int* ids = nullptr;        // Morton position -> row of X
  const int64_t* codes = nullptr;  // the rows' codes, ascending
  const float* lo = nullptr;       // 2 * first_leaf x d (row 0 unused); empty nodes lo = +inf, hi = -inf
  const float* hi = nullptr;
  const float* box = nullptr;  // 2 x d: the rows' bounding box, lower then upper corner
};

/// Device bytes build_device_tree carves for n rows of d.
size_t device_tree_bytes(int64_t n, int64_t d, int64_t leaf_size);

/// The tree over the n x d device rows X (leading dimension ldx); n < 2^31.
DeviceTree build_device_tree(const float* X, int64_t ldx, int64_t n, int64_t d, int64_t leaf_size, Carver& carve,
                             cudaStream_t stream);

/// m queries in the tree's Morton order: position -> row of Q, and their codes, ascending.
struct SortedQueries {
  int* order = nullptr;
  int64_t* codes = nullptr;
};

size_t sorted_queries_bytes(int64_t m);

SortedQueries sort_queries(const DeviceTree& tree, const float* Q, int64_t ldq, int64_t m, Carver& carve,
                           cudaStream_t stream);

}  // namespace simkit::detail::spatial::cuda
