#pragma once
// The backend half of k-means (core/kmeans.cpp keeps the loop, the seeding and the checks): the
// training points held where the backend computes, the nearest-centroid assignment and the
// centroid update. Both backends follow the same two rules, so the same inputs give the same
// labels and, bit for bit, the same centroids on either:
//
//   assignment  core/nearest_bound.hpp: candidates from a fast float product, each re-scored
//               in float64; a point whose best exact key beats every other centroid's
//               approximate key by more than the product's error bound is settled, any other
//               is ranked exactly against every centroid. The label is the float64 argmin,
//               ties to the lower centroid id.
//   update      core/centroid_sums.hpp: points in label order (point order within a cluster),
//               summed in float64 in fixed chunks, the chunks summed in order.
//   inertia     the CPU engine sums the points' costs in blocks of kCostBlock points from the
//               first, each block from 0 in point order, the block sums in order from 0 (so
//               MPI ranks can reproduce it: src/mpi/kmeans.cpp); the GPU engine's, with the
//               points resident, is a device reduction of its own order.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/centroid_sums.hpp"

namespace simkit::detail {

inline constexpr int64_t kCostBlock = 256;

struct AssignStats {
  int64_t rows = 0;             // points assigned, over every assign() so far
  int64_t exact_fallbacks = 0;  // of them, those ranked exactly against every centroid
};

class KmeansEngine {
 public:
  virtual ~KmeansEngine() = default;

  /// Labels every training point with its nearest row of C (k x d, host, finite) and returns
  /// the inertia: the float64 sum of the points' costs (squared distance, or 1 - cosine).
  virtual double assign(MatrixView<const float> C) = 0;
  /// C := the centroids of the last assignment's clusters (means; unit means when spherical).
  /// Returns the clusters left empty, ascending; their rows of C are left as they were.
  virtual std::vector<int64_t> update(Matrix<float>& C) = 0;

  /// The float64 sums and sizes of the last assignment's clusters by the update's rule (k of
  /// them): a k-means split over several GPUs adds the shards' sums (core/kmeans_shards.cpp).
  virtual void cluster_sums(int64_t k, ClusterSums& out) = 0;

  /// The last assignment, n values each.
  virtual void labels(int64_t* out) const = 0;
  virtual void costs(double* out) const = 0;
  virtual AssignStats stats() const = 0;
};

}  // namespace simkit::detail
