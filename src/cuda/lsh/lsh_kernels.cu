#include "cuda/lsh/lsh_kernels.hpp"

#include <cmath>

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void l1_keys_kernel(const float* __restrict__ Q, const float* __restrict__ X, int64_t d,
                               const int64_t* __restrict__ ids, int64_t rows, int64_t C, double* __restrict__ keys) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * C) return;
  const int64_t id = ids[e];
  if (id == INT64_MAX) {
    keys[e] = INFINITY;
    return;
  }
  const float* q = Q + (e / C) * d;
  const float* x = X + id * d;
  float acc = 0.f;
  for (int64_t t = 0; t < d; ++t) acc += fabsf(q[t] - x[t]);  // the tile kernel's order and rounding
  keys[e] = double(acc);
}

__global__ void mask_kernel(float* __restrict__ values, const uint8_t* __restrict__ mask, int64_t count) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count && !mask[e]) values[e] = NAN;
}

unsigned blocks_for(int64_t count) { return unsigned((count + kThreads - 1) / kThreads); }

}  // namespace

void lsh_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t rows, int64_t C, double* keys,
                 cudaStream_t stream) {
  if (rows * C == 0) return;
  l1_keys_kernel<<<blocks_for(rows * C), kThreads, 0, stream>>>(Q, X, d, ids, rows, C, keys);
  check_launch("lsh_l1_keys");
}

void lsh_mask(float* values, const uint8_t* mask, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  mask_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, mask, count);
  check_launch("lsh_mask");
}

}  // namespace simkit::detail::cuda
