// The CPU Gauss transform (direct method and the public dispatch) against a plain float64
// reference: random data in several dimensions, small and large bandwidths, n != m, positive,
// mixed-sign and default weights, a sum whose error must not grow with n, a 1-d KDE, and every
// refused input.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

/// sum_i q_i exp(-|y - x_i|^2 / h^2) for every target: double terms, long double sums.
std::vector<double> reference_gauss(const Matrix<float>& X, const std::vector<double>& q, const Matrix<float>& Y,
                                    double h) {
  std::vector<double> out(static_cast<size_t>(Y.rows()));
  for (int64_t j = 0; j < Y.rows(); ++j) {
    long double acc = 0;
    for (int64_t i = 0; i < X.rows(); ++i) {
      double s = 0;
      for (int64_t c = 0; c < X.cols(); ++c) {
        const double t = double(Y(j, c)) - double(X(i, c));
        s += t * t;
      }
      const double w = q.empty() ? 1.0 : q[static_cast<size_t>(i)];
      acc += static_cast<long double>(w) * std::exp(-s / (h * h));
    }
    out[static_cast<size_t>(j)] = static_cast<double>(acc);
  }
  return out;
}

enum class Weights { positive, mixed, none };

std::vector<double> make_weights(int64_t n, Weights kind, uint32_t seed) {
  if (kind == Weights::none) return {};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pos(0.5, 1.5), mixed(-1.0, 1.0);
  std::vector<double> q(static_cast<size_t>(n));
  for (double& w : q) w = kind == Weights::positive ? pos(rng) : mixed(rng);
  return q;
}

GaussOptions direct_only() {
  GaussOptions o;
  o.method = GaussMethod::direct;
  return o;
}

double max_relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t j = 0; j < want.size(); ++j)
    worst = std::max(worst, std::abs(got[j] - want[j]) / std::max(std::abs(want[j]), 1e-300));
  return worst;
}

double max_abs_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t j = 0; j < want.size(); ++j) worst = std::max(worst, std::abs(got[j] - want[j]));
  return worst;
}

struct Case {
  int64_t d;
  double h;
};

TEST(GaussCpu, DirectMatchesFloat64Reference) {
  const Context ctx = cpu_context();
  const int64_t n = 1000, m = 333;
  double worst_rel = 0, worst_mixed = 0;
  for (const Case c : {Case{1, 0.05}, Case{1, 2.0}, Case{2, 0.05}, Case{2, 2.0}, Case{3, 0.05}, Case{3, 2.0},
                       Case{8, 0.05}, Case{8, 2.0}}) {
    const auto X = uniform_points(n, c.d, 11 + static_cast<uint32_t>(c.d));
    const auto Y = uniform_points(m, c.d, 101 + static_cast<uint32_t>(c.d));
    for (Weights kind : {Weights::positive, Weights::mixed, Weights::none}) {
      const auto q = make_weights(n, kind, 7);
      const auto want = reference_gauss(X, q, Y, c.h);
      const auto got = gauss_transform(ctx, X.view(), q, Y.view(), c.h, direct_only());
      ASSERT_EQ(got.size(), want.size());
      const std::string label = "d=" + std::to_string(c.d) + " h=" + std::to_string(c.h) +
                                " weights=" + std::to_string(static_cast<int>(kind));
      if (kind == Weights::mixed) {
        // Cancellation makes per-target relative error meaningless; scale by sum |q|.
        double sum_abs = 0;
        for (double w : q) sum_abs += std::abs(w);
        const double err = max_abs_error(got, want) / sum_abs;
        worst_mixed = std::max(worst_mixed, err);
        EXPECT_LE(err, 1e-6) << label;
      } else {
        // Every target sees at least one source above the underflow limit at these sizes.
        for (double w : want) ASSERT_GT(w, 1e-300) << label;
        const double err = max_relative_error(got, want);
        worst_rel = std::max(worst_rel, err);
        EXPECT_LE(err, 1e-6) << label;
      }
    }
  }
  std::printf("[ measured ] direct vs float64: max relative error %.3g (positive weights), %.3g of sum|q| (mixed)\n",
              worst_rel, worst_mixed);
}

TEST(GaussCpu, WiderThanEightDimensions) {
  const Context ctx = cpu_context();
  const auto X = uniform_points(700, 13, 3), Y = uniform_points(129, 13, 4);
  const auto q = make_weights(700, Weights::positive, 5);
  for (double h : {0.4, 3.0}) {
    const auto want = reference_gauss(X, q, Y, h);
    const auto got = gauss_transform(ctx, X.view(), q, Y.view(), h, direct_only());
    EXPECT_LE(max_relative_error(got, want), 1e-6) << "h=" << h;
  }
}

TEST(GaussCpu, ErrorDoesNotGrowWithN) {
  // 2^18 copies of one source with a weight (0.1) and kernel value that are not exact in
  // binary: a float32 running sum would be off by ~1e-4 here, a blocked float64 one by ~1e-12.
  const Context ctx = cpu_context();
  const int64_t n = int64_t{1} << 18;
  Matrix<float> X(n, 3);
  for (int64_t i = 0; i < n; ++i) {
    X(i, 0) = 0.25f;
    X(i, 1) = 0.5f;
    X(i, 2) = 0.75f;
  }
  Matrix<float> Y(3, 3);
  const float offsets[3] = {0.0f, 0.3f, 0.7f};
  for (int64_t j = 0; j < 3; ++j) {
    Y(j, 0) = 0.25f + offsets[j];
    Y(j, 1) = 0.5f;
    Y(j, 2) = 0.75f - offsets[j];
  }
  const double h = 0.6;
  const std::vector<double> q(static_cast<size_t>(n), 0.1);
  const auto got = gauss_transform(ctx, X.view(), q, Y.view(), h, direct_only());
  double worst = 0;
  for (int64_t j = 0; j < 3; ++j) {
    double s = 0;
    for (int c = 0; c < 3; ++c) {
      const double t = double(Y(j, c)) - double(X(0, c));
      s += t * t;
    }
    const long double want = static_cast<long double>(n) * 0.1L * std::exp(static_cast<long double>(-s / (h * h)));
    const double err = static_cast<double>(std::abs((got[static_cast<size_t>(j)] - want) / want));
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-7) << "target " << j;
  }
  // Unit weights and sources on the target: the exact answer is n.
  const std::vector<double> ones;
  Matrix<float> Y0(1, 3);
  for (int c = 0; c < 3; ++c) Y0(0, c) = X(0, c);
  const auto at_source = gauss_transform(ctx, X.view(), ones, Y0.view(), h, direct_only());
  EXPECT_EQ(at_source[0], static_cast<double>(n));
  std::printf("[ measured ] n = 2^18 identical sources: max relative error %.3g\n", worst);
}

TEST(GaussCpu, ThreadCountDoesNotChangeTheResult) {
  const auto X = uniform_points(1537, 3, 21), Y = uniform_points(259, 3, 22);
  const auto q = make_weights(1537, Weights::mixed, 23);
  const auto one = gauss_transform(cpu_context(1), X.view(), q, Y.view(), 0.2, direct_only());
  const auto two = gauss_transform(cpu_context(2), X.view(), q, Y.view(), 0.2, direct_only());
  EXPECT_EQ(one, two);
}

TEST(GaussCpu, KdeOfOneDimensionalMixture) {
  // A Parzen density of a two-component mixture on a grid, the way `simkit kde` uses the
  // transform: q_i = 1 / n and the Gaussian normalisation 1 / (sqrt(pi) h) for exp(-t^2 / h^2).
  const Context ctx = cpu_context();
  const int64_t n = 5000, m = 501;
  std::mt19937 rng(77);
  std::normal_distribution<float> a(-1.0f, 0.4f), b(1.5f, 0.8f);
  std::bernoulli_distribution pick(0.3);
  Matrix<float> X(n, 1), Y(m, 1);
  for (int64_t i = 0; i < n; ++i) X(i, 0) = pick(rng) ? a(rng) : b(rng);
  for (int64_t j = 0; j < m; ++j) Y(j, 0) = -3.0f + 7.0f * static_cast<float>(j) / static_cast<float>(m - 1);
  const double h = 0.25;
  const std::vector<double> q(static_cast<size_t>(n), 1.0 / static_cast<double>(n));
  const auto got = gauss_transform(ctx, X.view(), q, Y.view(), h, direct_only());
  const auto want = reference_gauss(X, q, Y, h);
  const double norm = 1.0 / (std::sqrt(std::acos(-1.0)) * h);
  std::vector<double> got_density(got), want_density(want);
  double integral = 0;
  for (size_t j = 0; j < got.size(); ++j) {
    got_density[j] *= norm;
    want_density[j] *= norm;
    integral += got_density[j] * 7.0 / static_cast<double>(m - 1);
  }
  const double err = max_relative_error(got_density, want_density);
  EXPECT_LE(err, 1e-6);
  // The grid covers nearly all the mass: a sanity check on the normalisation, not on accuracy.
  EXPECT_NEAR(integral, 1.0, 0.02);
  std::printf("[ measured ] 1-d KDE: max relative error %.3g, grid integral %.5f\n", err, integral);
}

TEST(GaussCpu, AutomaticNeverReportsAutomaticAndMeetsTheBound) {
  const Context ctx = cpu_context();
  const auto X = uniform_points(2000, 2, 31), Y = uniform_points(300, 2, 32);
  const auto q = make_weights(2000, Weights::positive, 33);
  GaussOptions opt;
  opt.method = GaussMethod::automatic;
  opt.eps = 1e-6;
  GaussReport report;
  const auto got = gauss_transform(ctx, X.view(), q, Y.view(), 0.5, opt, &report);
  EXPECT_NE(report.method, GaussMethod::automatic);
  EXPECT_FALSE(report.note.empty());
  double sum_q = 0;
  for (double w : q) sum_q += w;
  EXPECT_LE(max_abs_error(got, reference_gauss(X, q, Y, 0.5)), opt.eps * sum_q) << report.note;
}

TEST(GaussCpu, ExplicitIfgtEitherMeetsTheBoundOrRefuses) {
  // h tiny against the data spread in 8-d: clusters cannot hold the Taylor error down, so the
  // IFGT must refuse (pointing at direct/auto) or, if it runs, still meet its guarantee.
  const Context ctx = cpu_context();
  const auto X = uniform_points(600, 8, 41), Y = uniform_points(90, 8, 42);
  const auto q = make_weights(600, Weights::positive, 43);
  GaussOptions opt;
  opt.method = GaussMethod::ifgt;
  opt.eps = 1e-6;
  const double h = 0.01;
  try {
    GaussReport report;
    const auto got = gauss_transform(ctx, X.view(), q, Y.view(), h, opt, &report);
    EXPECT_EQ(report.method, GaussMethod::ifgt);
    double sum_q = 0;
    for (double w : q) sum_q += w;
    EXPECT_LE(max_abs_error(got, reference_gauss(X, q, Y, h)), opt.eps * sum_q);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("use --method direct or auto"), std::string::npos) << e.what();
  }
}

TEST(GaussCpu, ExtremeScalesStayFinite) {
  // Coordinates near float32's limit and a tiny h: every term is 1 (a copy of the target) or
  // underflows to 0; nothing may turn into NaN or Inf on the way.
  const Context ctx = cpu_context();
  Matrix<float> X(5, 2);
  const float big = 3.0e38f;
  const float rows[5][2] = {{big, -big}, {-big, big}, {big, -big}, {0.0f, 1e-30f}, {-big, -big}};
  for (int i = 0; i < 5; ++i)
    for (int c = 0; c < 2; ++c) X(i, c) = rows[i][c];
  for (double h : {1e-100, 1.0, 1e200}) {
    const auto got = gauss_transform(ctx, X.view(), {}, X.view(), h, direct_only());
    const double want_small_h[5] = {2, 1, 2, 1, 1};
    for (int j = 0; j < 5; ++j) {
      ASSERT_TRUE(std::isfinite(got[static_cast<size_t>(j)])) << "h=" << h << " target " << j;
      if (h == 1e200)
        EXPECT_EQ(got[static_cast<size_t>(j)], 5.0) << "target " << j;  // the kernel is 1 everywhere
      else
        EXPECT_EQ(got[static_cast<size_t>(j)], want_small_h[j]) << "h=" << h << " target " << j;
    }
  }
}

TEST(GaussCpu, BadInputIsRefused) {
  const Context ctx = cpu_context();
  const auto X = uniform_points(10, 3, 1), Y = uniform_points(4, 3, 2);
  const std::vector<double> q(10, 1.0), none;
  const auto call = [&](MatrixView<const float> x, const std::vector<double>& w, MatrixView<const float> y, double h,
                        GaussOptions o = {}) { (void)gauss_transform(ctx, x, w, y, h, o); };
  const auto bad = ErrorCode::invalid_argument;
  expect_error([&] { call(MatrixView<const float>(X.data(), 0, 3), none, Y.view(), 1.0); }, bad, "sources is empty");
  expect_error([&] { call(X.view(), q, MatrixView<const float>(Y.data(), 0, 3), 1.0); }, bad, "targets is empty");
  const auto Y2 = uniform_points(4, 2, 3);
  expect_error([&] { call(X.view(), q, Y2.view(), 1.0); }, bad, "dimension mismatch");
  expect_error([&] { call(X.view(), std::vector<double>(9, 1.0), Y.view(), 1.0); }, bad, "weights have 9 values");
  for (double h : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
    expect_error([&] { call(X.view(), q, Y.view(), h); }, bad, "bandwidth h must be a positive finite number");
  expect_error([&] { call(X.view(), q, Y.view(), 1e-160); }, bad, "1 / h^2 overflows");
  for (double eps : {0.0, 1.0, -1e-3, std::nan("")}) {
    GaussOptions o;
    o.eps = eps;
    expect_error([&] { call(X.view(), q, Y.view(), 1.0, o); }, bad, "eps must lie in (0, 1)");
  }
  auto Xn = X;
  Xn(3, 1) = std::nanf("");
  expect_error([&] { call(Xn.view(), q, Y.view(), 1.0); }, bad, "sources contains NaN or Inf (row 3, column 1)");
  auto Yi = Y;
  Yi(2, 0) = std::numeric_limits<float>::infinity();
  expect_error([&] { call(X.view(), q, Yi.view(), 1.0); }, bad, "targets contains NaN or Inf");
  auto qn = q;
  qn[5] = std::nan("");
  expect_error([&] { call(X.view(), qn, Y.view(), 1.0); }, bad, "weights contain NaN or Inf (index 5)");
  std::vector<double> out(3);
  expect_error([&] { (void)gauss_transform(ctx, X.view(), q, Y.view(), 1.0, MatrixView<double>(out.data(), 3, 1)); },
               bad, "out must hold one value per target");
  expect_error([&] { (void)gauss_transform(ctx, X.view(), q, Y.view(), 1.0, MatrixView<double>(nullptr, 4, 1)); }, bad,
               "out has a null data pointer");
}

TEST(GaussCpu, MethodNames) {
  for (GaussMethod m : {GaussMethod::direct, GaussMethod::ifgt, GaussMethod::automatic})
    EXPECT_EQ(parse_gauss_method(to_string(m)), m);
  EXPECT_EQ(parse_gauss_method("auto"), GaussMethod::automatic);
  expect_error([] { (void)parse_gauss_method("fast"); }, ErrorCode::invalid_argument,
               "unknown Gauss transform method 'fast'");
}

TEST(GaussCpu, OutputViewFormsAgree) {
  const Context ctx = cpu_context();
  const auto X = uniform_points(300, 2, 51), Y = uniform_points(77, 2, 52);
  const std::vector<double> q;
  const auto a = gauss_transform(ctx, X.view(), q, Y.view(), 0.3, direct_only());
  std::vector<double> col(77), row(77);
  (void)gauss_transform(ctx, X.view(), q, Y.view(), 0.3, MatrixView<double>(col.data(), 77, 1), direct_only());
  (void)gauss_transform(ctx, X.view(), q, Y.view(), 0.3, MatrixView<double>(row.data(), 1, 77), direct_only());
  EXPECT_EQ(a, col);
  EXPECT_EQ(a, row);
}

}  // namespace
}  // namespace simkit::test
