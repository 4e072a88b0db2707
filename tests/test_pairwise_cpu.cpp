// CPU pairwise against the float64 reference: every metric, awkward sizes, cancellation-prone
// inputs, zero rows, and independence from the thread count.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include <simkit/pairwise.hpp>

#include "contexts.hpp"
#include "reference.hpp"
#include "sweep.hpp"

namespace simkit::test {
namespace {

/// Largest errors seen per metric over the whole run, printed when the binary ends so the
/// figures can be quoted (each ctest process prints its own test's share).
struct Worst {
  double abs = 0, rel = 0;
};
std::map<std::string, Worst>& worst_by_metric() {
  static std::map<std::string, Worst> w;
  return w;
}

class ErrorReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (worst_by_metric().empty()) return;
    std::printf("max error vs float64 reference, per metric:\n");
    for (const auto& [name, w] : worst_by_metric())
      std::printf("  %-12s abs %.3e  rel %.3e\n", name.c_str(), w.abs, w.rel);
  }
};
[[maybe_unused]] ::testing::Environment* const kReport = ::testing::AddGlobalTestEnvironment(new ErrorReport);

/// Checks every entry of `got` against the reference and records the largest errors under
/// `label`. Similarities are held to 1e-5 absolute, distances to 1e-5 relative (exact zeros
/// must come out as exact zeros).
void expect_close(const Matrix<float>& got, const std::vector<double>& ref, Metric metric, const std::string& label) {
  ASSERT_EQ(static_cast<size_t>(got.size()), ref.size());
  Worst w;
  int64_t bad = 0;
  for (int64_t e = 0; e < got.size(); ++e) {
    const double r = ref[static_cast<size_t>(e)], g = got.data()[e];
    const double err = std::abs(g - r);
    w.abs = std::max(w.abs, err);
    if (r != 0) w.rel = std::max(w.rel, err / std::abs(r));
    if (!(err <= tolerance(metric, r)) && bad++ < 5)
      ADD_FAILURE() << label << ": entry (" << e / got.cols() << ", " << e % got.cols() << ") = " << g << ", reference "
                    << r << ", error " << err;
  }
  EXPECT_EQ(bad, 0) << label << ": " << bad << " entries outside tolerance";
  std::printf("  %-40s max abs err %.3e  max rel err %.3e\n", label.c_str(), w.abs, w.rel);
  Worst& all = worst_by_metric()[to_string(metric)];
  all.abs = std::max(all.abs, w.abs);
  all.rel = std::max(all.rel, w.rel);
}

struct Shape {
  int64_t m, n, d;
};

class PairwiseAccuracy : public ::testing::TestWithParam<std::tuple<Metric, Shape>> {};

TEST_P(PairwiseAccuracy, MatchesFloat64Reference) {
  const auto [metric, s] = GetParam();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = inputs_for(metric, s.m, s.d, seed), X = inputs_for(metric, s.n, s.d, seed + 1);
  const Matrix<float> got = pairwise(cpu_context(), Q.view(), X.view(), metric);
  const std::string label = std::string(to_string(metric)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                            " d=" + std::to_string(s.d);
  expect_close(got, reference_pairwise(Q, X, metric), metric, label);
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, PairwiseAccuracy,
                         ::testing::Combine(::testing::ValuesIn(kMetrics),
                                            ::testing::Values(Shape{37, 1031, 1}, Shape{37, 1031, 3},
                                                              Shape{37, 1031, 127}, Shape{37, 1031, 384},
                                                              Shape{37, 1031, 1000}, Shape{300, 2100, 127})),
                         [](const auto& info) {
                           const Shape s = std::get<1>(info.param);
                           return std::string(to_string(std::get<0>(info.param))) + "_m" + std::to_string(s.m) + "_n" +
                                  std::to_string(s.n) + "_d" + std::to_string(s.d);
                         });

// Gaussian rows (heavier tails, norms spread wider than uniform ones) through the same checks.
TEST(PairwiseCpu, GaussianInputs) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Q = inputs_for(metric, 41, 384, seed + 2, Distribution::gaussian);
    const Matrix<float> X = inputs_for(metric, 1100, 384, seed + 3, Distribution::gaussian);
    const Matrix<float> got = pairwise(cpu_context(), Q.view(), X.view(), metric);
    expect_close(got, reference_pairwise(Q, X, metric), metric, std::string(to_string(metric)) + " gaussian d=384");
  }
}

// Dot on raw rows: its error scales with the norms, so it is held to 1e-5 |q| |x|.
TEST(PairwiseCpu, DotOnRawRowsScalesWithNorms) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int64_t d : {3, 127, 1000}) {
    const Matrix<float> Q = random_matrix(29, d, seed + 4);
    const Matrix<float> X = random_matrix(1031, d, seed + 5);
    const Matrix<float> got = pairwise(cpu_context(), Q.view(), X.view(), Metric::dot);
    double worst = 0;
    for (int64_t i = 0; i < Q.rows(); ++i)
      for (int64_t j = 0; j < X.rows(); ++j) {
        const double scale = std::sqrt(reference_metric(&Q(i, 0), &Q(i, 0), d, Metric::dot) *
                                       reference_metric(&X(j, 0), &X(j, 0), d, Metric::dot));
        const double err = std::abs(got(i, j) - reference_metric(&Q(i, 0), &X(j, 0), d, Metric::dot));
        worst = std::max(worst, err / scale);
      }
    std::printf("  dot raw d=%-4lld max error / (|q| |x|) %.3e\n", static_cast<long long>(d), worst);
    EXPECT_LE(worst, 1e-5) << "d = " << d;
  }
}

// Points far from the origin with tiny differences: ||q||^2 + ||x||^2 - 2 q.x cancels almost
// completely, so the expanded form alone would be wrong in every digit.
TEST(PairwiseCpu, CancellationFarFromOrigin) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Layout {
    float offset, spread;
  };
  for (const Layout lay : {Layout{1e3f, 1e-2f}, Layout{10.f, 1.f}, Layout{1e4f, 1.f}}) {
    for (int64_t d : {1, 127, 384}) {
      Matrix<float> Q = random_matrix(23, d, seed + 6);
      Matrix<float> X = random_matrix(1100, d, seed + 7);
      for (Matrix<float>* A : {&Q, &X})
        for (int64_t e = 0; e < A->size(); ++e) A->data()[e] = lay.offset + lay.spread * A->data()[e];
      // One query repeats a base row: its distance must be exactly 0.
      std::memcpy(&Q(0, 0), &X(5, 0), static_cast<size_t>(d) * sizeof(float));
      for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::pearson, Metric::l1}) {
        const Matrix<float> got = pairwise(cpu_context(), Q.view(), X.view(), metric);
        char label[96];
        std::snprintf(label, sizeof label, "%s offset %g spread %g d=%lld", to_string(metric), lay.offset, lay.spread,
                      static_cast<long long>(d));
        expect_close(got, reference_pairwise(Q, X, metric), metric, label);
        if (metric != Metric::pearson) {
          EXPECT_EQ(got(0, 5), 0.0f) << label;
        }
      }
    }
  }
}

// Zero-norm rows under cosine and constant rows under pearson have similarity 0 (metric.hpp).
TEST(PairwiseCpu, ZeroNormAndConstantRowsGiveZero) {
  const uint64_t seed = test_seed();
  for (int64_t d : {1, 3, 127}) {
    Matrix<float> Q = random_matrix(5, d, seed + 8);
    Matrix<float> X = random_matrix(1030, d, seed + 9);
    for (int64_t t = 0; t < d; ++t) {
      Q(1, t) = 0.f, X(2, t) = 0.f, X(1029, t) = 0.f;  // zero rows
      Q(3, t) = 2.5f, X(7, t) = -0.75f;                // constant rows
    }
    const Matrix<float> cos = pairwise(cpu_context(), Q.view(), X.view(), Metric::cosine);
    const Matrix<float> pea = pairwise(cpu_context(), Q.view(), X.view(), Metric::pearson);
    for (int64_t j = 0; j < X.rows(); ++j) {
      EXPECT_EQ(cos(1, j), 0.0f) << "cosine, zero query row, base " << j;
      EXPECT_EQ(pea(1, j), 0.0f) << "pearson, zero query row, base " << j;
      EXPECT_EQ(pea(3, j), 0.0f) << "pearson, constant query row, base " << j;
    }
    for (int64_t i = 0; i < Q.rows(); ++i) {
      EXPECT_EQ(cos(i, 2), 0.0f) << "cosine, zero base row, query " << i;
      EXPECT_EQ(cos(i, 1029), 0.0f) << "cosine, zero base row, query " << i;
      EXPECT_EQ(pea(i, 7), 0.0f) << "pearson, constant base row, query " << i;
    }
    for (float v : {cos(0, 3), pea(0, 3)}) EXPECT_TRUE(std::isfinite(v));
  }
}

// A row compared with itself: cosine and pearson 1, distances exactly 0.
TEST(PairwiseCpu, SelfSimilarity) {
  const uint64_t seed = test_seed();
  const Matrix<float> X = random_matrix(260, 127, seed + 10);
  for (Metric metric : kMetrics) {
    const Matrix<float> got = pairwise(cpu_context(), X.view(), X.view(), metric);
    for (int64_t i = 0; i < X.rows(); ++i) {
      if (metric == Metric::cosine || metric == Metric::pearson) {
        EXPECT_NEAR(got(i, i), 1.0, 1e-5) << to_string(metric) << " row " << i;
      } else if (metric != Metric::dot) {
        EXPECT_EQ(got(i, i), 0.0f) << to_string(metric) << " row " << i;
      }
    }
  }
}

// Block boundaries do not move with the thread count, so neither does any bit of the output.
TEST(PairwiseCpu, IndependentOfThreadCount) {
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(300, 127, seed + 11);
  const Matrix<float> X = random_matrix(2100, 127, seed + 12);
  for (Metric metric : kMetrics) {
    const Matrix<float> one = pairwise(cpu_context(1), Q.view(), X.view(), metric);
    for (int threads : {2, 3}) {
      const Matrix<float> many = pairwise(cpu_context(threads), Q.view(), X.view(), metric);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), static_cast<size_t>(one.size()) * sizeof(float)), 0)
          << to_string(metric) << ": 1 vs " << threads << " threads differ";
    }
  }
}

// The caller-provided output form writes exactly the m x n view it is given.
TEST(PairwiseCpu, WritesIntoCallerOutput) {
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(3, 17, seed + 13);
  const Matrix<float> X = random_matrix(1025, 17, seed + 14);
  Matrix<float> out(3, 1025, -7.f);
  pairwise(cpu_context(), Q.view(), X.view(), Metric::sqeuclidean, out.view());
  const Matrix<float> fresh = pairwise(cpu_context(), Q.view(), X.view(), Metric::sqeuclidean);
  EXPECT_EQ(std::memcmp(out.data(), fresh.data(), static_cast<size_t>(out.size()) * sizeof(float)), 0);
}

// Progress reports come from the calling thread, never decrease and end at 1.
TEST(PairwiseCpu, ProgressFromCallingThread) {
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(600, 8, seed + 15);
  const Matrix<float> X = random_matrix(3000, 8, seed + 16);
  Context ctx = cpu_context(2);
  const ProgressLog log(ctx);
  pairwise(ctx, Q.view(), X.view(), Metric::cosine);
  log.expect_well_formed("2 threads");
}

}  // namespace
}  // namespace simkit::test
