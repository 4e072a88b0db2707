// k nearest neighbours through the point tree on the GPU (spatial/gpu_tree.hpp): a lane per
// query, in Morton order; each lane first scans the leaves around its own place in the base's
// Morton order (at least k rows, so its bound starts near its final value), then its packet walks
// the tree (packet_walk.cuh) and the lane scans the leaves its bound does not prune. The k best
// (key, row) pairs sit in a sorted list in the lane's local memory.

#include <cmath>

#include "spatial/cuda/walk_call.cuh"
#include "spatial/gpu_tree.hpp"

namespace simkit::detail::spatial::gpu {

namespace {

using cuda::DeviceTree;
using cuda::PacketCounters;

struct KnnWalk {
  DeviceTree t;
  const float* Q = nullptr;  // m x d, rows in input order
  const int* order = nullptr;
  const int64_t* codes = nullptr;
  int m = 0, k = 0, packet = 32;
  bool root = false;
  float* values = nullptr;  // m x k, by input row
  int64_t* ids = nullptr;
  PacketCounters* counters = nullptr;
};

/// The first leaf whose rows reach `code` in the base's order, then grown both ways until the
/// leaves [first, last] hold min(k, n) rows.
__device__ int2 seed_leaves(const DeviceTree& t, int64_t code, int k) {
  int lo = 0, hi = t.n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (t.codes[mid] < code)
      lo = mid + 1;
    else
      hi = mid;
  }
  int first = min(lo / t.leaf_size, t.leaves - 1), last = first;
  const int want = min(k, t.n);
  while (min((last + 1) * t.leaf_size, t.n) - first * t.leaf_size < want) {
    if (first > 0) --first;
    if (last < t.leaves - 1) ++last;
  }
  return make_int2(first, last);
}

template <int D, int KMAX>
__global__ void __launch_bounds__(cuda::kWalkBlock) knn_walk_kernel(KnnWalk a) {
  const int i = int(blockIdx.x) * cuda::kWalkBlock + int(threadIdx.x);  // Morton position
  const bool live = i < a.m;
  const int row = live ? a.order[i] : 0;
  float q[D];
#pragma unroll
  for (int c = 0; c < D; ++c) q[c] = live ? a.Q[int64_t(row) * D + c] : 0.f;
  double keys[KMAX];
  int rows[KMAX];
  int count = 0;
  const int k = a.k;
  double bound = live ? INFINITY : -INFINITY;
  const DeviceTree& t = a.t;
  auto scan = [&](int j) {
    const int last = min((j + 1) * t.leaf_size, t.n);
    for (int p = j * t.leaf_size; p < last; ++p) {
      const double key = cuda::key_of<D>(q, t.rows + int64_t(p) * D);
      const int id = t.ids[p];
      if (count == k && !(key < keys[k - 1] || (key == keys[k - 1] && id < rows[k - 1]))) continue;
      int at = count < k ? count++ : k - 1;
      for (; at > 0 && (key < keys[at - 1] || (key == keys[at - 1] && id < rows[at - 1])); --at)
        keys[at] = keys[at - 1], rows[at] = rows[at - 1];
      keys[at] = key, rows[at] = id;
      if (count == k) bound = keys[k - 1];
    }
  };
  int2 seeded = make_int2(0, -1);
  if (live) {
    seeded = seed_leaves(t, a.codes[i], k);
    for (int j = seeded.x; j <= seeded.y; ++j) scan(j);
  }
  cuda::packet_walk<D>(
      t, q, bound, live, a.packet,
      [&](int j) {
        if (j < seeded.x || j > seeded.y) scan(j);
      },
      a.counters);
  if (!live) return;
  for (int c = 0; c < k; ++c) {
    const bool found = c < count;
    a.values[int64_t(row) * k + c] = found ? float(a.root ? sqrt(keys[c]) : keys[c]) : INFINITY;
    a.ids[int64_t(row) * k + c] = found ? int64_t(rows[c]) : -1;
  }
}

}  // namespace

WalkReport tree_knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                    const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids, int packet) {
  using detail::cuda::Carver;
  const int64_t m = Q.rows;
  const bool values_host = values.where == Memory::host, ids_host = ids.where == Memory::host;
  const size_t extra =
      (values_host ? Carver::round(size_t(m * k) * 4) : 0) + (ids_host ? Carver::round(size_t(m * k) * 8) : 0);
  cuda::WalkCall w(ctx, Q, X, cuda::kLeafSize, extra, "knn");
  KnnWalk a;
  a.t = w.tree(), a.Q = w.queries(), a.order = w.sorted().order, a.codes = w.sorted().codes;
  a.m = int(m), a.k = int(k), a.packet = packet, a.root = plan.root;
  a.values = values_host ? w.carve().take<float>(size_t(m * k)) : values.data;
  a.ids = ids_host ? w.carve().take<int64_t>(size_t(m * k)) : ids.data;
  a.counters = w.counters();
  const cudaStream_t s = w.stream();
  cuda::with_dim(X.cols, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    if (k <= 16)
      knn_walk_kernel<D, 16><<<w.grid(m), cuda::kWalkBlock, 0, s>>>(a);
    else
      knn_walk_kernel<D, kMaxK><<<w.grid(m), cuda::kWalkBlock, 0, s>>>(a);
  });
  detail::cuda::check_launch("knn tree walk");
  w.walked();
  if (values_host)
    cuda::check_cuda(cudaMemcpyAsync(values.data, a.values, size_t(m * k) * 4, cudaMemcpyDeviceToHost, s),
                     "cudaMemcpyAsync");
  if (ids_host)
    cuda::check_cuda(cudaMemcpyAsync(ids.data, a.ids, size_t(m * k) * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  w.call().finish();
  return w.report();
}

}  // namespace simkit::detail::spatial::gpu
