// Pairwise against the float64 reference, each test written once for both backends (instances
// named .../cpu and .../gpu, or ..._cpu and ..._gpu after the sweep's parameters): every metric
// at awkward sizes, Gaussian rows, dot on raw rows, cancellation far from the origin, zero-norm
// and constant rows, self-similarity, the benchmark's shape, caller outputs and progress
// reports. PairwiseCpuOnly: independence from the thread count. PairwiseGpuOnly: device-resident
// inputs and outputs, a budget small enough to force many blocks, a budget too small to work
// in, and non-finite device inputs refused. The gpu instances skip where no CUDA device is
// visible.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/pairwise.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "reference.hpp"
#include "sweep.hpp"

namespace simkit::test {
namespace {

/// Largest errors seen per backend and metric over the whole run, printed when the binary ends
/// so the figures can be quoted (each ctest process prints its own test's share).
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
    std::printf("max error vs float64 reference, per backend and metric:\n");
    for (const auto& [name, w] : worst_by_metric())
      std::printf("  %-16s abs %.3e  rel %.3e\n", name.c_str(), w.abs, w.rel);
  }
};
[[maybe_unused]] ::testing::Environment* const kReport = ::testing::AddGlobalTestEnvironment(new ErrorReport);

/// Checks every entry of `got` against the reference and records the largest errors under
/// `label`. Similarities are held to 1e-5 absolute, distances to 1e-5 relative (exact zeros
/// must come out as exact zeros); NaN fails every comparison.
void expect_close(Backend backend, const Matrix<float>& got, const std::vector<double>& ref, Metric metric,
                  const std::string& label) {
  ASSERT_EQ(static_cast<size_t>(got.size()), ref.size());
  Worst w;
  int64_t bad = 0;
  for (int64_t e = 0; e < got.size(); ++e) {
    const double r = ref[static_cast<size_t>(e)], g = got.data()[e];
    const double err = std::abs(g - r);
    w.abs = std::isnan(err) ? INFINITY : std::max(w.abs, err);
    if (r != 0) w.rel = std::isnan(err) ? INFINITY : std::max(w.rel, err / std::abs(r));
    if (!(err <= tolerance(metric, r)) && bad++ < 5)
      ADD_FAILURE() << label << ": entry (" << e / got.cols() << ", " << e % got.cols() << ") = " << g << ", reference "
                    << r << ", error " << err;
  }
  EXPECT_EQ(bad, 0) << label << ": " << bad << " entries outside tolerance";
  std::printf("  %-40s max abs err %.3e  max rel err %.3e\n", label.c_str(), w.abs, w.rel);
  Worst& all = worst_by_metric()[std::string(backend_name(backend)) + " " + to_string(metric)];
  all.abs = std::max(all.abs, w.abs);
  all.rel = std::max(all.rel, w.rel);
}

void expect_close(Backend backend, const Matrix<float>& Q, const Matrix<float>& X, Metric metric,
                  const Matrix<float>& got, const std::string& label) {
  expect_close(backend, got, reference_pairwise(Q, X, metric), metric, label);
}

class PairwiseTest : public BackendTest {};

INSTANTIATE_TEST_SUITE_P(Backends, PairwiseTest, ::testing::ValuesIn(kBackends), BackendName{});

struct Shape {
  int64_t m, n, d;
};

class PairwiseAccuracy : public ::testing::TestWithParam<std::tuple<Backend, Metric, Shape>> {};

// m = 37, n = 1031: neither a multiple of any tile, GEMM or l1 block, at every awkward d; and
// 300 x 2100 (several CPU blocks of both sides).
TEST_P(PairwiseAccuracy, MatchesFloat64Reference) {
  const auto [backend, metric, s] = GetParam();
  SIMKIT_REQUIRE_BACKEND(backend);
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = inputs_for(metric, s.m, s.d, seed), X = inputs_for(metric, s.n, s.d, seed + 1);
  const Matrix<float> got = pairwise(context_for(backend), Q.view(), X.view(), metric);
  const std::string label = std::string(to_string(metric)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                            " d=" + std::to_string(s.d);
  expect_close(backend, Q, X, metric, got, label);
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, PairwiseAccuracy,
                         ::testing::Combine(::testing::ValuesIn(kBackends), ::testing::ValuesIn(kMetrics),
                                            ::testing::Values(Shape{37, 1031, 1}, Shape{37, 1031, 3},
                                                              Shape{37, 1031, 127}, Shape{37, 1031, 384},
                                                              Shape{37, 1031, 1000}, Shape{300, 2100, 127})),
                         [](const auto& info) {
                           const Shape s = std::get<2>(info.param);
                           return std::string(to_string(std::get<1>(info.param))) + "_m" + std::to_string(s.m) + "_n" +
                                  std::to_string(s.n) + "_d" + std::to_string(s.d) + "_" +
                                  backend_name(std::get<0>(info.param));
                         });

// Gaussian rows (heavier tails, norms spread wider than uniform ones) through the same checks.
TEST_P(PairwiseTest, GaussianInputs) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Q = inputs_for(metric, 41, 384, seed + 2, Distribution::gaussian);
    const Matrix<float> X = inputs_for(metric, 1100, 384, seed + 3, Distribution::gaussian);
    const Matrix<float> got = pairwise(context(), Q.view(), X.view(), metric);
    expect_close(backend(), Q, X, metric, got, std::string(to_string(metric)) + " gaussian d=384");
  }
}

// The seed-0 benchmark shape (1000 x 10000, d = 384), spot-checked on a spread of rows.
TEST_P(PairwiseTest, BenchmarkShapeSpotCheck) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = random_matrix(1000, 384, seed, Distribution::gaussian);
  const Matrix<float> X = random_matrix(10000, 384, seed + 1, Distribution::gaussian);
  for (Metric metric : {Metric::cosine, Metric::l2, Metric::pearson}) {
    const Matrix<float> out = pairwise(context(), Q.view(), X.view(), metric);
    double worst = 0;
    for (int64_t i = 0; i < Q.rows(); i += 97)
      for (int64_t j = 0; j < X.rows(); ++j) {
        const double r = reference_metric(&Q(i, 0), &X(j, 0), 384, metric);
        ASSERT_LE(std::abs(out(i, j) - r), tolerance(metric, r)) << to_string(metric) << " (" << i << ", " << j << ")";
        worst = std::max(worst, std::abs(out(i, j) - r) / (larger_is_better(metric) ? 1.0 : std::abs(r)));
      }
    std::printf("  %-12s 1000 x 10000 x 384: max error %.3g\n", to_string(metric), worst);
  }
}

// Dot on raw rows: its error scales with the norms, so it is held to 1e-5 |q| |x|.
TEST_P(PairwiseTest, DotOnRawRowsScalesWithNorms) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int64_t d : {3, 127, 1000}) {
    const Matrix<float> Q = random_matrix(29, d, seed + 4);
    const Matrix<float> X = random_matrix(1031, d, seed + 5);
    const Matrix<float> got = pairwise(context(), Q.view(), X.view(), Metric::dot);
    double worst = 0;
    for (int64_t i = 0; i < Q.rows(); ++i)
      for (int64_t j = 0; j < X.rows(); ++j) {
        const double scale = std::sqrt(reference_metric(&Q(i, 0), &Q(i, 0), d, Metric::dot) *
                                       reference_metric(&X(j, 0), &X(j, 0), d, Metric::dot));
        const double err = std::abs(got(i, j) - reference_metric(&Q(i, 0), &X(j, 0), d, Metric::dot));
        worst = std::isnan(err) ? INFINITY : std::max(worst, err / scale);
      }
    std::printf("  dot raw d=%-4lld max error / (|q| |x|) %.3e\n", static_cast<long long>(d), worst);
    EXPECT_LE(worst, 1e-5) << "d = " << d;
  }
}

// Points far from the origin with tiny differences: ||q||^2 + ||x||^2 - 2 q.x cancels almost
// completely, so the expanded form alone would be wrong in every digit.
TEST_P(PairwiseTest, CancellationFarFromOrigin) {
  SIMKIT_REQUIRE_BACKEND(backend());
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
        const Matrix<float> got = pairwise(context(), Q.view(), X.view(), metric);
        char label[96];
        std::snprintf(label, sizeof label, "%s offset %g spread %g d=%lld", to_string(metric), lay.offset, lay.spread,
                      static_cast<long long>(d));
        expect_close(backend(), Q, X, metric, got, label);
        if (metric != Metric::pearson) {
          EXPECT_EQ(got(0, 5), 0.0f) << label;
        }
      }
    }
  }
}

// Near-duplicates far from the origin: |q|^2 + |x|^2 - 2 q.x cancels almost completely for
// them, so those pairs must be recomputed directly. Duplicates come out exactly 0.
TEST_P(PairwiseTest, CancellationNearDuplicatesFarFromOrigin) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const int64_t d = 130;
  Matrix<float> X = random_matrix(300, d, 11);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] += 100.f;
  Matrix<float> Q(40, d);
  const Matrix<float> noise = random_matrix(40, d, 12);
  for (int64_t i = 0; i < Q.rows(); ++i)
    for (int64_t j = 0; j < d; ++j) Q(i, j) = X(i * 7, j) + (i % 2 == 0 ? 0.f : 1e-3f * noise(i, j));
  for (Metric metric : {Metric::l2, Metric::sqeuclidean}) {
    const Matrix<float> out = pairwise(context(), Q.view(), X.view(), metric);
    expect_close(backend(), Q, X, metric, out, std::string(to_string(metric)) + " near-duplicates offset 100");
    for (int64_t i = 0; i < Q.rows(); i += 2) EXPECT_EQ(out(i, i * 7), 0.f) << to_string(metric) << " row " << i;
  }
}

// Zero-norm rows under cosine and constant rows under pearson have similarity 0 (metric.hpp),
// never NaN; every other entry is as accurate as ever. Zero and constant rows on both sides,
// first and last base rows included, at d below and above the vector widths.
TEST_P(PairwiseTest, ZeroNormAndConstantRowsGiveZero) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t d, m, n;
    uint64_t q_seed, x_seed;
    std::vector<int64_t> zero_q, zero_x, const_q, const_x;
    float q_level, x_level;  // the constant rows' value
  };
  const std::vector<Case> cases = {
      {1, 5, 1030, seed + 8, seed + 9, {1}, {2, 1029}, {3}, {7}, 2.5f, -0.75f},
      {3, 5, 1030, seed + 8, seed + 9, {1}, {2, 1029}, {3}, {7}, 2.5f, -0.75f},
      {127, 5, 1030, seed + 8, seed + 9, {1}, {2, 1029}, {3}, {7}, 2.5f, -0.75f},
      {33, 5, 9, 7, 8, {1}, {4}, {3}, {6}, 2.5f, -1.f},
  };
  for (const Case& c : cases) {
    Matrix<float> Q = random_matrix(c.m, c.d, c.q_seed), X = random_matrix(c.n, c.d, c.x_seed);
    for (int64_t t = 0; t < c.d; ++t) {
      for (int64_t i : c.zero_q) Q(i, t) = 0.f;
      for (int64_t j : c.zero_x) X(j, t) = 0.f;
      for (int64_t i : c.const_q) Q(i, t) = c.q_level;
      for (int64_t j : c.const_x) X(j, t) = c.x_level;
    }
    for (Metric metric : {Metric::cosine, Metric::pearson}) {
      const std::string label = std::string(to_string(metric)) + " d=" + std::to_string(c.d);
      const Matrix<float> out = pairwise(context(), Q.view(), X.view(), metric);
      for (int64_t i = 0; i < Q.rows(); ++i)
        for (int64_t j = 0; j < X.rows(); ++j)
          ASSERT_TRUE(std::isfinite(out(i, j))) << label << " (" << i << ", " << j << ")";
      expect_close(backend(), Q, X, metric, out, label + " zero / constant rows");
      for (int64_t i : c.zero_q)
        for (int64_t j = 0; j < X.rows(); ++j) EXPECT_EQ(out(i, j), 0.0f) << label << ", zero query row, base " << j;
      for (int64_t j : c.zero_x)
        for (int64_t i = 0; i < Q.rows(); ++i) EXPECT_EQ(out(i, j), 0.0f) << label << ", zero base row, query " << i;
      if (metric == Metric::pearson) {
        for (int64_t i : c.const_q)
          for (int64_t j = 0; j < X.rows(); ++j) EXPECT_EQ(out(i, j), 0.0f) << label << ", constant query row " << j;
        for (int64_t j : c.const_x)
          for (int64_t i = 0; i < Q.rows(); ++i) EXPECT_EQ(out(i, j), 0.0f) << label << ", constant base row " << i;
      }
    }
  }
}

// A row compared with itself: cosine and pearson 1, distances exactly 0.
TEST_P(PairwiseTest, SelfSimilarity) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> X = random_matrix(260, 127, seed + 10);
  for (Metric metric : kMetrics) {
    const Matrix<float> got = pairwise(context(), X.view(), X.view(), metric);
    for (int64_t i = 0; i < X.rows(); ++i) {
      if (metric == Metric::cosine || metric == Metric::pearson) {
        EXPECT_NEAR(got(i, i), 1.0, 1e-5) << to_string(metric) << " row " << i;
      } else if (metric != Metric::dot) {
        EXPECT_EQ(got(i, i), 0.0f) << to_string(metric) << " row " << i;
      }
    }
  }
}

// The caller-provided output form writes exactly the m x n view it is given.
TEST_P(PairwiseTest, WritesIntoCallerOutput) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(3, 17, seed + 13);
  const Matrix<float> X = random_matrix(1025, 17, seed + 14);
  Matrix<float> out(3, 1025, -7.f);
  pairwise(context(), Q.view(), X.view(), Metric::sqeuclidean, out.view());
  const Matrix<float> fresh = pairwise(context(), Q.view(), X.view(), Metric::sqeuclidean);
  EXPECT_EQ(std::memcmp(out.data(), fresh.data(), static_cast<size_t>(out.size()) * sizeof(float)), 0);
}

// Progress reports come from the calling thread, never decrease and end at 1 (on the CPU with
// 2 threads).
TEST_P(PairwiseTest, ProgressFromCallingThread) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(600, 8, seed + 15);
  const Matrix<float> X = random_matrix(3000, 8, seed + 16);
  Context ctx = backend() == Backend::cpu ? cpu_context(2) : gpu_context();
  const ProgressLog log(ctx);
  pairwise(ctx, Q.view(), X.view(), Metric::cosine);
  log.expect_well_formed(backend() == Backend::cpu ? "2 threads" : "gpu");
}

// ------------------------------------------------------------------------ the CPU's own cases

// Block boundaries do not move with the thread count, so neither does any bit of the output.
TEST(PairwiseCpuOnly, IndependentOfThreadCount) {
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

// ------------------------------------------------------------------------ the GPU's own cases

// Inputs and outputs resident on the device, in every combination with host views.
TEST(PairwiseGpuOnly, DeviceResidentInputsAndOutput) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> Q = random_matrix(45, 70, 21), X = random_matrix(203, 70, 22);
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  for (Metric metric : kMetrics) {
    const Matrix<float> host = pairwise(ctx, Q.view(), X.view(), metric);
    expect_close(Backend::gpu, Q, X, metric, host, std::string(to_string(metric)) + " host");
    for (int combo = 1; combo < 8; ++combo) {
      const bool q_dev = combo & 1, x_dev = combo & 2, out_dev = combo & 4;
      const std::string label = std::string(to_string(metric)) + " Q " + (q_dev ? "device" : "host") + ", X " +
                                (x_dev ? "device" : "host") + ", out " + (out_dev ? "device" : "host");
      DeviceMatrix<float> dOut(ctx, Q.rows(), X.rows());
      Matrix<float> out(Q.rows(), X.rows(), NAN);
      pairwise(ctx, q_dev ? dQ.view() : Q.view(), x_dev ? dX.view() : X.view(), metric,
               out_dev ? dOut.view() : out.view());
      if (out_dev) dOut.copy_to_host(out.view());
      expect_close(Backend::gpu, Q, X, metric, out, label);
      double diff = 0;
      for (int64_t i = 0; i < out.size(); ++i) diff = std::max(diff, double(std::abs(out.data()[i] - host.data()[i])));
      EXPECT_LE(diff, larger_is_better(metric) ? 2e-6 : 1e-4) << label << " vs all-host";
    }
  }
}

// A budget of a few hundred KiB splits 300 x 2000 into many blocks of both sides; l1 sums in
// the same order whatever the blocking, so it must come out bitwise equal.
TEST(PairwiseGpuOnly, SmallBudgetForcesManyBlocks) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(300, 96, 31), X = random_matrix(2000, 96, 32);
  for (Metric metric : kMetrics) {
    const Matrix<float> whole = pairwise(gpu_context(), Q.view(), X.view(), metric);
    const Matrix<float> tiled = pairwise(gpu_context(size_t(384) << 10), Q.view(), X.view(), metric);
    expect_close(Backend::gpu, Q, X, metric, tiled, std::string(to_string(metric)) + " small budget");
    if (metric == Metric::l1) {
      EXPECT_EQ(std::memcmp(whole.data(), tiled.data(), size_t(whole.size()) * sizeof(float)), 0);
    }
  }
}

TEST(PairwiseGpuOnly, BudgetTooSmallIsOutOfMemory) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(4, 5000, 41), X = random_matrix(4, 5000, 42);
  // A 1 KiB budget cannot hold one 5000-float row.
  expect_error([&] { pairwise(gpu_context(1024), Q.view(), X.view(), Metric::l2); }, ErrorCode::out_of_memory,
               "gpu_memory_budget");
}

// A NaN in a device-resident input is found on the device and refused before any work.
TEST(PairwiseGpuOnly, NonFiniteDeviceInputIsRefused) {
  // Device inputs are checked inside the backend (fused into its row pass for the dot family,
  // a separate scan for dot and l1): every metric, NaN and Inf, in either operand.
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> Q = random_matrix(3, 13, 52), X = random_matrix(50, 13, 51);
  for (Metric metric : kMetrics)
    for (float poison : {NAN, INFINITY, -INFINITY})
      for (bool in_base : {false, true}) {
        Matrix<float> bad = in_base ? X : Q;
        bad(bad.rows() - 1, 12) = poison;
        const DeviceMatrix<float> dBad(ctx, bad.view()), dGood(ctx, (in_base ? Q : X).view());
        Matrix<float> out(3, 50);
        const std::string label =
            std::string(to_string(metric)) + (in_base ? " base " : " queries ") + std::to_string(poison);
        try {
          if (in_base)
            pairwise(ctx, dGood.view(), dBad.view(), metric, out.view());
          else
            pairwise(ctx, dBad.view(), dGood.view(), metric, out.view());
          ADD_FAILURE() << label << ": not refused";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << label << ": " << e.what();
          EXPECT_NE(std::string(e.what()).find(in_base ? "base" : "queries"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
        }
      }
  // The same call with clean inputs still works afterwards (the flag does not stick).
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  Matrix<float> out(3, 50);
  EXPECT_NO_THROW(pairwise(ctx, dQ.view(), dX.view(), Metric::cosine, out.view()));
}

}  // namespace
}  // namespace simkit::test
