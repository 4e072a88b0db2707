#pragma once
// Float64 references and random inputs for the tests. Deliberately the plainest possible
// code: one loop per definition in metric.hpp, no tiling, no expansion tricks.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::test {

inline double reference_metric(const float* q, const float* x, int64_t d, Metric m) {
  double acc = 0, qq = 0, xx = 0;
  switch (m) {
    case Metric::l2:
    case Metric::sqeuclidean:
      for (int64_t i = 0; i < d; ++i) acc += (double(q[i]) - x[i]) * (double(q[i]) - x[i]);
      return m == Metric::l2 ? std::sqrt(acc) : acc;
    case Metric::l1:
      for (int64_t i = 0; i < d; ++i) acc += std::abs(double(q[i]) - x[i]);
      return acc;
    case Metric::dot:
      for (int64_t i = 0; i < d; ++i) acc += double(q[i]) * x[i];
      return acc;
    case Metric::cosine:
    case Metric::pearson: {
      double mq = 0, mx = 0;
      if (m == Metric::pearson) {
        for (int64_t i = 0; i < d; ++i) mq += q[i], mx += x[i];
        mq /= d, mx /= d;
      }
      for (int64_t i = 0; i < d; ++i) {
        const double a = q[i] - mq, b = x[i] - mx;
        acc += a * b, qq += a * a, xx += b * b;
      }
      // Zero-norm rows (constant rows for pearson) are defined to have similarity 0.
      if (qq == 0 || xx == 0) return 0.0;
      return acc / (std::sqrt(qq) * std::sqrt(xx));
    }
  }
  return NAN;
}

inline std::vector<double> reference_pairwise(const Matrix<float>& Q, const Matrix<float>& X, Metric m) {
  std::vector<double> out(static_cast<size_t>(Q.rows() * X.rows()));
  for (int64_t i = 0; i < Q.rows(); ++i)
    for (int64_t j = 0; j < X.rows(); ++j)
      out[static_cast<size_t>(i * X.rows() + j)] = reference_metric(&Q(i, 0), &X(j, 0), Q.cols(), m);
  return out;
}

struct ReferenceKnn {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> ids;
};

/// Best k per query in float64, best first, ties by the lower id.
inline ReferenceKnn reference_knn(const Matrix<float>& Q, const Matrix<float>& X, int64_t k, Metric m) {
  ReferenceKnn r;
  const bool larger = larger_is_better(m);
  std::vector<double> v(static_cast<size_t>(X.rows()));
  std::vector<int64_t> order(static_cast<size_t>(X.rows()));
  for (int64_t i = 0; i < Q.rows(); ++i) {
    for (int64_t j = 0; j < X.rows(); ++j) v[size_t(j)] = reference_metric(&Q(i, 0), &X(j, 0), Q.cols(), m);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return larger ? v[size_t(a)] > v[size_t(b)] : v[size_t(a)] < v[size_t(b)];
    });
    order.resize(size_t(k));
    std::vector<double> vals;
    for (int64_t id : order) vals.push_back(v[size_t(id)]);
    r.values.push_back(vals);
    r.ids.push_back(order);
    order.resize(size_t(X.rows()));
  }
  return r;
}

enum class Distribution { uniform, gaussian };

/// rows x d points uniform in the unit cube [0, 1)^d (the Gauss transform tests' domain).
inline Matrix<float> uniform_points(int64_t rows, int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Matrix<float> m(rows, d);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

/// Fresh random rows; uniform in [-1, 1) or standard normal.
inline Matrix<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed,
                                   Distribution dist = Distribution::uniform) {
  Matrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::normal_distribution<float> g(0.f, 1.f);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = dist == Distribution::uniform ? u(rng) : g(rng);
  return m;
}

/// Rows scaled to unit Euclidean norm (zero rows left alone): unit-scale data for dot.
inline void normalize_rows(Matrix<float>& m) {
  for (int64_t i = 0; i < m.rows(); ++i) {
    double s = 0;
    for (int64_t j = 0; j < m.cols(); ++j) s += double(m(i, j)) * m(i, j);
    if (s == 0) continue;
    const double inv = 1.0 / std::sqrt(s);
    for (int64_t j = 0; j < m.cols(); ++j) m(i, j) = static_cast<float>(m(i, j) * inv);
  }
}

/// Random rows at the scale the metric's tolerance is stated for: dot's absolute bound holds for
/// unit-scale values, and raw dot products grow with d, so dot gets unit rows.
inline Matrix<float> inputs_for(Metric metric, int64_t rows, int64_t d, uint64_t seed,
                                Distribution dist = Distribution::uniform) {
  Matrix<float> m = random_matrix(rows, d, seed, dist);
  if (metric == Metric::dot) normalize_rows(m);
  return m;
}

/// Whole numbers in [0, levels): products and sums stay exact in float32 for small d, so
/// distances tie exactly wherever they tie mathematically (the digits data behave so).
inline Matrix<float> integer_matrix(int64_t rows, int64_t cols, int levels, uint64_t seed) {
  Matrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, levels - 1);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(u(rng));
  return m;
}

/// The accuracy promised against the float64 reference: 1e-5 absolute for the similarities
/// (on unit-scale data), 1e-5 relative for the distances.
inline double tolerance(Metric m, double reference) { return larger_is_better(m) ? 1e-5 : 1e-5 * std::abs(reference); }

/// A seed that differs per run unless SIMKIT_TEST_SEED is set (printed by the tests on
/// failure so a failing case can be replayed).
inline uint64_t test_seed() {
  if (const char* s = std::getenv("SIMKIT_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  static const uint64_t seed = std::random_device{}();
  return seed;
}

}  // namespace simkit::test
