// Fixed-radius neighbours through the point tree on the GPU (spatial/gpu_tree.hpp), in CSR form:
//
//   count   the packets walk with the radius as every query's bound, each lane counting the rows
//           within it (the counts come back to the host, which sizes the output)
//   fill    the same walk again, each lane writing (key, row) into its query's slots
//   sort    each query's slots by (key, row): two stable segmented sorts (by row, then by key)
//   finish  each query's first min(count, cap) slots as values and ids, by query row
//
// Walking twice costs less than growing per-query buffers, and the two sorts give the tie rule
// (equal keys by the lower row) without a composite key.

#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cmath>
#include <vector>

#include <simkit/device_matrix.hpp>

#include "spatial/cuda/walk_call.cuh"
#include "spatial/gpu_tree.hpp"

namespace simkit::detail::spatial::gpu {

namespace {

using cuda::DeviceTree;
using cuda::PacketCounters;
using detail::cuda::check_cuda;

struct RadiusWalk {
  DeviceTree t;
  const float* Q = nullptr;
  const int* order = nullptr;
  int m = 0, packet = 32;
  double radius = 0, key_bound = 0;
  bool root = false;
  int* counts = nullptr;             // by query row
  const int64_t* offsets = nullptr;  // fill: each query row's first slot
  double* keys = nullptr;
  int* rows = nullptr;
  PacketCounters* counters = nullptr;
};

template <int D, bool FILL>
__global__ void __launch_bounds__(cuda::kWalkBlock) radius_walk_kernel(RadiusWalk a) {
  const int i = int(blockIdx.x) * cuda::kWalkBlock + int(threadIdx.x);
  const bool live = i < a.m;
  const int row = live ? a.order[i] : 0;
  float q[D];
#pragma unroll
  for (int c = 0; c < D; ++c) q[c] = live ? a.Q[int64_t(row) * D + c] : 0.f;
  const double bound = live ? a.key_bound : -INFINITY;
  const DeviceTree& t = a.t;
  int64_t at = FILL && live ? a.offsets[row] : 0;
  int found = 0;
  cuda::packet_walk<D>(
      t, q, bound, live, a.packet,
      [&](int j) {
        const int last = min((j + 1) * t.leaf_size, t.n);
        for (int p = j * t.leaf_size; p < last; ++p) {
          const double key = cuda::key_of<D>(q, t.rows + int64_t(p) * D);
          // The CPU's test: the value (the root of the key for l2) within the radius.
          if (!((a.root ? sqrt(key) : key) <= a.radius)) continue;
          if constexpr (FILL) a.keys[at] = key, a.rows[at] = t.ids[p], ++at;
          ++found;
        }
      },
      FILL ? nullptr : a.counters);
  if (!FILL && live) a.counts[row] = found;
}

/// Query r's first min(count, cap) sorted slots as output values and ids.
__global__ void finish_kernel(int m, const int64_t* __restrict__ offsets, const int64_t* __restrict__ kept,
                              const double* __restrict__ keys, const int* __restrict__ rows, bool root,
                              float* __restrict__ values, int64_t* __restrict__ ids) {
  const int r = blockIdx.x;
  if (r >= m) return;
  const int64_t from = offsets[r], to = kept[r], count = kept[r + 1] - kept[r];
  for (int64_t c = threadIdx.x; c < count; c += blockDim.x) {
    values[to + c] = float(root ? sqrt(keys[from + c]) : keys[from + c]);
    ids[to + c] = rows[from + c];
  }
}

/// Sorts each segment [offsets[r], offsets[r + 1]) of (keys, rows) by (key, row), in place.
void sort_segments(double* keys, int* rows, int64_t total, int m, const int64_t* offsets, double* keys_alt,
                   int* rows_alt, void* temp, size_t temp_bytes, cudaStream_t s) {
  size_t bytes = temp_bytes;
  check_cuda(cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, rows, rows_alt, keys, keys_alt, total, m, offsets,
                                                       offsets + 1, s),
             "DeviceSegmentedSort");
  bytes = temp_bytes;
  check_cuda(cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys_alt, keys, rows_alt, rows, total, m, offsets,
                                                       offsets + 1, s),
             "DeviceSegmentedSort");
}

size_t segment_sort_bytes(int64_t total, int m) {
  size_t a = 0, b = 0;
  check_cuda(
      cub::DeviceSegmentedSort::StableSortPairs(nullptr, a, (int*)nullptr, (int*)nullptr, (double*)nullptr,
                                                (double*)nullptr, total, m, (int64_t*)nullptr, (int64_t*)nullptr + 1),
      "DeviceSegmentedSort");
  check_cuda(
      cub::DeviceSegmentedSort::StableSortPairs(nullptr, b, (double*)nullptr, (double*)nullptr, (int*)nullptr,
                                                (int*)nullptr, total, m, (int64_t*)nullptr, (int64_t*)nullptr + 1),
      "DeviceSegmentedSort");
  return std::max(a, b);
}

template <bool FILL>
void launch_walk(const RadiusWalk& a, int64_t d, int grid, cudaStream_t s) {
  cuda::with_dim(
      d, [&](auto dim) { radius_walk_kernel<decltype(dim)::value, FILL><<<grid, cuda::kWalkBlock, 0, s>>>(a); });
  detail::cuda::check_launch("radius tree walk");
}

}  // namespace

RadiusResult tree_radius(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                         const MetricPlan& plan, int64_t cap, int packet, WalkReport* report) {
  using detail::cuda::Carver;
  const int64_t m = Q.rows;
  // The counts first, in a call of their own: the output's size decides the second's memory.
  std::vector<int> counts(static_cast<size_t>(m));
  RadiusWalk a;
  a.m = int(m), a.packet = packet, a.radius = radius, a.root = plan.root;
  a.key_bound = plan.root ? radius * radius : radius;
  cuda::WalkCall w(ctx, Q, X, cuda::kLeafSize, Carver::round(size_t(m) * 4) + Carver::round(size_t(m + 1) * 8) * 2,
                   "radius_search");
  const cudaStream_t s = w.stream();
  a.t = w.tree(), a.Q = w.queries(), a.order = w.sorted().order, a.counters = w.counters();
  a.counts = w.carve().take<int>(size_t(m));
  launch_walk<false>(a, X.cols, w.grid(m), s);
  check_cuda(cudaMemcpyAsync(counts.data(), a.counts, size_t(m) * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");

  RadiusResult out;
  out.offsets.assign(size_t(m) + 1, 0);
  std::vector<int64_t> offsets(size_t(m) + 1, 0);
  for (int64_t r = 0; r < m; ++r) {
    const int64_t c = counts[size_t(r)];
    offsets[size_t(r) + 1] = offsets[size_t(r)] + c;
    out.offsets[size_t(r) + 1] = out.offsets[size_t(r)] + (cap > 0 ? std::min(c, cap) : c);
    out.capped += cap > 0 && c > cap;
  }
  const int64_t total = offsets.back(), kept = out.offsets.back();
  out.ids.resize(size_t(kept));
  out.values.resize(size_t(kept));
  if (total == 0) {
    w.walked();
    w.call().finish();
    if (report) *report = w.report();
    return out;
  }
  // The slots, their sort buffers and the outputs: sized by the counts, so allocated now (the
  // arena holds the tree, and growing it would drop it).
  const size_t sort_bytes = segment_sort_bytes(total, int(m));
  const size_t need = Carver::round(size_t(m + 1) * 8) * 2 + Carver::round(size_t(total) * 8) * 2 +
                      Carver::round(size_t(total) * 4) * 2 + Carver::round(sort_bytes) +
                      Carver::round(size_t(kept) * 4) + Carver::round(size_t(kept) * 8);
  DeviceMatrix<uint8_t> block(ctx, int64_t(need), 1);
  size_t used = 0;
  auto take = [&](size_t bytes) {
    void* p = block.view().data + used;
    used += Carver::round(bytes);
    return p;
  };
  int64_t* d_offsets = static_cast<int64_t*>(take(size_t(m + 1) * 8));
  int64_t* d_kept = static_cast<int64_t*>(take(size_t(m + 1) * 8));
  a.keys = static_cast<double*>(take(size_t(total) * 8));
  double* keys_alt = static_cast<double*>(take(size_t(total) * 8));
  a.rows = static_cast<int*>(take(size_t(total) * 4));
  int* rows_alt = static_cast<int*>(take(size_t(total) * 4));
  void* temp = take(sort_bytes);
  float* values = static_cast<float*>(take(size_t(kept) * 4));
  int64_t* ids = static_cast<int64_t*>(take(size_t(kept) * 8));
  check_cuda(cudaMemcpyAsync(d_offsets, offsets.data(), size_t(m + 1) * 8, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(d_kept, out.offsets.data(), size_t(m + 1) * 8, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  a.offsets = d_offsets;
  launch_walk<true>(a, X.cols, w.grid(m), s);
  sort_segments(a.keys, a.rows, total, int(m), d_offsets, keys_alt, rows_alt, temp, sort_bytes, s);
  finish_kernel<<<int(m), 32, 0, s>>>(int(m), d_offsets, d_kept, a.keys, a.rows, plan.root, values, ids);
  detail::cuda::check_launch("radius finish");
  w.walked();
  check_cuda(cudaMemcpyAsync(out.values.data(), values, size_t(kept) * 4, cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(out.ids.data(), ids, size_t(kept) * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  w.call().finish();
  if (report) *report = w.report();
  return out;
}

}  // namespace simkit::detail::spatial::gpu
