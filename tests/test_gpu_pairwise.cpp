// GPU pairwise against the float64 reference: every metric at awkward sizes, zero-norm and
// constant rows, cancellation in the l2 expansion, device-resident inputs and outputs, and a
// memory budget small enough to force many blocks. Skips where no CUDA device is visible.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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

/// Checks every element against the reference within the contract's tolerance and returns the
/// largest error as the contract states it: absolute for the similarities, relative for the
/// distances (pairs at distance 0 must be exactly 0).
double worst_error(const Matrix<float>& Q, const Matrix<float>& X, Metric metric, const Matrix<float>& out,
                   const std::string& label) {
  const std::vector<double> ref = reference_pairwise(Q, X, metric);
  double worst = 0;
  int reported = 0;
  for (int64_t i = 0; i < out.rows(); ++i)
    for (int64_t j = 0; j < out.cols(); ++j) {
      const double r = ref[size_t(i * out.cols() + j)], v = out(i, j);
      const double e = std::abs(v - r);  // NaN when v is NaN, and NaN fails every comparison
      if (!(e <= tolerance(metric, r)) && reported++ < 5)
        ADD_FAILURE() << label << ": (" << i << ", " << j << ") = " << v << ", reference " << r;
      const double scaled = larger_is_better(metric) || r == 0 ? e : e / std::abs(r);
      worst = std::isnan(scaled) ? INFINITY : std::max(worst, scaled);
    }
  return worst;
}

class GpuPairwiseAccuracy : public MetricDimSweep {};

// m = 37, n = 1031: neither a multiple of any tile, GEMM or l1 block.
TEST_P(GpuPairwiseAccuracy, MatchesFloat64Reference) {
  SIMKIT_REQUIRE_GPU();
  const auto [metric, d] = GetParam();
  const Matrix<float> Q = inputs_for(metric, 37, d, seed), X = inputs_for(metric, 1031, d, seed + 1);
  const Matrix<float> out = pairwise(gpu_context(), Q.view(), X.view(), metric);
  const double e = worst_error(Q, X, metric, out, name_of(metric, d));
  std::printf("  %-16s max %s error %.3g\n", name_of(metric, d).c_str(),
              larger_is_better(metric) ? "absolute" : "relative", e);
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, GpuPairwiseAccuracy,
                         ::testing::Combine(::testing::ValuesIn(kMetrics), ::testing::ValuesIn(kAwkwardDims)),
                         MetricDimName{});

// The seed-0 benchmark shape (1000 x 10000, d = 384), spot-checked on a spread of rows.
TEST(GpuPairwise, BenchmarkShapeSpotCheck) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = random_matrix(1000, 384, seed, Distribution::gaussian);
  const Matrix<float> X = random_matrix(10000, 384, seed + 1, Distribution::gaussian);
  for (Metric metric : {Metric::cosine, Metric::l2, Metric::pearson}) {
    const Matrix<float> out = pairwise(gpu_context(), Q.view(), X.view(), metric);
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

// Cosine with a zero row and pearson with a constant row are 0 (metric.hpp), never NaN.
TEST(GpuPairwise, ZeroNormAndConstantRowsGiveZero) {
  SIMKIT_REQUIRE_GPU();
  Matrix<float> Q = random_matrix(5, 33, 7), X = random_matrix(9, 33, 8);
  for (int64_t j = 0; j < 33; ++j) Q(1, j) = 0.f, X(4, j) = 0.f, Q(3, j) = 2.5f, X(6, j) = -1.f;
  for (Metric metric : {Metric::cosine, Metric::pearson}) {
    const Matrix<float> out = pairwise(gpu_context(), Q.view(), X.view(), metric);
    for (int64_t i = 0; i < Q.rows(); ++i)
      for (int64_t j = 0; j < X.rows(); ++j) {
        ASSERT_TRUE(std::isfinite(out(i, j))) << to_string(metric) << " (" << i << ", " << j << ")";
        EXPECT_NEAR(out(i, j), reference_metric(&Q(i, 0), &X(j, 0), 33, metric), 1e-5);
      }
    for (int64_t j = 0; j < X.rows(); ++j) EXPECT_EQ(out(1, j), 0.f) << to_string(metric);
    for (int64_t i = 0; i < Q.rows(); ++i) EXPECT_EQ(out(i, 4), 0.f) << to_string(metric);
    if (metric == Metric::pearson) {
      for (int64_t j = 0; j < X.rows(); ++j) EXPECT_EQ(out(3, j), 0.f);
      for (int64_t i = 0; i < Q.rows(); ++i) EXPECT_EQ(out(i, 6), 0.f);
    }
  }
}

// Far from the origin, |q|^2 + |x|^2 - 2 q.x cancels almost completely for near-duplicates;
// the epilogue must recompute those pairs directly. Duplicates come out exactly 0.
TEST(GpuPairwise, CancellationNearDuplicatesFarFromOrigin) {
  SIMKIT_REQUIRE_GPU();
  const int64_t d = 130;
  Matrix<float> X = random_matrix(300, d, 11);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] += 100.f;
  Matrix<float> Q(40, d);
  const Matrix<float> noise = random_matrix(40, d, 12);
  for (int64_t i = 0; i < Q.rows(); ++i)
    for (int64_t j = 0; j < d; ++j) Q(i, j) = X(i * 7, j) + (i % 2 == 0 ? 0.f : 1e-3f * noise(i, j));
  for (Metric metric : {Metric::l2, Metric::sqeuclidean}) {
    const Matrix<float> out = pairwise(gpu_context(), Q.view(), X.view(), metric);
    worst_error(Q, X, metric, out, to_string(metric));
    for (int64_t i = 0; i < Q.rows(); i += 2) EXPECT_EQ(out(i, i * 7), 0.f) << to_string(metric) << " row " << i;
  }
}

// Inputs and outputs resident on the device, in every combination with host views.
TEST(GpuPairwise, DeviceResidentInputsAndOutput) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> Q = random_matrix(45, 70, 21), X = random_matrix(203, 70, 22);
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  for (Metric metric : kMetrics) {
    const Matrix<float> host = pairwise(ctx, Q.view(), X.view(), metric);
    worst_error(Q, X, metric, host, std::string(to_string(metric)) + " host");
    for (int combo = 1; combo < 8; ++combo) {
      const bool q_dev = combo & 1, x_dev = combo & 2, out_dev = combo & 4;
      const std::string label = std::string(to_string(metric)) + " Q " + (q_dev ? "device" : "host") + ", X " +
                                (x_dev ? "device" : "host") + ", out " + (out_dev ? "device" : "host");
      DeviceMatrix<float> dOut(ctx, Q.rows(), X.rows());
      Matrix<float> out(Q.rows(), X.rows(), NAN);
      pairwise(ctx, q_dev ? dQ.view() : Q.view(), x_dev ? dX.view() : X.view(), metric,
               out_dev ? dOut.view() : out.view());
      if (out_dev) dOut.copy_to_host(out.view());
      worst_error(Q, X, metric, out, label);
      double diff = 0;
      for (int64_t i = 0; i < out.size(); ++i) diff = std::max(diff, double(std::abs(out.data()[i] - host.data()[i])));
      EXPECT_LE(diff, larger_is_better(metric) ? 2e-6 : 1e-4) << label << " vs all-host";
    }
  }
}

// A budget of a few hundred KiB splits 300 x 2000 into many blocks of both sides; l1 sums in
// the same order whatever the blocking, so it must come out bitwise equal.
TEST(GpuPairwise, SmallBudgetForcesManyBlocks) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(300, 96, 31), X = random_matrix(2000, 96, 32);
  for (Metric metric : kMetrics) {
    const Matrix<float> whole = pairwise(gpu_context(), Q.view(), X.view(), metric);
    const Matrix<float> tiled = pairwise(gpu_context(size_t(384) << 10), Q.view(), X.view(), metric);
    worst_error(Q, X, metric, tiled, std::string(to_string(metric)) + " small budget");
    if (metric == Metric::l1) {
      EXPECT_EQ(std::memcmp(whole.data(), tiled.data(), size_t(whole.size()) * sizeof(float)), 0);
    }
  }
}

TEST(GpuPairwise, BudgetTooSmallIsOutOfMemory) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(4, 5000, 41), X = random_matrix(4, 5000, 42);
  // A 1 KiB budget cannot hold one 5000-float row.
  expect_error([&] { pairwise(gpu_context(1024), Q.view(), X.view(), Metric::l2); }, ErrorCode::out_of_memory,
               "gpu_memory_budget");
}

// A NaN in a device-resident input is found on the device and refused before any work.
TEST(GpuPairwise, NonFiniteDeviceInputIsRefused) {
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
