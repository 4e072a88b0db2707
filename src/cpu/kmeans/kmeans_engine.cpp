// k-means on the CPU (core/kmeans_engine.hpp): the assignment in blocks of kRows points, each
// block one sgemm per kTile centroids on its thread (cpu/parallel.hpp), a running list of the
// kCandidates smallest approximate keys per point, then the float64 re-score and the
// certificate of core/nearest_bound.hpp. The update is core/centroid_sums.hpp's host rule.
//
// Why so few candidates: sgemm's error bound (fp32_product_eps) is ~1e-5 of ||u|| ||v|| for
// d = 128, far below the gaps between a point's nearest centroids, so two candidates settle all
// but true near-ties, and those are ranked exactly. FAISS's k-means, the peer, keeps one (its
// float argmin) and re-scores none.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/centroid_sums.hpp"
#include "core/exact_metric.hpp"
#include "core/kmeans_engine.hpp"
#include "core/nearest_bound.hpp"
#include "core/nearest_operands.hpp"
#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/dot_family.hpp"

namespace simkit::detail::cpu {

namespace {

// Points per task: a 256 x 1024 product block is 1 MiB (cpu/block.hpp). A task's costs are the
// inertia's block (core/kmeans_engine.hpp), so the task size is that rule's.
constexpr int64_t kRows = kCostBlock;
constexpr int64_t kTile = 1024;  // centroids per sgemm
constexpr int kCandidates = 2;

/// The kCandidates smallest (key, id) seen, sorted; ties keep the first seen (the lower id).
struct Shortlist {
  float key[kCandidates];
  int32_t id[kCandidates];
  void clear() {
    for (int q = 0; q < kCandidates; ++q) key[q] = std::numeric_limits<float>::infinity(), id[q] = -1;
  }
  void offer(float k, int32_t i) {
    for (int q = 0; q < kCandidates; ++q)
      if (k < key[q]) std::swap(k, key[q]), std::swap(i, id[q]);
  }
};

class CpuKmeansEngine final : public KmeansEngine {
 public:
  CpuKmeansEngine(const Context& ctx, MatrixView<const float> X, bool spherical)
      : ctx_(ctx), X_(X), spherical_(spherical), threads_(cpu_threads(ctx)) {
    ctx_.progress = nullptr;
    labels_.resize(size_t(X.rows));
    costs_.resize(size_t(X.rows));
    if (spherical) {
      x_sq_.resize(size_t(X.rows));
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (int64_t i = 0; i < X.rows; ++i) x_sq_[size_t(i)] = exact_dot_vector(X.row(i), X.row(i), X.cols);
    }
  }

  double assign(MatrixView<const float> C) override {
    const NearestOperands ops = nearest_operands(C, spherical_);
    if (spherical_) {
      c_sq_.resize(size_t(C.rows));
      for (int64_t j = 0; j < C.rows; ++j) c_sq_[size_t(j)] = exact_dot_vector(C.row(j), C.row(j), C.cols);
    }
    const int64_t n = X_.rows, tasks = (n + kRows - 1) / kRows;
    std::vector<double> block_cost(size_t(tasks), 0.0);
    std::vector<int64_t> block_fallbacks(size_t(tasks), 0);
    std::vector<Scratch> scratch(static_cast<size_t>(threads_));
    BlasSerialScope blas;
    translate_bad_alloc("kmeans", [&] {
      run_tasks(ctx_, threads_, tasks, [&](int64_t task, int tid) {
        assign_block(ops, C, task, scratch[size_t(tid)], block_cost[size_t(task)], block_fallbacks[size_t(task)]);
      });
    });
    double inertia = 0;
    for (int64_t t = 0; t < tasks; ++t) {
      inertia += block_cost[size_t(t)];
      stats_.exact_fallbacks += block_fallbacks[size_t(t)];
    }
    stats_.rows += n;
    return inertia;
  }

  std::vector<int64_t> update(Matrix<float>& C) override {
    std::vector<int64_t> empty;
    translate_bad_alloc("kmeans", [&] { empty = update_centroids_host(X_, labels_.data(), spherical_, C, threads_); });
    return empty;
  }

  void cluster_sums(int64_t k, ClusterSums& out) override {
    translate_bad_alloc("kmeans", [&] { cluster_sums_host(X_, labels_.data(), k, out, threads_); });
  }

  void labels(int64_t* out) const override { std::copy(labels_.begin(), labels_.end(), out); }
  void costs(double* out) const override { std::copy(costs_.begin(), costs_.end(), out); }
  AssignStats stats() const override { return stats_; }

 private:
  /// The float64 key of point i (at x) and centroid j: the squared distance, or minus the
  /// cosine (0 when either norm is 0, clamped to [-1, 1], as core/exact_metric.hpp) from the
  /// cached squared norms.
  double exact(const float* x, int64_t i, MatrixView<const float> C, int64_t j) const {
    if (!spherical_) return exact_sqdist(x, C.row(j), C.cols);
    const double xx = x_sq_[size_t(i)], cc = c_sq_[size_t(j)];
    if (!(xx > 0 && cc > 0)) return 0.0;
    const double c = exact_dot_vector(x, C.row(j), C.cols) / (std::sqrt(xx) * std::sqrt(cc));
    return -(c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c));
  }

  /// Per-thread buffers, reused from block to block.
  struct Scratch {
    std::vector<float> u, s;  // the block's translated points; one product tile
    std::vector<double> u_norm;
    std::vector<Shortlist> lists;
  };

  void assign_block(const NearestOperands& ops, MatrixView<const float> C, int64_t task, Scratch& sc, double& cost,
                    int64_t& fallbacks) {
    std::vector<float>&u = sc.u, &s = sc.s;
    std::vector<double>& u_norm = sc.u_norm;
    std::vector<Shortlist>& lists = sc.lists;
    const int64_t d = X_.cols, k = C.rows, r0 = task * kRows, rows = std::min(kRows, X_.rows - r0);
    u.resize(size_t(rows * d));
    s.resize(size_t(rows * std::min(k, kTile)));
    u_norm.resize(size_t(rows));
    lists.resize(size_t(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = X_.row(r0 + r);
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) {
        const double e = spherical_ ? double(x[i]) : double(x[i]) - double(ops.t[size_t(i)]);
        u[size_t(r * d + i)] = float(e);
        sq += e * e;
      }
      u_norm[size_t(r)] = std::sqrt(sq);
      lists[size_t(r)].clear();
    }
    for (int64_t j0 = 0; j0 < k; j0 += kTile) {
      const int64_t tk = std::min(kTile, k - j0);
      gemm_nt(u.data(), rows, ops.v.data() + j0 * d, tk, d, s.data(), tk);
      for (int64_t r = 0; r < rows; ++r) {
        const float* srow = s.data() + r * tk;
        Shortlist& list = lists[size_t(r)];
        if (spherical_) {
          for (int64_t c = 0; c < tk; ++c) {
            const float key = -srow[c];
            if (key < list.key[kCandidates - 1]) list.offer(key, int32_t(j0 + c));
          }
        } else {
          const float* a = ops.a.data() + j0;
          for (int64_t c = 0; c < tk; ++c) {
            const float key = a[c] - 2.0f * srow[c];
            if (key < list.key[kCandidates - 1]) list.offer(key, int32_t(j0 + c));
          }
        }
      }
    }
    const double eps = fp32_product_eps(d), b = spherical_ ? 1.0 : 2.0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r0 + r;
      const float* x = X_.row(i);
      const Shortlist& list = lists[size_t(r)];
      double best = std::numeric_limits<double>::infinity();
      int64_t best_id = -1;
      for (int q = 0; q < kCandidates; ++q) {
        if (list.id[q] < 0) continue;
        const double key = exact(x, i, C, list.id[q]);
        if (key < best || (key == best && list.id[q] < best_id)) best = key, best_id = list.id[q];
      }
      const double un = u_norm[size_t(r)];
      const double shifted = spherical_ ? best * un : best - un * un;
      const double bound = key_error_bound(eps, b, un, ops.v_max, ops.a_max);
      if (!nearest_certified(k <= kCandidates, shifted, list.key[kCandidates - 1], bound)) {
        ++fallbacks;
        best = std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < k; ++j) {
          const double key = exact(x, i, C, j);
          if (key < best) best = key, best_id = j;
        }
      }
      labels_[size_t(i)] = int32_t(best_id);
      costs_[size_t(i)] = spherical_ ? 1.0 + best : best;
      cost += costs_[size_t(i)];
    }
  }

  Context ctx_;
  MatrixView<const float> X_;
  bool spherical_;
  int threads_;
  std::vector<int32_t> labels_;
  std::vector<double> costs_;
  std::vector<double> x_sq_, c_sq_;  // spherical: squared norms of the points and the centroids
  AssignStats stats_;
};

}  // namespace

std::unique_ptr<KmeansEngine> CpuBackend::kmeans_engine(const Context& ctx, MatrixView<const float> X,
                                                        bool spherical) const {
  return std::make_unique<CpuKmeansEngine>(ctx, X, spherical);
}

}  // namespace simkit::detail::cpu
