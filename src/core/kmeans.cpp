// k-means (include/simkit/kmeans.hpp): checks, seeding, and Lloyd's loop. The assignment is the
// backend's exact k-NN with k = 1 against the centroids (so both backends assign alike, and the
// GPU never holds an n x k matrix); the update and the seeding's sampling run on the host in
// float64, in a fixed order, so results do not depend on the thread count. On the GPU the
// points are uploaded once and stay resident across iterations when they fit.
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace {

/// splitmix64: a small generator whose sequence is the same on every platform (the standard
/// library's distributions are not), so a seed means the same clustering everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }

 private:
  uint64_t s_;
};

/// The k-NN of every point against the centroids, on the chosen backend, with the points
/// resident where the backend wants them.
class Assigner {
 public:
  Assigner(const Context& ctx, MatrixView<const float> X, Metric metric)
      : ctx_(ctx), plan_(detail::plan_metric(metric)), X_(X) {
    ctx_.progress = nullptr;  // kmeans reports its own progress
    backend_ = &detail::backend_for(ctx_, {Memory::host});
    if (backend_->device() == Device::gpu) {
      try {
        resident_.emplace(ctx_, X);
        X_ = resident_->view();
      } catch (const Error& e) {
        if (e.code() != ErrorCode::out_of_memory) throw;  // too large: streamed from the host per call
      }
    }
  }

  /// ids[i] = the nearest of the rows of C to point i, values[i] its metric value.
  void operator()(const Matrix<float>& C, std::vector<int64_t>& ids, std::vector<float>& values) const {
    const int64_t n = X_.rows;
    ids.resize(size_t(n));
    values.resize(size_t(n));
    backend_->knn(ctx_, detail::KnnArgs{X_, C.view(), 1, plan_, MatrixView<float>(values.data(), n, 1),
                                        MatrixView<int64_t>(ids.data(), n, 1)});
  }

  /// How far a point is from its centroid, from the metric value: squared distance, or
  /// 1 - cosine similarity.
  double cost(float value) const { return plan_.negate ? 1.0 - double(value) : double(value); }

 private:
  Context ctx_;
  detail::MetricPlan plan_;
  MatrixView<const float> X_;
  const detail::Backend* backend_ = nullptr;
  std::optional<DeviceMatrix<float>> resident_;
};

double total_cost(const Assigner& assign, const std::vector<float>& values) {
  double s = 0;
  for (float v : values) s += assign.cost(v);
  return s;
}

void check_params(MatrixView<const float> X, const KmeansParams& p, int64_t train_rows) {
  SIMKIT_EXPECTS(p.metric == Metric::sqeuclidean || p.metric == Metric::cosine, invalid_argument,
                 "kmeans: the metric must be sqeuclidean or cosine (spherical k-means), got ", to_string(p.metric));
  SIMKIT_EXPECTS(p.k >= 1, invalid_argument, "kmeans: k must be at least 1, got ", p.k);
  SIMKIT_EXPECTS(p.k <= train_rows, invalid_argument, "kmeans: k = ", p.k, " exceeds the ", train_rows,
                 p.sample > 0 && p.sample < X.rows ? " sampled points" : " points");
  SIMKIT_EXPECTS(p.max_iterations >= 0, invalid_argument, "kmeans: max_iterations must be >= 0, got ",
                 p.max_iterations);
  SIMKIT_EXPECTS(std::isfinite(p.tolerance) && p.tolerance >= 0, invalid_argument,
                 "kmeans: tolerance must be a finite number >= 0, got ", p.tolerance);
  SIMKIT_EXPECTS(p.sample >= 0, invalid_argument, "kmeans: sample must be >= 0, got ", p.sample);
  SIMKIT_EXPECTS(p.init == KmeansInit::kmeans_plus_plus || p.init == KmeansInit::random || p.init == KmeansInit::given,
                 invalid_argument, "kmeans: unknown init");
  if (p.init == KmeansInit::given) {
    SIMKIT_EXPECTS(p.initial.data != nullptr && p.initial.rows == p.k && p.initial.cols == X.cols, invalid_argument,
                   "kmeans: the initial centroids must be ", p.k, " x ", X.cols, ", got ", p.initial.rows, " x ",
                   p.initial.cols);
    SIMKIT_EXPECTS(p.initial.where == Memory::host, invalid_argument,
                   "kmeans: the initial centroids must be in host memory");
  }
}

/// The training points: all of X, or `sample` rows drawn without replacement, in row order.
Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, Rng& rng) {
  const int64_t n = X.rows, d = X.cols;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = 0; i < sample; ++i) std::swap(order[size_t(i)], order[size_t(i + rng.below(n - i))]);
  std::sort(order.begin(), order.begin() + sample);
  Matrix<float> out(sample, d);
  for (int64_t i = 0; i < sample; ++i) std::copy_n(X.row(order[size_t(i)]), d, out.data() + i * d);
  return out;
}

void copy_row(MatrixView<const float> X, int64_t from, Matrix<float>& C, int64_t to) {
  std::copy_n(X.row(from), X.cols, C.data() + to * X.cols);
}

/// Batched k-means++: rounds of `batch` centres, each drawn with probability proportional to
/// its cost to the nearest centre chosen before the round (k-means++ exactly when batch is 1).
Matrix<float> seed_plus_plus(MatrixView<const float> X, int64_t k, const Assigner& assign, Rng& rng) {
  const int64_t n = X.rows, d = X.cols;
  const int64_t batch = (k + 31) / 32;
  Matrix<float> C(k, d);
  std::vector<char> taken(static_cast<size_t>(n), 0);
  const int64_t first = rng.below(n);
  copy_row(X, first, C, 0);
  taken[size_t(first)] = 1;
  std::vector<double> cost(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> ids;
  std::vector<float> values;
  int64_t chosen = 1, round_start = 0;
  std::vector<double> cumulative(static_cast<size_t>(n));
  while (chosen < k) {
    // Costs against the centres added since the last round.
    Matrix<float> fresh(chosen - round_start, d);
    std::copy_n(C.data() + round_start * d, fresh.size(), fresh.data());
    assign(fresh, ids, values);
    for (int64_t i = 0; i < n; ++i) {
      const double c = std::max(0.0, assign.cost(values[size_t(i)]));
      cost[size_t(i)] = round_start == 0 ? c : std::min(cost[size_t(i)], c);
    }
    round_start = chosen;
    double total = 0;
    for (int64_t i = 0; i < n; ++i) cumulative[size_t(i)] = total += taken[size_t(i)] ? 0.0 : cost[size_t(i)];
    const int64_t want = std::min(batch, k - chosen);
    for (int64_t b = 0; b < want; ++b) {
      int64_t pick = -1;
      if (total > 0) {
        // Redraw on a point already taken this round (its weight is still in `cumulative`).
        for (int attempt = 0; attempt < 64 && pick < 0; ++attempt) {
          const double u = rng.uniform() * total;
          const int64_t i = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
          if (i < n && !taken[size_t(i)]) pick = i;
        }
      }
      if (pick < 0)  // every remaining point sits on a centre (or bad luck): the first free one
        pick = std::find(taken.begin(), taken.end(), char{0}) - taken.begin();
      taken[size_t(pick)] = 1;
      copy_row(X, pick, C, chosen++);
    }
  }
  return C;
}

/// Centroids as the float64 means of their points (normalised for spherical k-means), summed
/// cluster by cluster in point order. Returns the clusters left empty.
std::vector<int64_t> update(MatrixView<const float> X, const std::vector<int64_t>& labels, bool spherical,
                            Matrix<float>& C) {
  const int64_t n = X.rows, d = X.cols, k = C.rows();
  std::vector<int64_t> start(static_cast<size_t>(k + 1), 0), order(static_cast<size_t>(n));
  for (int64_t l : labels) ++start[size_t(l + 1)];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> at(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[size_t(at[size_t(labels[size_t(i)])]++)] = i;
  std::vector<int64_t> empty;
  for (int64_t c = 0; c < k; ++c)
    if (start[size_t(c)] == start[size_t(c + 1)]) empty.push_back(c);
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t c = 0; c < k; ++c) {
    const int64_t lo = start[size_t(c)], hi = start[size_t(c + 1)];
    if (lo == hi) continue;
    std::vector<double> sum(static_cast<size_t>(d), 0.0);
    for (int64_t p = lo; p < hi; ++p) {
      const float* x = X.row(order[size_t(p)]);
      for (int64_t j = 0; j < d; ++j) sum[size_t(j)] += x[j];
    }
    double scale = 1.0 / double(hi - lo);
    if (spherical) {
      double sq = 0;
      for (double v : sum) sq += v * v;
      scale = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
    }
    for (int64_t j = 0; j < d; ++j) C(c, j) = float(sum[size_t(j)] * scale);
  }
  return empty;
}

/// Empty clusters take the points farthest from their centroids (ties: the lower index).
void reseed(MatrixView<const float> X, const std::vector<int64_t>& empty, const Assigner& assign,
            const std::vector<float>& values, Matrix<float>& C) {
  std::vector<int64_t> by_cost(values.size());
  std::iota(by_cost.begin(), by_cost.end(), int64_t{0});
  const size_t take = std::min(empty.size(), by_cost.size());
  std::partial_sort(by_cost.begin(), by_cost.begin() + std::ptrdiff_t(take), by_cost.end(), [&](int64_t a, int64_t b) {
    const double ca = assign.cost(values[size_t(a)]), cb = assign.cost(values[size_t(b)]);
    return ca != cb ? ca > cb : a < b;
  });
  for (size_t e = 0; e < take; ++e) copy_row(X, by_cost[e], C, empty[e]);
}

}  // namespace

KmeansResult kmeans(const Context& ctx, MatrixView<const float> X, const KmeansParams& params) {
  detail::check_points(X, "data");
  SIMKIT_EXPECTS(X.where == Memory::host, invalid_argument, "kmeans: the data must be in host memory");
  const bool sampled = params.sample > 0 && params.sample < X.rows;
  check_params(X, params, sampled ? params.sample : X.rows);
  detail::check_finite(ctx, X, "data");
  if (params.init == KmeansInit::given) detail::check_finite(ctx, params.initial, "initial centroids");

  Rng rng(params.seed);
  Matrix<float> sample;
  MatrixView<const float> T = X;  // the training points
  if (sampled) {
    sample = draw_sample(X, params.sample, rng);
    T = sample.view();
  }
  const Assigner assign(ctx, T, params.metric);
  const bool spherical = params.metric == Metric::cosine;

  KmeansResult r;
  switch (params.init) {
    case KmeansInit::given:
      r.centroids = Matrix<float>(params.k, X.cols);
      std::copy_n(params.initial.data, r.centroids.size(), r.centroids.data());
      break;
    case KmeansInit::random: r.centroids = draw_sample(T, params.k, rng); break;
    case KmeansInit::kmeans_plus_plus: r.centroids = seed_plus_plus(T, params.k, assign, rng); break;
  }

  std::vector<int64_t> ids;
  std::vector<float> values;
  for (int it = 0;; ++it) {
    assign(r.centroids, ids, values);
    const double inertia = total_cost(assign, values);
    r.history.push_back(inertia);
    if (ctx.progress) ctx.progress(std::min(1.0, double(it) / double(std::max(1, params.max_iterations))));
    const bool settled = it > 0 && r.history[size_t(it - 1)] - inertia <= params.tolerance * inertia;
    if (it == params.max_iterations || settled) break;
    const std::vector<int64_t> empty = update(T, ids, spherical, r.centroids);
    if (!empty.empty()) reseed(T, empty, assign, values, r.centroids);
    r.empty_reseeded += int64_t(empty.size());
    r.iterations = it + 1;
  }

  if (sampled) {
    const Assigner all(ctx, X, params.metric);
    all(r.centroids, ids, values);
    r.inertia = total_cost(all, values);
  } else {
    r.inertia = r.history.back();
  }
  r.labels = Matrix<int64_t>(X.rows, 1);
  std::copy(ids.begin(), ids.end(), r.labels.data());
  if (ctx.progress) ctx.progress(1.0);
  return r;
}

}  // namespace simkit
