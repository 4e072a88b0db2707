// The centroid update of core/centroid_sums.hpp on the device: a stable radix sort of
// (label, point) pairs, the clusters' boundaries, their chunk counts and offsets (an exclusive
// scan), one block per chunk summing its points column by column in float64, and one block per
// cluster adding its chunks in order and writing the centroid. No atomics decide a value, so
// the result is the host rule's, bit for bit.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "core/centroid_sums.hpp"
#include "cuda/check.hpp"
#include "cuda/kmeans/kmeans_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kColumns = 128;  // threads of a chunk or cluster block, one column each (strided)

__global__ void iota_kernel(int32_t* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int32_t(i);
}

/// start[c] = the first sorted position of cluster c (start[k] = n), from the sorted labels.
__global__ void boundaries_kernel(const int32_t* sorted, int64_t n, int64_t k, int64_t* start) {
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t here = sorted[p], before = p > 0 ? sorted[p - 1] : -1;
    for (int64_t c = before + 1; c <= here; ++c) start[c] = p;
    if (p == n - 1)
      for (int64_t c = here + 1; c <= k; ++c) start[c] = n;
  }
}

/// counts[c] and chunks[c] (chunks[k] = 0, so the exclusive scan's last entry is the total).
__global__ void chunk_counts_kernel(const int64_t* start, int64_t k, int32_t* counts, int64_t* chunks) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c <= k; c += int64_t(gridDim.x) * blockDim.x) {
    if (c == k) {
      chunks[c] = 0;
      continue;
    }
    const int64_t count = start[c + 1] - start[c];
    counts[c] = int32_t(count);
    chunks[c] = sum_chunks(count);
  }
}

__global__ void __launch_bounds__(kColumns)
    chunk_sums_kernel(const float* __restrict__ X, int64_t d, const int32_t* __restrict__ order,
                      const int64_t* __restrict__ start, const int64_t* __restrict__ chunk_start, int64_t k,
                      double* __restrict__ partial) {
  const int64_t chunks = chunk_start[k];
  for (int64_t g = blockIdx.x; g < chunks; g += gridDim.x) {
    // The cluster whose chunks hold g: the last c with chunk_start[c] <= g.
    int64_t lo = 0, hi = k;  // chunk_start[lo] <= g < chunk_start[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (chunk_start[mid] <= g)
        lo = mid;
      else
        hi = mid;
    }
    const int64_t first = start[lo] + (g - chunk_start[lo]) * kSumChunk;
    const int64_t last = min(first + kSumChunk, start[lo + 1]);
    for (int64_t j = threadIdx.x; j < d; j += kColumns) {
      double s = 0;
      for (int64_t p = first; p < last; ++p) s += double(X[int64_t(order[p]) * d + j]);
      partial[g * d + j] = s;
    }
  }
}

__global__ void __launch_bounds__(kColumns)
    centroids_kernel(int64_t d, int64_t k, const int64_t* __restrict__ start, const int64_t* __restrict__ chunk_start,
                     const double* __restrict__ partial, bool spherical, const float* __restrict__ C_in,
                     double* __restrict__ total, float* __restrict__ C_out) {
  __shared__ double sq;
  for (int64_t c = blockIdx.x; c < k; c += gridDim.x) {
    const int64_t count = start[c + 1] - start[c];
    double* tc = total + c * d;
    if (count == 0) {
      for (int64_t j = threadIdx.x; j < d; j += kColumns) {
        C_out[c * d + j] = C_in[c * d + j];
        tc[j] = 0;
      }
      continue;
    }
    for (int64_t j = threadIdx.x; j < d; j += kColumns) {
      double t = 0;
      for (int64_t g = chunk_start[c]; g < chunk_start[c + 1]; ++g) t += partial[g * d + j];
      tc[j] = t;
    }
    if (spherical) {
      __syncthreads();
      if (threadIdx.x == 0) sq = sum_sq_norm(tc, d);
      __syncthreads();
    }
    for (int64_t j = threadIdx.x; j < d; j += kColumns)
      C_out[c * d + j] = centroid_coordinate(tc[j], count, spherical, spherical ? sq : 0.0);
    __syncthreads();  // sq is rewritten by the next cluster
  }
}

int grid_for(int64_t items, int block) {
  return int(std::max<int64_t>(1, std::min<int64_t>((items + block - 1) / block, 65536)));
}

/// The scratch layout, carved in this order from the caller's buffer.
struct UpdateScratch {
  int32_t *sorted = nullptr, *order = nullptr, *iota = nullptr;
  int64_t *start = nullptr, *chunks = nullptr, *chunk_start = nullptr;
  double *partial = nullptr, *total = nullptr;
  void* cub = nullptr;
  size_t cub_bytes = 0;
  size_t bytes = 0;

  UpdateScratch(char* base, int64_t n, int64_t k, int64_t d) {
    auto take = [&](size_t b) {
      char* p = base ? base + bytes : nullptr;
      bytes += (b + 255) / 256 * 256;
      return p;
    };
    sorted = reinterpret_cast<int32_t*>(take(size_t(n) * 4));
    order = reinterpret_cast<int32_t*>(take(size_t(n) * 4));
    iota = reinterpret_cast<int32_t*>(take(size_t(n) * 4));
    start = reinterpret_cast<int64_t*>(take(size_t(k + 1) * 8));
    chunks = reinterpret_cast<int64_t*>(take(size_t(k + 1) * 8));
    chunk_start = reinterpret_cast<int64_t*>(take(size_t(k + 1) * 8));
    partial = reinterpret_cast<double*>(take(size_t(n / kSumChunk + k + 1) * size_t(d) * 8));
    total = reinterpret_cast<double*>(take(size_t(k) * size_t(d) * 8));
    size_t sort_bytes = 0, scan_bytes = 0;
    check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), n),
               "cub::DeviceRadixSort::SortPairs");
    check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const int64_t*>(nullptr),
                                             static_cast<int64_t*>(nullptr), k + 1),
               "cub::DeviceScan::ExclusiveSum");
    cub_bytes = std::max(sort_bytes, scan_bytes);
    cub = take(cub_bytes);
  }
};

}  // namespace

size_t update_scratch_bytes(int64_t n, int64_t k, int64_t d) { return UpdateScratch(nullptr, n, k, d).bytes; }

void update_centroids(const float* X, int64_t n, int64_t d, const int32_t* labels, int64_t k, bool spherical,
                      const float* C_in, float* C_out, int32_t* counts, void* scratch, size_t scratch_bytes,
                      cudaStream_t stream, double* totals) {
  UpdateScratch s(static_cast<char*>(scratch), n, k, d);
  if (s.bytes > scratch_bytes) throw Error(ErrorCode::device, "update_centroids: scratch too small");
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < k) ++bits;
  iota_kernel<<<grid_for(n, kBlock), kBlock, 0, stream>>>(s.iota, n);
  check_launch("iota_kernel");
  // Radix sort is stable: a cluster's points stay in point order.
  check_cuda(cub::DeviceRadixSort::SortPairs(s.cub, s.cub_bytes, labels, s.sorted, s.iota, s.order, n, 0, bits, stream),
             "cub::DeviceRadixSort::SortPairs");
  boundaries_kernel<<<grid_for(n, kBlock), kBlock, 0, stream>>>(s.sorted, n, k, s.start);
  check_launch("boundaries_kernel");
  chunk_counts_kernel<<<grid_for(k + 1, kBlock), kBlock, 0, stream>>>(s.start, k, counts, s.chunks);
  check_launch("chunk_counts_kernel");
  check_cuda(cub::DeviceScan::ExclusiveSum(s.cub, s.cub_bytes, s.chunks, s.chunk_start, k + 1, stream),
             "cub::DeviceScan::ExclusiveSum");
  const int64_t max_chunks = n / kSumChunk + k;  // sum over clusters of ceil(count / chunk)
  chunk_sums_kernel<<<int(std::min<int64_t>(max_chunks, 1 << 20)), kColumns, 0, stream>>>(X, d, s.order, s.start,
                                                                                          s.chunk_start, k, s.partial);
  check_launch("chunk_sums_kernel");
  centroids_kernel<<<int(std::min<int64_t>(k, 1 << 20)), kColumns, 0, stream>>>(d, k, s.start, s.chunk_start, s.partial,
                                                                                spherical, C_in, s.total, C_out);
  check_launch("centroids_kernel");
  if (totals != nullptr)
    check_cuda(
        cudaMemcpyAsync(totals, s.total, size_t(k) * size_t(d) * sizeof(double), cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync");
}

}  // namespace simkit::detail::cuda
