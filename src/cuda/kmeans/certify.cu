// The float64 half of the k-means assignment (kmeans_kernels.hpp): re-score each point's
// candidates, check the certificate of core/nearest_bound.hpp, rank the rest exactly, and sum
// the costs.
//
// Only candidates whose approximate key is within 2B of the smallest are re-scored: for any
// other, K_j >= A_j - B > A_0 + B >= K_0, so it cannot be the best exact candidate (nor tie
// it). On clustered data that is one or two of the eight, and the pass (1.7 ms for 1M x 128
// with all eight re-scored, mostly the centroid rows read from L2) shrinks with it.
#include <cub/device/device_reduce.cuh>

#include <algorithm>

#include "core/nearest_bound.hpp"
#include "cuda/check.hpp"
#include "cuda/exact_key.cuh"
#include "cuda/kmeans/kmeans_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256, kWarps = kBlock / 32;

template <bool kSpherical>
__global__ void __launch_bounds__(kBlock)
    certify_kernel(const float* __restrict__ X, int64_t n, int64_t d, NearestCentroids c,
                   const int32_t* __restrict__ cand, const float* __restrict__ keys, int32_t* __restrict__ labels,
                   double* __restrict__ costs, int32_t* __restrict__ unsettled, int* __restrict__ unsettled_count) {
  constexpr ExactForm F = kSpherical ? ExactForm::cosine : ExactForm::sqdist;
  const int lane = threadIdx.x % 32;
  const double eps = fp16_product_eps(d);
  for (int64_t i = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; i < n; i += int64_t(gridDim.x) * kWarps) {
    const float* x = X + i * d;
    double uu = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double e = kSpherical ? double(x[t]) : double(x[t]) - double(c.t[t]);
      uu += e * e;
    }
    uu = warp_sum(uu);
    const double un = sqrt(uu);
    const double bound = key_error_bound(eps, kSpherical ? 1.0 : 2.0, un, c.v_max, c.a_max,
                                         fp16_product_floor(d, c.su, c.sv, un, c.v_max));
    const float* approx = keys + i * kNearestCandidates;  // ascending
    const double reach = double(approx[0]) + 2.0 * bound;
    double best = __longlong_as_double(0x7ff0000000000000ll);
    int best_id = -1;
    for (int q = 0; q < kNearestCandidates; ++q) {
      const int j = cand[i * kNearestCandidates + q];
      if (j < 0 || double(approx[q]) > reach) break;  // ascending keys: the rest are out of reach too
      const double key = exact_key<F>(x, c.c + int64_t(j) * d, d, lane);
      if (key < best || (key == best && j < best_id)) best = key, best_id = j;
    }
    const double shifted = kSpherical ? best * un : best - uu;
    if (lane == 0) {
      if (best_id >= 0 &&
          nearest_certified(c.k <= kNearestCandidates, shifted, approx[kNearestCandidates - 1], bound)) {
        labels[i] = best_id;
        costs[i] = kSpherical ? 1.0 + best : best;
      } else {
        unsettled[atomicAdd(unsettled_count, 1)] = int32_t(i);
      }
    }
  }
}

template <bool kSpherical>
__global__ void __launch_bounds__(kBlock)
    rank_exact_kernel(const float* __restrict__ X, int64_t d, NearestCentroids c, const int32_t* __restrict__ unsettled,
                      const int* __restrict__ unsettled_count, int32_t* __restrict__ labels,
                      double* __restrict__ costs) {
  constexpr ExactForm F = kSpherical ? ExactForm::cosine : ExactForm::sqdist;
  __shared__ double warp_key[kWarps];
  __shared__ int warp_id[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int count = *unsettled_count;
  for (int f = blockIdx.x; f < count; f += gridDim.x) {
    const int64_t i = unsettled[f];
    const float* x = X + i * d;
    double best = 0;
    int best_id = -1;
    for (int64_t j = warp; j < c.k; j += kWarps) {  // ascending: `<` keeps the lower id of a tie
      const double key = exact_key<F>(x, c.c + j * d, d, lane);
      if (best_id < 0 || key < best) best = key, best_id = int(j);
    }
    if (lane == 0) warp_key[warp] = best, warp_id[warp] = best_id;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w) {
        const int id = warp_id[w];
        if (id >= 0 && (best_id < 0 || warp_key[w] < best || (warp_key[w] == best && id < best_id)))
          best = warp_key[w], best_id = id;
      }
      labels[i] = best_id;
      costs[i] = kSpherical ? 1.0 + best : best;
    }
    __syncthreads();
  }
}

}  // namespace

void certify_candidates(const float* X, int64_t n, int64_t d, const NearestCentroids& c, bool spherical,
                        const int32_t* cand, const float* keys, int32_t* labels, double* costs, int32_t* unsettled,
                        int* unsettled_count, cudaStream_t stream) {
  if (n <= 0) return;
  const int grid = int(std::min<int64_t>((n + kWarps - 1) / kWarps, 65536));
  if (spherical)
    certify_kernel<true>
        <<<grid, kBlock, 0, stream>>>(X, n, d, c, cand, keys, labels, costs, unsettled, unsettled_count);
  else
    certify_kernel<false>
        <<<grid, kBlock, 0, stream>>>(X, n, d, c, cand, keys, labels, costs, unsettled, unsettled_count);
  check_launch("certify_kernel");
}

void rank_exact(const float* X, int64_t d, const NearestCentroids& c, bool spherical, const int32_t* unsettled,
                const int* unsettled_count, int32_t* labels, double* costs, cudaStream_t stream) {
  constexpr int kGrid = 1024;  // the count is known on the device only; idle blocks exit at once
  if (spherical)
    rank_exact_kernel<true><<<kGrid, kBlock, 0, stream>>>(X, d, c, unsettled, unsettled_count, labels, costs);
  else
    rank_exact_kernel<false><<<kGrid, kBlock, 0, stream>>>(X, d, c, unsettled, unsettled_count, labels, costs);
  check_launch("rank_exact_kernel");
}

size_t sum_scratch_bytes(int64_t n) {
  size_t bytes = 0;
  check_cuda(
      cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const double*>(nullptr), static_cast<double*>(nullptr), n),
      "cub::DeviceReduce::Sum");
  return bytes;
}

void sum_costs(const double* x, int64_t n, double* out, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  check_cuda(cub::DeviceReduce::Sum(scratch, scratch_bytes, x, out, n, stream), "cub::DeviceReduce::Sum");
}

}  // namespace simkit::detail::cuda
