#pragma once
// The two small kernels of the GPU lsh search (cuda/lsh/lsh_search.cpp).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// keys[r * C + c] = the l1 distance of query row r to base row ids[r * C + c], summed in float
/// in index order from 0 exactly as the k-NN's l1 tile kernel (l1_tile.cuh) sums each pair, then
/// widened; an empty slot (INT64_MAX) gives +inf. Q rows r < rows (stride d), X rows (stride d).
void lsh_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t rows, int64_t C, double* keys,
                 cudaStream_t stream);

/// values[e] = NaN where mask[e] == 0, e < count: rows that are not candidates can never be
/// selected (select_k skips NaN).
void lsh_mask(float* values, const uint8_t* mask, int64_t count, cudaStream_t stream);

}  // namespace simkit::detail::cuda
