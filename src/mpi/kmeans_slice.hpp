#pragma once
// simkit::mpi::kmeans's view of the points (src/mpi/kmeans.cpp): this rank's slice, its
// engine, and the two interfaces of core/kmeans_train.hpp implemented over the ranks, so that
// the one-process k-means++ draws and Lloyd's loop run unchanged on top of them.

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include <mpi.h>

#include <simkit/matrix.hpp>

#include "core/kmeans_engine.hpp"
#include "core/kmeans_train.hpp"

namespace simkit::mpi_detail {

/// This rank's share of the points, with what every rank knows of the others'.
struct KmeansSlice {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, ranks = 1;
  std::vector<int64_t> layout;  // contiguous_layout's: {first row, rows} per rank
  int64_t n = 0, d = 0;         // all ranks' rows; the columns
  MatrixView<const float> X;    // this rank's rows, from global row `first`
  int64_t first = 0;
  bool spherical = false;
  int threads = 1;
  std::unique_ptr<detail::KmeansEngine> engine;  // over X; null when X has no rows
  std::vector<double> costs;                     // of the last assignment, X.rows values
};

/// Labels this rank's points at C and keeps their costs (errors agreed on every rank).
void assign_slice(KmeansSlice& s, MatrixView<const float> C);

/// The inertia of the last assignment, the CPU engine's sum of the costs (kCostBlock blocks)
/// over all ranks' points in global order; the same on every rank.
double slice_inertia(const KmeansSlice& s);

/// Global row `row` into `out` (d values) on every rank, from the rank that holds it.
void fetch_row(const KmeansSlice& s, int64_t row, float* out);

/// Lloyd's loop over the ranks: the assignment on each rank's engine, the inertia and the
/// centroid sums chained across ranks (mpi/chunked_sum.hpp), the re-seeding from every rank's
/// farthest points.
class SpreadPoints final : public detail::KmeansPoints {
 public:
  explicit SpreadPoints(KmeansSlice& s) : s_(s) {}
  double assign(MatrixView<const float> C) override;
  std::vector<int64_t> update(Matrix<float>& C) override;
  void reseed(const std::vector<int64_t>& empty, Matrix<float>& C) override;

 private:
  KmeansSlice& s_;
};

/// k-means++ over the ranks: the cumulative weights chained across ranks in global point order,
/// each draw resolved by the rank whose range holds it.
class SpreadSeedPoints final : public detail::SeedPoints {
 public:
  explicit SpreadSeedPoints(KmeansSlice& s);
  int64_t rows() const override { return s_.n; }
  void copy_row(int64_t i, float* out) override { fetch_row(s_, i, out); }
  void take(int64_t i) override;
  bool is_taken(int64_t i) const override;
  double weigh(MatrixView<const float> fresh, bool first) override;
  int64_t find(double u) override;
  int64_t first_free() override;

 private:
  KmeansSlice& s_;
  std::vector<char> taken_here_;  // this rank's points
  std::set<int64_t> taken_;       // every rank's
  std::vector<double> cost_, cumulative_;
  std::vector<double> after_;  // per rank: the cumulative weight after its points
};

}  // namespace simkit::mpi_detail
