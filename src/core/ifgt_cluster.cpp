// One Gonzalez step is a pass over the points: update each point's nearest-centre distance with
// the new centre and find the new farthest point. The pass is split statically over threads and
// each thread's farthest candidate is merged in thread order, so the result (lowest index among
// equally far points) does not depend on the thread count.

#include "core/ifgt_cluster.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/parallel.hpp"

namespace simkit::detail {

namespace {
// Below this many coordinates per pass a parallel region costs more than it saves.
constexpr int64_t kParallelWork = 32768;
}  // namespace

std::vector<double> widen_rows(MatrixView<const float> m) {
  std::vector<double> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t k = 0; k < m.cols; ++k) out[static_cast<size_t>(i * m.cols + k)] = m(i, k);
  return out;
}

FarthestPointClustering::FarthestPointClustering(const Context& ctx, const double* x, int64_t n, int64_t d)
    : x_(x),
      n_(n),
      d_(d),
      threads_(cpu_threads(ctx)),
      labels_(static_cast<size_t>(n), -1),
      dist2_(static_cast<size_t>(n), std::numeric_limits<double>::infinity()),
      farthest_dist2_(std::numeric_limits<double>::infinity()) {}

double FarthestPointClustering::radius() const { return std::sqrt(farthest_dist2_); }

void FarthestPointClustering::add_centre() {
  const int64_t centre = farthest_;
  const int32_t label = static_cast<int32_t>(centre_ids_.size());
  centre_ids_.push_back(centre);
  const double* c = x_ + centre * d_;
  const int team = (n_ * d_ >= kParallelWork) ? std::max(1, threads_) : 1;
  std::vector<double> best_d2(static_cast<size_t>(team), -1.0);
  std::vector<int64_t> best_i(static_cast<size_t>(team), 0);
#pragma omp parallel num_threads(team)
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
    const int nt = omp_get_num_threads();
#else
    const int tid = 0;
    const int nt = 1;
#endif
    const int64_t lo = n_ * tid / nt, hi = n_ * (tid + 1) / nt;
    double bd = -1.0;
    int64_t bi = lo;
    for (int64_t i = lo; i < hi; ++i) {
      const double* p = x_ + i * d_;
      double s = 0;
      for (int64_t k = 0; k < d_; ++k) {
        const double t = p[k] - c[k];
        s += t * t;
      }
      double& di = dist2_[static_cast<size_t>(i)];
      // Strictly closer: a point equally far from two centres keeps the earlier one.
      if (s < di) {
        di = s;
        labels_[static_cast<size_t>(i)] = label;
      }
      if (di > bd) {
        bd = di;
        bi = i;
      }
    }
    best_d2[static_cast<size_t>(tid)] = bd;
    best_i[static_cast<size_t>(tid)] = bi;
  }
  farthest_dist2_ = -1.0;
  for (size_t t = 0; t < best_d2.size(); ++t)
    if (best_d2[t] > farthest_dist2_) {
      farthest_dist2_ = best_d2[t];
      farthest_ = best_i[t];
    }
  farthest_dist2_ = std::max(farthest_dist2_, 0.0);
}

}  // namespace simkit::detail
