#pragma once
// k-means clustering (Lloyd's iteration) on the CPU or the GPU.
//
// Each iteration assigns every point to its nearest centroid and moves each centroid to the mean
// of its points. The assignment is exact: a fast product (sgemm on the CPU, half-precision tensor
// cores on the GPU, tile by tile: never an n x k matrix) proposes candidates, they are re-scored
// in float64, and a point is settled only when the product's error bound proves no other
// centroid can be nearer; the few that are not are ranked exactly against every centroid. Labels
// are the float64 nearest centroid, ties to the lower id. The means are float64 sums in a fixed
// order (label order, point order within a cluster, fixed chunks), so the same inputs give the
// same centroids, bit for bit, on either backend and for any thread count. `cosine` is spherical
// k-means: centroids are normalised means and the assignment maximises cosine similarity.
//
// On the GPU the points are uploaded once and stay resident when they fit the memory budget
// (Context::gpu_memory_budget); otherwise each assignment streams them from host memory in tiles
// and the update runs on the host, by the same rule. A Context naming several GPUs
// (Context::gpu_ids) gives each a contiguous shard of the points; the shards' float64 cluster sums
// are added in GPU order, so results are reproducible for a given list of GPUs and equal one GPU's
// up to float64 rounding of those sums (a centroid coordinate can then differ in its last bit).
//
//   simkit::KmeansParams p;
//   p.k = 1024;
//   p.metric = simkit::Metric::cosine;
//   simkit::KmeansResult r = simkit::kmeans(ctx, X.view(), p);
//   // r.centroids (k x d), r.labels (n x 1), r.inertia, r.iterations

#include <cstdint>
#include <functional>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

enum class KmeansInit {
  /// k-means++ (D^2 sampling), batched: rounds of ceil(k / 32) centres each drawn with
  /// probability proportional to the squared distance to the centres chosen so far (the
  /// exact sequential k-means++ when k <= 32).
  kmeans_plus_plus,
  /// k distinct points drawn uniformly.
  random,
  /// KmeansParams::initial, k x d.
  given,
};

struct KmeansParams {
  int64_t k = 0;
  /// sqeuclidean (inertia: sum of squared distances) or cosine (spherical; inertia: sum of
  /// 1 - cosine similarity).
  Metric metric = Metric::sqeuclidean;
  KmeansInit init = KmeansInit::kmeans_plus_plus;
  MatrixView<const float> initial;  // k x d host centroids, for KmeansInit::given
  /// Lloyd updates at most; 0 only assigns the points to the initial centroids.
  int max_iterations = 25;
  /// Stop once an iteration lowers the inertia by less than this fraction of it.
  double tolerance = 1e-4;
  uint64_t seed = 0;
  /// Train on this many points drawn with the seed (0: all), like FAISS's
  /// max_points_per_centroid; the final labels still cover every point.
  int64_t sample = 0;
  /// Called after each assignment with its index (0: the initial centroids) and the training
  /// inertia; may be empty. simkit kmeans draws its progress bar from it.
  std::function<void(int iteration, double inertia)> on_iteration;
};

struct KmeansResult {
  Matrix<float> centroids;            // k x d
  Matrix<int64_t> labels;             // n x 1: each point's nearest centroid at `centroids`
  double inertia = 0;                 // of every point at `centroids`
  int iterations = 0;                 // Lloyd updates made
  std::vector<double> history;        // the training inertia at each assignment, first to last
  int64_t empty_reseeded = 0;         // clusters that emptied and were re-seeded (farthest points)
  int64_t assignments = 0;            // point assignments made, seeding included
  int64_t points_ranked_exactly = 0;  // of them, those the fast product could not settle
};

/// Clusters the n x d host matrix X. Throws Error(invalid_argument) when k < 1, k > n (or >
/// the sample), X is empty or holds NaN/Inf, the metric is not sqeuclidean or cosine, or the
/// given centroids are missing, misshapen or non-finite, or k exceeds 2^31 - 1.
KmeansResult kmeans(const Context& ctx, MatrixView<const float> X, const KmeansParams& params);

struct KcenterResult {
  Matrix<float> centers;   // k x d: rows of X, in the order chosen
  Matrix<int64_t> ids;     // k x 1: which rows
  Matrix<int64_t> labels;  // n x 1: each point's nearest center (Euclidean; ties to the lower index)
  double radius = 0;       // max over points of the Euclidean distance to the nearest center
};

/// k-center by farthest-point traversal (Gonzalez): the first center is the row the seed
/// draws, each next one the point farthest from the centers so far (ties: the lower row), which
/// gives a radius at most twice the optimal one. Each step is one pass of the backend's exact
/// assignment against the newest center; the labels and the radius come from a last exact
/// assignment against all k. Same errors as kmeans for X and k.
KcenterResult kcenter(const Context& ctx, MatrixView<const float> X, int64_t k, uint64_t seed = 0);

}  // namespace simkit
