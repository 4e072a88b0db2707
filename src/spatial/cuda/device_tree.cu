// The point tree's GPU build and the queries' Morton order (device_tree.hpp).

#include "spatial/cuda/device_tree.hpp"

#include <cfloat>
#include <climits>

#include "cuda/check.hpp"
#include "cuda/ordered_float.cuh"
#include "cuda/primitives/sort_codes.hpp"
#include "spatial/morton_code.hpp"
#include "spatial/point_tree.hpp"

namespace simkit::detail::spatial::cuda {

namespace {

using detail::cuda::check_cuda;
using detail::cuda::check_launch;
using detail::cuda::ordered;
using detail::cuda::unordered;

constexpr int kBlock = 256;

int blocks_for(int64_t work) { return int((work + kBlock - 1) / kBlock); }

__global__ void bounds_init_kernel(int* box, int d) {
  if (threadIdx.x < d) box[threadIdx.x] = INT_MAX, box[d + threadIdx.x] = INT_MIN;
}

__global__ void __launch_bounds__(kBlock)
    bounds_kernel(const float* __restrict__ X, int64_t ldx, int64_t n, int d, int* box) {
  float lo[kMaxDim], hi[kMaxDim];
  for (int c = 0; c < kMaxDim; ++c) lo[c] = FLT_MAX, hi[c] = -FLT_MAX;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += int64_t(gridDim.x) * kBlock)
    for (int c = 0; c < d; ++c) lo[c] = fminf(lo[c], X[i * ldx + c]), hi[c] = fmaxf(hi[c], X[i * ldx + c]);
  for (int c = 0; c < d; ++c) {
    for (int o = 16; o > 0; o /= 2) {
      lo[c] = fminf(lo[c], __shfl_xor_sync(0xffffffffu, lo[c], o));
      hi[c] = fmaxf(hi[c], __shfl_xor_sync(0xffffffffu, hi[c], o));
    }
    if (threadIdx.x % 32 == 0) atomicMin(box + c, ordered(lo[c])), atomicMax(box + d + c, ordered(hi[c]));
  }
}

/// The box as floats, in place of its ordered ints.
__global__ void box_kernel(int* box, int d) {
  if (threadIdx.x < 2 * d) reinterpret_cast<float*>(box)[threadIdx.x] = unordered(box[threadIdx.x]);
}

__global__ void __launch_bounds__(kBlock)
    codes_kernel(const float* __restrict__ P, int64_t ldp, int64_t count, int d, const float* __restrict__ box,
                 int64_t* __restrict__ codes, int* __restrict__ index) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= count) return;
  const int bits = morton_bits(d);
  double scale[kMaxDim];
  for (int c = 0; c < d; ++c) scale[c] = morton_scale(box[c], box[d + c], bits);
  codes[i] = morton_code(P + i * ldp, d, box, scale, bits);
  index[i] = int(i);
}

__global__ void __launch_bounds__(kBlock) gather_kernel(const float* __restrict__ X, int64_t ldx, int64_t n, int d,
                                                        const int* __restrict__ index, float* __restrict__ rows) {
  const int64_t e = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (e >= n * d) return;
  const int64_t p = e / d, c = e % d;
  rows[e] = X[int64_t(index[p]) * ldx + c];
}

/// Leaf j's box over its rows; padding leaves past the last get the empty box.
__global__ void __launch_bounds__(kBlock)
    leaf_boxes_kernel(const float* __restrict__ rows, int n, int d, int leaf_size, int first_leaf,
                      float* __restrict__ lo, float* __restrict__ hi) {
  const int j = blockIdx.x * kBlock + threadIdx.x;
  if (j >= first_leaf) return;
  float l[kMaxDim], h[kMaxDim];
  for (int c = 0; c < d; ++c) l[c] = INFINITY, h[c] = -INFINITY;
  const int64_t first = int64_t(j) * leaf_size, last = min(first + leaf_size, int64_t(n));
  for (int64_t p = first; p < last; ++p)
    for (int c = 0; c < d; ++c) l[c] = fminf(l[c], rows[p * d + c]), h[c] = fmaxf(h[c], rows[p * d + c]);
  const int64_t v = int64_t(first_leaf) + j;
  for (int c = 0; c < d; ++c) lo[v * d + c] = l[c], hi[v * d + c] = h[c];
}

/// Nodes [first, 2 first) of one level: each the union of its children's boxes.
__global__ void __launch_bounds__(kBlock) level_boxes_kernel(int first, int d, float* lo, float* hi) {
  const int64_t v = int64_t(first) + blockIdx.x * kBlock + threadIdx.x;
  if (v >= 2 * int64_t(first)) return;
  for (int c = 0; c < d; ++c) {
    lo[v * d + c] = fminf(lo[2 * v * d + c], lo[(2 * v + 1) * d + c]);
    hi[v * d + c] = fmaxf(hi[2 * v * d + c], hi[(2 * v + 1) * d + c]);
  }
}

int64_t first_leaf_of(int64_t leaves) {
  int64_t f = 1;
  while (f < leaves) f *= 2;
  return f;
}

}  // namespace

size_t device_tree_bytes(int64_t n, int64_t d, int64_t leaf_size) {
  const int64_t nodes = 2 * first_leaf_of((n + leaf_size - 1) / leaf_size);
  return Carver::round(64) + Carver::round(size_t(n) * 8) + Carver::round(size_t(n) * 4) +
         Carver::round(size_t(n * d) * 4) + 2 * Carver::round(size_t(nodes * d) * 4) +
         Carver::round(detail::cuda::sort_codes_bytes(n));
}

DeviceTree build_device_tree(const float* X, int64_t ldx, int64_t n, int64_t d, int64_t leaf_size, Carver& carve,
                             cudaStream_t s) {
  DeviceTree t;
  t.n = int(n), t.d = int(d), t.leaf_size = int(leaf_size);
  t.leaves = int((n + leaf_size - 1) / leaf_size);
  t.first_leaf = int(first_leaf_of(t.leaves));
  int* box = carve.take<int>(16);
  int64_t* codes = carve.take<int64_t>(size_t(n));
  int* ids = carve.take<int>(size_t(n));
  float* rows = carve.take<float>(size_t(n * d));
  float* lo = carve.take<float>(size_t(2 * int64_t(t.first_leaf) * d));
  float* hi = carve.take<float>(size_t(2 * int64_t(t.first_leaf) * d));
  bounds_init_kernel<<<1, 32, 0, s>>>(box, t.d);
  bounds_kernel<<<std::min(blocks_for(n), 1024), kBlock, 0, s>>>(X, ldx, n, t.d, box);
  box_kernel<<<1, 32, 0, s>>>(box, t.d);
  t.box = reinterpret_cast<const float*>(box);
  codes_kernel<<<blocks_for(n), kBlock, 0, s>>>(X, ldx, n, t.d, t.box, codes, ids);
  check_launch("point tree codes");
  detail::cuda::sort_codes(codes, ids, n, carve, s);
  gather_kernel<<<blocks_for(n * d), kBlock, 0, s>>>(X, ldx, n, t.d, ids, rows);
  leaf_boxes_kernel<<<blocks_for(t.first_leaf), kBlock, 0, s>>>(rows, t.n, t.d, t.leaf_size, t.first_leaf, lo, hi);
  for (int first = t.first_leaf / 2; first >= 1; first /= 2)
    level_boxes_kernel<<<blocks_for(first), kBlock, 0, s>>>(first, t.d, lo, hi);
  check_launch("point tree boxes");
  t.rows = rows, t.ids = ids, t.codes = codes, t.lo = lo, t.hi = hi;
  return t;
}

size_t sorted_queries_bytes(int64_t m) {
  return Carver::round(size_t(m) * 8) + Carver::round(size_t(m) * 4) + Carver::round(detail::cuda::sort_codes_bytes(m));
}

SortedQueries sort_queries(const DeviceTree& t, const float* Q, int64_t ldq, int64_t m, Carver& carve, cudaStream_t s) {
  SortedQueries q;
  q.codes = carve.take<int64_t>(size_t(m));
  q.order = carve.take<int>(size_t(m));
  codes_kernel<<<blocks_for(m), kBlock, 0, s>>>(Q, ldq, m, t.d, t.box, q.codes, q.order);
  check_launch("point tree query codes");
  detail::cuda::sort_codes(q.codes, q.order, m, carve, s);
  return q;
}

}  // namespace simkit::detail::spatial::cuda
