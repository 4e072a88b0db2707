// k-means (include/simkit/kmeans.hpp): checks, seeding, and Lloyd's loop. The assignment and the
// update are the backend's (core/kmeans_engine.hpp: both backends follow the same rules, so they
// give the same labels and centroids); the seeding's draws run here on the host in float64 from
// the engine's per-point costs, so results do not depend on the thread count. The seeding and
// the loop are written against core/kmeans_train.hpp's interfaces, which MPI ranks implement too.
#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/kmeans_shards.hpp"
#include "core/kmeans_train.hpp"
#include "core/sample_rows.hpp"
#include "core/splitmix.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace detail {

namespace {

/// One process's points for the k-means++ draws: the engine's costs, flags and the cumulative
/// weights in arrays of n.
class HostSeedPoints final : public SeedPoints {
 public:
  HostSeedPoints(MatrixView<const float> T, KmeansEngine& engine)
      : T_(T),
        engine_(engine),
        taken_(size_t(T.rows), 0),
        cost_(size_t(T.rows), 0.0),
        fresh_(size_t(T.rows)),
        cumulative_(size_t(T.rows)) {}
  int64_t rows() const override { return T_.rows; }
  void copy_row(int64_t i, float* out) override { std::copy_n(T_.row(i), T_.cols, out); }
  void take(int64_t i) override { taken_[size_t(i)] = 1; }
  bool is_taken(int64_t i) const override { return taken_[size_t(i)] != 0; }
  double weigh(MatrixView<const float> fresh, bool first) override {
    engine_.assign(fresh);
    engine_.costs(fresh_.data());
    for (size_t i = 0; i < cost_.size(); ++i) {
      const double c = std::max(0.0, fresh_[i]);
      cost_[i] = first ? c : std::min(cost_[i], c);
    }
    double total = 0;
    for (size_t i = 0; i < cost_.size(); ++i) cumulative_[i] = total += taken_[i] ? 0.0 : cost_[i];
    return total;
  }
  int64_t find(double u) override {
    return std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
  }
  int64_t first_free() override { return std::find(taken_.begin(), taken_.end(), char{0}) - taken_.begin(); }

 private:
  MatrixView<const float> T_;
  KmeansEngine& engine_;
  std::vector<char> taken_;
  std::vector<double> cost_, fresh_, cumulative_;
};

/// One process's points for Lloyd's loop: the engine's, and the farthest points of its costs.
class HostPoints final : public KmeansPoints {
 public:
  HostPoints(MatrixView<const float> T, KmeansEngine& engine) : T_(T), engine_(engine) {}
  double assign(MatrixView<const float> C) override { return engine_.assign(C); }
  std::vector<int64_t> update(Matrix<float>& C) override { return engine_.update(C); }
  void reseed(const std::vector<int64_t>& empty, Matrix<float>& C) override {
    std::vector<double> cost(static_cast<size_t>(T_.rows));
    engine_.costs(cost.data());
    std::vector<int64_t> by_cost(cost.size());
    std::iota(by_cost.begin(), by_cost.end(), int64_t{0});
    const size_t take = std::min(empty.size(), by_cost.size());
    std::partial_sort(by_cost.begin(), by_cost.begin() + std::ptrdiff_t(take), by_cost.end(),
                      [&](int64_t a, int64_t b) {
                        const double ca = cost[size_t(a)], cb = cost[size_t(b)];
                        return ca != cb ? ca > cb : a < b;
                      });
    for (size_t e = 0; e < take; ++e) std::copy_n(T_.row(by_cost[e]), T_.cols, C.data() + empty[e] * T_.cols);
  }

 private:
  MatrixView<const float> T_;
  KmeansEngine& engine_;
};

}  // namespace

void check_kmeans_params(int64_t n, int64_t d, const KmeansParams& p, int64_t train_rows) {
  SIMKIT_EXPECTS(p.metric == Metric::sqeuclidean || p.metric == Metric::cosine, invalid_argument,
                 "kmeans: the metric must be sqeuclidean or cosine (spherical k-means), got ", to_string(p.metric));
  SIMKIT_EXPECTS(p.k >= 1, invalid_argument, "kmeans: k must be at least 1, got ", p.k);
  SIMKIT_EXPECTS(p.k <= train_rows, invalid_argument, "kmeans: k = ", p.k, " exceeds the ", train_rows,
                 p.sample > 0 && p.sample < n ? " sampled points" : " points");
  SIMKIT_EXPECTS(p.k <= INT32_MAX, invalid_argument, "kmeans: k = ", p.k, " exceeds 2^31 - 1");
  SIMKIT_EXPECTS(p.max_iterations >= 0, invalid_argument, "kmeans: max_iterations must be >= 0, got ",
                 p.max_iterations);
  SIMKIT_EXPECTS(std::isfinite(p.tolerance) && p.tolerance >= 0, invalid_argument,
                 "kmeans: tolerance must be a finite number >= 0, got ", p.tolerance);
  SIMKIT_EXPECTS(p.sample >= 0, invalid_argument, "kmeans: sample must be >= 0, got ", p.sample);
  SIMKIT_EXPECTS(p.init == KmeansInit::kmeans_plus_plus || p.init == KmeansInit::random || p.init == KmeansInit::given,
                 invalid_argument, "kmeans: unknown init");
  if (p.init == KmeansInit::given) {
    SIMKIT_EXPECTS(p.initial.data != nullptr && p.initial.rows == p.k && p.initial.cols == d, invalid_argument,
                   "kmeans: the initial centroids must be ", p.k, " x ", d, ", got ", p.initial.rows, " x ",
                   p.initial.cols);
    SIMKIT_EXPECTS(p.initial.where == Memory::host, invalid_argument,
                   "kmeans: the initial centroids must be in host memory");
  }
}

Matrix<float> seed_plus_plus(SeedPoints& points, int64_t k, int64_t d, SplitMix64& rng) {
  const int64_t n = points.rows();
  const int64_t batch = (k + 31) / 32;
  Matrix<float> C(k, d);
  const int64_t first = rng.below(n);
  points.copy_row(first, C.data());
  points.take(first);
  int64_t chosen = 1, round_start = 0;
  while (chosen < k) {
    // Costs against the centres added since the last round.
    Matrix<float> fresh(chosen - round_start, d);
    std::copy_n(C.data() + round_start * d, fresh.size(), fresh.data());
    const double total = points.weigh(fresh.view(), round_start == 0);
    round_start = chosen;
    const int64_t want = std::min(batch, k - chosen);
    for (int64_t b = 0; b < want; ++b) {
      int64_t pick = -1;
      if (total > 0) {
        // Redraw on a point already taken this round (its weight is still in the cumulative).
        for (int attempt = 0; attempt < 64 && pick < 0; ++attempt) {
          const int64_t i = points.find(rng.uniform() * total);
          if (i < n && !points.is_taken(i)) pick = i;
        }
      }
      if (pick < 0) pick = points.first_free();  // every remaining point sits on a centre (or bad luck)
      points.take(pick);
      points.copy_row(pick, C.data() + chosen++ * d);
    }
  }
  return C;
}

void lloyd(const Context& ctx, const KmeansParams& p, KmeansPoints& points, KmeansResult& r) {
  for (int it = 0;; ++it) {
    const double inertia = points.assign(r.centroids.view());
    r.history.push_back(inertia);
    if (p.on_iteration) p.on_iteration(it, inertia);
    if (ctx.progress) ctx.progress(std::min(1.0, double(it) / double(std::max(1, p.max_iterations))));
    const bool settled = it > 0 && r.history[size_t(it - 1)] - inertia <= p.tolerance * inertia;
    if (it == p.max_iterations || settled) break;
    const std::vector<int64_t> empty = points.update(r.centroids);
    if (!empty.empty()) points.reseed(empty, r.centroids);
    r.empty_reseeded += int64_t(empty.size());
    r.iterations = it + 1;
  }
}

Matrix<float> given_centroids(const KmeansParams& p, int64_t d) {
  Matrix<float> C(p.k, d);
  std::copy_n(p.initial.data, C.size(), C.data());
  return C;
}

std::unique_ptr<KmeansEngine> train_kmeans(const Context& ctx, const Backend& backend, MatrixView<const float> T,
                                           const KmeansParams& p, SplitMix64& rng, KmeansResult& r) {
  std::unique_ptr<KmeansEngine> engine = make_kmeans_engine(ctx, backend, T, p.metric == Metric::cosine);
  switch (p.init) {
    case KmeansInit::given: r.centroids = given_centroids(p, T.cols); break;
    case KmeansInit::random: r.centroids = draw_sample(T, p.k, rng); break;
    case KmeansInit::kmeans_plus_plus: {
      HostSeedPoints points(T, *engine);
      r.centroids = seed_plus_plus(points, p.k, T.cols, rng);
      break;
    }
  }
  HostPoints points(T, *engine);
  lloyd(ctx, p, points, r);
  return engine;
}

}  // namespace detail

KmeansResult kmeans(const Context& ctx, MatrixView<const float> X, const KmeansParams& params) {
  detail::check_points(X, "data");
  SIMKIT_EXPECTS(X.where == Memory::host, invalid_argument, "kmeans: the data must be in host memory");
  const bool sampled = params.sample > 0 && params.sample < X.rows;
  detail::check_kmeans_params(X.rows, X.cols, params, sampled ? params.sample : X.rows);
  detail::check_finite(ctx, X, "data");
  if (params.init == KmeansInit::given) detail::check_finite(ctx, params.initial, "initial centroids");

  detail::SplitMix64 rng(params.seed);
  Matrix<float> sample;
  MatrixView<const float> T = X;  // the training points
  if (sampled) {
    sample = detail::draw_sample(X, params.sample, rng);
    T = sample.view();
  }
  const detail::Backend& backend = detail::backend_for(ctx, {Memory::host});
  KmeansResult r;
  const std::unique_ptr<detail::KmeansEngine> engine = detail::train_kmeans(ctx, backend, T, params, rng, r);

  r.labels = Matrix<int64_t>(X.rows, 1);
  if (sampled) {
    const std::unique_ptr<detail::KmeansEngine> all =
        detail::make_kmeans_engine(ctx, backend, X, params.metric == Metric::cosine);
    r.inertia = all->assign(r.centroids.view());
    all->labels(r.labels.data());
    r.points_ranked_exactly = all->stats().exact_fallbacks;
  } else {
    r.inertia = r.history.back();
    engine->labels(r.labels.data());
  }
  r.points_ranked_exactly += engine->stats().exact_fallbacks;
  r.assignments = engine->stats().rows + (sampled ? X.rows : 0);
  if (ctx.progress) ctx.progress(1.0);
  return r;
}

}  // namespace simkit
