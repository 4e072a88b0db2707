#pragma once
// The parts of k-means (core/kmeans.cpp) that do not care where the training points live: the
// parameter checks, the k-means++ draws and Lloyd's loop. One process runs them over its engine
// (core/kmeans_engine.hpp); MPI ranks (src/mpi/kmeans.cpp) run the very same code over points
// spread across ranks, so the draws, the stopping test and the order of the updates cannot drift
// apart between the two.

#include <cstdint>
#include <memory>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/matrix.hpp>

#include "core/backend.hpp"
#include "core/kmeans_engine.hpp"
#include "core/splitmix.hpp"

namespace simkit::detail {

/// kmeans' checks of `p` for n points of d dimensions, `train_rows` of them trained on; throws
/// Error(invalid_argument).
void check_kmeans_params(int64_t n, int64_t d, const KmeansParams& p, int64_t train_rows);

/// The points k-means++ draws from, by global index in [0, rows()).
class SeedPoints {
 public:
  virtual ~SeedPoints() = default;
  virtual int64_t rows() const = 0;
  /// Point i's d coordinates into `out`.
  virtual void copy_row(int64_t i, float* out) = 0;
  virtual void take(int64_t i) = 0;
  virtual bool is_taken(int64_t i) const = 0;
  /// Each point's cost to the nearest row of `fresh` (clamped at 0; the smaller of that and its
  /// cost so far unless `first`), then the weights of the points not taken accumulated in point
  /// order, `cumulative[i] = total += cost`. Returns the total.
  virtual double weigh(MatrixView<const float> fresh, bool first) = 0;
  /// The first point whose cumulative weight exceeds u (std::upper_bound), or rows().
  virtual int64_t find(double u) = 0;
  /// The lowest point not taken.
  virtual int64_t first_free() = 0;
};

/// Batched k-means++: rounds of ceil(k / 32) centres, each drawn with probability proportional
/// to its cost to the nearest centre chosen before the round. Returns the k x d centres.
Matrix<float> seed_plus_plus(SeedPoints& points, int64_t k, int64_t d, SplitMix64& rng);

/// The training points as Lloyd's loop sees them.
class KmeansPoints {
 public:
  virtual ~KmeansPoints() = default;
  /// Labels every point with its nearest row of C; returns the inertia, summed in the engine's
  /// order.
  virtual double assign(MatrixView<const float> C) = 0;
  /// C := the centroids of the last assignment (core/centroid_sums.hpp); returns the empty
  /// clusters, ascending.
  virtual std::vector<int64_t> update(Matrix<float>& C) = 0;
  /// Rows `empty` of C := the points farthest from their centroids at the last assignment, by
  /// (cost descending, index ascending).
  virtual void reseed(const std::vector<int64_t>& empty, Matrix<float>& C) = 0;
};

/// Lloyd's loop from r.centroids: assignments and updates until max_iterations or the
/// tolerance; fills r.history, r.iterations and r.empty_reseeded.
void lloyd(const Context& ctx, const KmeansParams& p, KmeansPoints& points, KmeansResult& r);

/// p.initial copied (KmeansInit::given).
Matrix<float> given_centroids(const KmeansParams& p, int64_t d);

/// One process's training on the host rows T from the state of `rng`: the seeding, then
/// Lloyd's loop (as above). Returns the engine, which holds T's last assignment.
std::unique_ptr<KmeansEngine> train_kmeans(const Context& ctx, const Backend& backend, MatrixView<const float> T,
                                           const KmeansParams& p, SplitMix64& rng, KmeansResult& r);

}  // namespace simkit::detail
