#pragma once
// The centroid update rule both backends follow, so that the same labels give the same
// centroids, bit for bit, on the CPU and the GPU and for any thread count.
//
// The points are taken in label order, and within a cluster in point order (a stable sort by
// label). A cluster's points are cut into chunks of kSumChunk, starting from its first point;
// each chunk is summed in float64 from 0, point after point, and the cluster's chunk sums are
// added in order from 0. Only additions are involved (no fused multiply-add can change a bit),
// and the chunks are the unit of parallel work: a thousand-point cluster is eight independent
// sums, a million-point one eight thousand, so one large cluster does not serialise the update.
// The centroid is then the sum over the count, or, spherical, the sum over its norm (squares
// accumulated with fma in coordinate order); a cluster whose sum is zero gets a zero centroid.
//
// The host pieces below are the rule's arithmetic, shared by the one-process update
// (update_centroids_host) and the one over MPI ranks (src/mpi/kmeans.cpp), which continues a
// chunk that straddles two ranks where the rank before left it.

#include <cmath>
#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/hd.hpp"

namespace simkit::detail {

inline constexpr int64_t kSumChunk = 128;

/// Chunks of a cluster of `count` points.
SIMKIT_HD int64_t sum_chunks(int64_t count) { return (count + kSumChunk - 1) / kSumChunk; }

/// Squared norm of a float64 sum, fused multiply-adds in coordinate order.
SIMKIT_HD double sum_sq_norm(const double* sum, int64_t d) {
  double sq = 0;
  for (int64_t j = 0; j < d; ++j) sq = fma(sum[j], sum[j], sq);
  return sq;
}

/// One centroid coordinate from its cluster's float64 sum: divided by the count, or, spherical,
/// by the sum's norm (from sum_sq_norm; 0 gives 0).
SIMKIT_HD float centroid_coordinate(double sum, int64_t count, bool spherical, double sq_norm) {
  if (!spherical) return float(sum / double(count));
  return sq_norm > 0 ? float(sum / sqrt(sq_norm)) : 0.0f;
}

/// A stable counting sort by label: cluster c's points are order[start[c]] ..
/// order[start[c + 1] - 1], in point order.
struct LabelOrder {
  std::vector<int64_t> start;  // k + 1 values
  std::vector<int64_t> order;  // n values
};
LabelOrder sort_by_label(const int32_t* labels, int64_t n, int64_t k);

/// Continues the float64 sum `s` (d values) with the points order[lo], ..., order[hi - 1] of X,
/// one after the other. A chunk's sum is this from s = 0.
void add_points(MatrixView<const float> X, const int64_t* order, int64_t lo, int64_t hi, double* s);

/// Positions [lo, hi) of `order` whose points make one chunk (or, over ranks, a run of one).
struct ChunkSpan {
  int64_t lo = 0, hi = 0;
};
/// Each span's points summed from 0 (add_points), into row g of `out` (spans.size() x d), over
/// `threads` OpenMP threads.
void chunk_sums_host(MatrixView<const float> X, const int64_t* order, const std::vector<ChunkSpan>& spans, double* out,
                     int threads);

/// total += chunk, coordinate by coordinate: how a cluster's chunk sums are added, in order, to
/// a total that starts at 0.
void add_chunk(double* total, const double* chunk, int64_t d);

/// Row `out` (d values) of the centroids from its cluster's total of `count` > 0 points.
void centroid_row(const double* total, int64_t count, bool spherical, int64_t d, float* out);

/// Each cluster's float64 sum by the rule above (k x d, zero for an empty cluster) and its size.
struct ClusterSums {
  std::vector<double> sums;
  std::vector<int64_t> counts;
};

/// The sums on the host, over `threads` OpenMP threads, of the clusters `labels` (n values in
/// [0, k)) makes of X.
void cluster_sums_host(MatrixView<const float> X, const int32_t* labels, int64_t k, ClusterSums& out, int threads);

/// C := the centroids of `sums` (C is k x d). Returns the empty clusters, ascending; their rows
/// of C are kept.
std::vector<int64_t> centroids_from_sums(const ClusterSums& sums, bool spherical, Matrix<float>& C);

/// The rule on the host (the CPU backend, and the GPU backend when the points stream from host
/// memory): C := the centroids of the clusters `labels` (n values in [0, k)) makes of X, over
/// `threads` OpenMP threads. Returns the empty clusters, ascending; their rows of C are kept.
std::vector<int64_t> update_centroids_host(MatrixView<const float> X, const int32_t* labels, bool spherical,
                                           Matrix<float>& C, int threads);

}  // namespace simkit::detail
