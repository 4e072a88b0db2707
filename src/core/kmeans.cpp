// k-means (include/simkit/kmeans.hpp): checks, seeding, and Lloyd's loop. The assignment and the
// update are the backend's (core/kmeans_engine.hpp: both backends follow the same rules, so they
// give the same labels and centroids); the seeding's draws run here on the host in float64 from
// the engine's per-point costs, so results do not depend on the thread count.
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
#include "core/sample_rows.hpp"
#include "core/shards.hpp"
#include "core/splitmix.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace {

using detail::KmeansEngine;

using Rng = detail::SplitMix64;

void check_params(MatrixView<const float> X, const KmeansParams& p, int64_t train_rows) {
  SIMKIT_EXPECTS(p.metric == Metric::sqeuclidean || p.metric == Metric::cosine, invalid_argument,
                 "kmeans: the metric must be sqeuclidean or cosine (spherical k-means), got ", to_string(p.metric));
  SIMKIT_EXPECTS(p.k >= 1, invalid_argument, "kmeans: k must be at least 1, got ", p.k);
  SIMKIT_EXPECTS(p.k <= train_rows, invalid_argument, "kmeans: k = ", p.k, " exceeds the ", train_rows,
                 p.sample > 0 && p.sample < X.rows ? " sampled points" : " points");
  SIMKIT_EXPECTS(p.k <= INT32_MAX, invalid_argument, "kmeans: k = ", p.k, " exceeds 2^31 - 1");
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

void copy_row(MatrixView<const float> X, int64_t from, Matrix<float>& C, int64_t to) {
  std::copy_n(X.row(from), X.cols, C.data() + to * X.cols);
}

/// Batched k-means++: rounds of `batch` centres, each drawn with probability proportional to
/// its cost to the nearest centre chosen before the round (k-means++ exactly when batch is 1).
Matrix<float> seed_plus_plus(MatrixView<const float> X, int64_t k, KmeansEngine& engine, Rng& rng) {
  const int64_t n = X.rows, d = X.cols;
  const int64_t batch = (k + 31) / 32;
  Matrix<float> C(k, d);
  std::vector<char> taken(static_cast<size_t>(n), 0);
  const int64_t first = rng.below(n);
  copy_row(X, first, C, 0);
  taken[size_t(first)] = 1;
  std::vector<double> cost(static_cast<size_t>(n), 0.0), fresh_cost(static_cast<size_t>(n));
  int64_t chosen = 1, round_start = 0;
  std::vector<double> cumulative(static_cast<size_t>(n));
  while (chosen < k) {
    // Costs against the centres added since the last round.
    Matrix<float> fresh(chosen - round_start, d);
    std::copy_n(C.data() + round_start * d, fresh.size(), fresh.data());
    engine.assign(fresh.view());
    engine.costs(fresh_cost.data());
    for (int64_t i = 0; i < n; ++i) {
      const double c = std::max(0.0, fresh_cost[size_t(i)]);
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

/// Empty clusters take the points farthest from their centroids (ties: the lower index).
void reseed(MatrixView<const float> X, const std::vector<int64_t>& empty, const KmeansEngine& engine,
            Matrix<float>& C) {
  std::vector<double> cost(static_cast<size_t>(X.rows));
  engine.costs(cost.data());
  std::vector<int64_t> by_cost(cost.size());
  std::iota(by_cost.begin(), by_cost.end(), int64_t{0});
  const size_t take = std::min(empty.size(), by_cost.size());
  std::partial_sort(by_cost.begin(), by_cost.begin() + std::ptrdiff_t(take), by_cost.end(), [&](int64_t a, int64_t b) {
    const double ca = cost[size_t(a)], cb = cost[size_t(b)];
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
  const detail::Backend& backend = detail::backend_for(ctx, {Memory::host});
  const bool spherical = params.metric == Metric::cosine;
  // Several GPUs (Context::gpu_ids): an engine per GPU over a shard of the points.
  const std::vector<Context> shards = detail::gpu_shard_contexts(ctx, {Memory::host});
  const auto make_engine = [&](MatrixView<const float> points) {
    return shards.empty() ? backend.kmeans_engine(ctx, points, spherical)
                          : detail::sharded_kmeans_engine(shards, points, spherical);
  };
  const std::unique_ptr<detail::KmeansEngine> engine = make_engine(T);

  KmeansResult r;
  switch (params.init) {
    case KmeansInit::given:
      r.centroids = Matrix<float>(params.k, X.cols);
      std::copy_n(params.initial.data, r.centroids.size(), r.centroids.data());
      break;
    case KmeansInit::random: r.centroids = draw_sample(T, params.k, rng); break;
    case KmeansInit::kmeans_plus_plus: r.centroids = seed_plus_plus(T, params.k, *engine, rng); break;
  }

  for (int it = 0;; ++it) {
    const double inertia = engine->assign(r.centroids.view());
    r.history.push_back(inertia);
    if (params.on_iteration) params.on_iteration(it, inertia);
    if (ctx.progress) ctx.progress(std::min(1.0, double(it) / double(std::max(1, params.max_iterations))));
    const bool settled = it > 0 && r.history[size_t(it - 1)] - inertia <= params.tolerance * inertia;
    if (it == params.max_iterations || settled) break;
    const std::vector<int64_t> empty = engine->update(r.centroids);
    if (!empty.empty()) reseed(T, empty, *engine, r.centroids);
    r.empty_reseeded += int64_t(empty.size());
    r.iterations = it + 1;
  }

  r.labels = Matrix<int64_t>(X.rows, 1);
  if (sampled) {
    const std::unique_ptr<detail::KmeansEngine> all = make_engine(X);
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
