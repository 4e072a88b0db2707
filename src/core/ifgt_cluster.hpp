#pragma once
// Farthest-point (Gonzalez) k-center clustering for the IFGT.
//
// The first centre is point 0; each further centre is the point farthest from all centres so
// far (ties: lowest index). After k centres the largest distance of any point to its nearest
// centre is the clustering's radius, within a factor 2 of the best possible k-center radius.
// The procedure is incremental: the k-centre clustering is a prefix of the (k + 1)-centre one,
// so the parameter search (ifgt_plan.cpp) grows it one centre at a time over a sample of the
// sources and reads the radius for every k. Everything is deterministic, whatever the thread
// count.

#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

/// The rows of a float matrix as float64, row-major (the IFGT works in float64 throughout).
std::vector<double> widen_rows(MatrixView<const float> m);

class FarthestPointClustering {
 public:
  /// x: n points of d float64 coordinates, row-major; must outlive this object.
  FarthestPointClustering(const Context& ctx, const double* x, int64_t n, int64_t d);

  /// Adds the next centre (the farthest point); requires centres() < n.
  void add_centre();

  int64_t centres() const { return static_cast<int64_t>(centre_ids_.size()); }
  /// Largest distance of a point to its nearest centre (infinity before the first centre).
  double radius() const;
  /// Index of the point that the next add_centre() takes.
  int64_t farthest() const { return farthest_; }
  const std::vector<int64_t>& centre_ids() const { return centre_ids_; }
  /// Per point: the centre (index into centre_ids) it is nearest to, and the squared distance.
  const std::vector<int32_t>& labels() const { return labels_; }
  const std::vector<double>& dist2() const { return dist2_; }

 private:
  const double* x_;
  int64_t n_, d_;
  int threads_;
  std::vector<int64_t> centre_ids_;
  std::vector<int32_t> labels_;
  std::vector<double> dist2_;
  int64_t farthest_ = 0;
  double farthest_dist2_;
};

}  // namespace simkit::detail
