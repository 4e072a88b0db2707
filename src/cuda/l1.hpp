#pragma once
// l1 distances between blocks of rows (kernel in l1_tile.cuh).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// out[i * ldo + j] = sum_t |Q[i * ldq + t] - X[j * ldx + t]|, i < m, j < n, t < d.
void l1_tile(const float* Q, int64_t ldq, const float* X, int64_t ldx, float* out, int64_t ldo, int64_t m, int64_t n,
             int64_t d, cudaStream_t stream);

}  // namespace simkit::detail::cuda
