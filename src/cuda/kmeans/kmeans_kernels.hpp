#pragma once
// The k-means kernels on the device (cuda/kmeans/*.cu), launched by kmeans_engine.cpp.
//
//   candidates   cuBLAS half-precision products (float accumulation) of a tile of points
//                (translated by their mean, scaled by a power of two) against every centroid
//                (likewise scaled), then a warp per point selects its kNearestCandidates
//                smallest approximate keys (core/nearest_bound.hpp); only the tile exists, never
//                the n x k matrix. Half products move half the bytes of TF32 ones, and both
//                kernels are bound by moving them: on 1M x 128, K = 1024, the TF32 products
//                took 2.4 ms and their selection 2.7 ms per assignment (ncu, ~1.5 TB/s each).
//                (A fused WMMA kernel doing both was measured first and was slower: 14.7 ms
//                per iteration against 11.4.)
//   certify      the float64 re-score of the candidates and the certificate; points that fail
//                it are listed for
//   rank_exact   a float64 key against every centroid, ties to the lower id.
//   update       a stable radix sort by label, the chunk sums and the centroids of
//                core/centroid_sums.hpp.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace simkit::detail::cuda {

inline constexpr int kNearestCandidates = 8;

/// The centroid side of a pass (core/nearest_operands.hpp), in device memory.
struct NearestCentroids {
  const float* c = nullptr;   // k x d: the centroids as given (the exact keys read these)
  const __half* v = nullptr;  // k x d: the product's operands, v_j / sv
  const float* a = nullptr;   // k, or null (spherical)
  const float* t = nullptr;   // d: the translation, or null (spherical)
  float b = -2.0f;
  double v_max = 0, a_max = 0;
  double su = 1, sv = 1;  // the powers of two the points' and centroids' rows were divided by
  int64_t k = 0;
};

/// S holds rows x k half products of the scaled rows (stride lds, from dot_tile):
/// cand[i * kNearestCandidates + q] and keys[i * kNearestCandidates + q], the row's
/// kNearestCandidates smallest approximate keys a_j + scale s_ij with their centroids, ascending
/// in (key, id) (past k: id -1, key +inf). scale = b su sv.
void select_candidates(const __half* S, int64_t lds, int64_t rows, int64_t k, const float* a, float scale,
                       int32_t* cand, float* keys, cudaStream_t stream);

/// U = half((X - t) * inv_scale), row by row (rows x d; t has d values, or is null for none).
void scale_rows(const float* X, int64_t rows, int64_t d, const float* t, float inv_scale, __half* U,
                cudaStream_t stream);

/// The certificate for rows [0, n): settled rows get labels[i] and costs[i]; the others are
/// appended to `unsettled` (count at *unsettled_count, which the caller zeroes).
void certify_candidates(const float* X, int64_t n, int64_t d, const NearestCentroids& c, bool spherical,
                        const int32_t* cand, const float* keys, int32_t* labels, double* costs, int32_t* unsettled,
                        int* unsettled_count, cudaStream_t stream);

/// Labels and costs of the rows listed in unsettled[0 .. *unsettled_count), ranked exactly.
void rank_exact(const float* X, int64_t d, const NearestCentroids& c, bool spherical, const int32_t* unsettled,
                const int* unsettled_count, int32_t* labels, double* costs, cudaStream_t stream);

/// Device scratch of update_centroids for n points, k clusters, d dimensions (bytes).
size_t update_scratch_bytes(int64_t n, int64_t k, int64_t d);

/// C_out := centroids of the clusters labels[0..n) makes of X (core/centroid_sums.hpp); empty
/// clusters copy their row of C_in. counts[c] receives each cluster's size, and `totals` (k x d,
/// device) when not null each cluster's float64 sum (0 for an empty one): a multi-GPU k-means
/// adds the shards' sums.
void update_centroids(const float* X, int64_t n, int64_t d, const int32_t* labels, int64_t k, bool spherical,
                      const float* C_in, float* C_out, int32_t* counts, void* scratch, size_t scratch_bytes,
                      cudaStream_t stream, double* totals = nullptr);

/// *out = the float64 sum of x[0..n) (a fixed reduction tree: the same bits every run).
size_t sum_scratch_bytes(int64_t n);
void sum_costs(const double* x, int64_t n, double* out, void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace simkit::detail::cuda
