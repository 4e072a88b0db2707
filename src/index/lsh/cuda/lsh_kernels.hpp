#pragma once
// The small kernels of the GPU lsh search (cuda/lsh/lsh_search.cpp).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// keys[r * C + c] = the l1 distance of query row r to base row ids[r * C + c], summed in float
/// in index order from 0 exactly as the k-NN's l1 tile kernel (l1_tile.cuh) sums each pair, then
/// widened; an empty slot (INT64_MAX) gives +inf. Q rows r < rows (stride d), X rows (stride d).
void lsh_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t rows, int64_t C, double* keys,
                 cudaStream_t stream);

/// The dense regime's candidate test, for `rows` queries against all n base rows.
/// bucket_of[t * n + r] is base row r's bucket in table t (numbered within the table);
/// lists[(i * tables + t) * P + p], p < P, are the buckets query i probes in table t, packed at
/// the front and padded with -1. Row r is a candidate of query i when its bucket in some table
/// is on i's list for that table. Either output may be null:
///   scores (rows x n, row stride ld): every non-candidate set to NaN, which select_k skips;
///   counts (rows, zeroed by the caller): counts[i] += query i's candidates, each row once.
void lsh_mark(const int32_t* bucket_of, int64_t n, int64_t tables, const int32_t* lists, int64_t P, int64_t rows,
              float* scores, int64_t ld, int64_t* counts, cudaStream_t stream);

/// ids[e] = INT64_MAX where ids[e] < 0, e < count: select_k's empty slot (-1) becomes the
/// re-score's (rescore_keys gives it +inf).
void lsh_empty_ids(int64_t* ids, int64_t count, cudaStream_t stream);

}  // namespace simkit::detail::cuda
