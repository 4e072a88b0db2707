// The direct Gauss transform on the GPU against a float64 reference: every compiled dimension
// kernel (d = 1..8), the run-time-d kernel (d = 11) and the wide kernel (d = 20), small and
// large bandwidths, positive and mixed-sign weights, data far from the origin, awkward sizes
// (one target, one source, partial tiles, source splits), device-resident inputs, memory
// budgets that force blocking, a sum whose error must not grow with n, and agreement with the
// CPU backend. Skips where no CUDA device is visible.
//
// The promise checked: |G - G_ref| <= 1e-5 * G_ref for positive weights, <= 1e-5 * sum|q| for
// mixed signs. Below float's normal range (terms under ~1e-38) the kernel flushes to zero, so
// both also allow an absolute 1e-30 * sum|q|.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

#include "contexts.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

const GaussOptions kDirect{GaussMethod::direct};

std::vector<double> reference_gauss(const Matrix<float>& X, const std::vector<double>& q, const Matrix<float>& Y,
                                    double h) {
  const int64_t n = X.rows(), m = Y.rows(), d = X.cols();
  std::vector<double> g(size_t(m), 0.0);
  const double inv = 1.0 / (h * h);
  for (int64_t j = 0; j < m; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double r2 = 0;
      for (int64_t k = 0; k < d; ++k) {
        const double t = double(Y(j, k)) - double(X(i, k));
        r2 += t * t;
      }
      sum += (q.empty() ? 1.0 : q[size_t(i)]) * std::exp(-r2 * inv);
    }
    g[size_t(j)] = sum;
  }
  return g;
}

std::vector<double> random_weights(int64_t n, uint64_t seed, bool mixed_sign) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(mixed_sign ? -1.0 : 0.05, 1.0);
  std::vector<double> q(static_cast<size_t>(n));
  for (double& v : q) v = u(rng);
  return q;
}

/// Checks every value against the promise; returns the largest error in the promise's units
/// (relative for positive weights, relative to sum|q| for mixed signs).
double check(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& q, int64_t n,
             bool mixed_sign, const std::string& label) {
  EXPECT_EQ(got.size(), ref.size()) << label;
  double abs_q = 0;
  for (int64_t i = 0; i < n; ++i) abs_q += q.empty() ? 1.0 : std::abs(q[size_t(i)]);
  double worst = 0;
  int reported = 0;
  for (size_t j = 0; j < std::min(got.size(), ref.size()); ++j) {
    const double scale = mixed_sign ? abs_q : std::abs(ref[j]);
    const double e = std::abs(got[j] - ref[j]);  // NaN fails every comparison below
    if (!(e <= 1e-5 * scale + 1e-30 * abs_q) && reported++ < 5)
      ADD_FAILURE() << label << ": target " << j << " = " << got[j] << ", reference " << ref[j];
    const double scaled = scale > 0 ? e / scale : e;
    worst = std::isnan(scaled) ? INFINITY : std::max(worst, scaled);
  }
  return worst;
}

/// prefix + n, spelled without operator+(const char*, std::string&&), on which GCC 12 raises a
/// false -Wrestrict.
std::string tagged(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

struct Case {
  int64_t d;
  double h;
  bool mixed_sign;
};

std::string name_of(const Case& c) {
  return tagged("d", c.d) + (c.h < 1 ? "_small_h" : "_large_h") + (c.mixed_sign ? "_mixed" : "_positive");
}

class GpuGaussAccuracy : public ::testing::TestWithParam<Case> {};

// n = 1000, m = 333: neither is a multiple of a tile (256 sources) or a block's targets.
TEST_P(GpuGaussAccuracy, MatchesFloat64Reference) {
  SIMKIT_REQUIRE_GPU();
  const Case c = GetParam();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  const Matrix<float> X = random_matrix(1000, c.d, seed), Y = random_matrix(333, c.d, seed + 1);
  const std::vector<double> q = random_weights(1000, seed + 2, c.mixed_sign);
  // The bandwidth grows with sqrt(d) so that "small" still leaves every target some mass. The
  // float exponent carries an absolute error of ~(d/2) ulp times |y - x|^2 / h^2; at d = 16, 20
  // with h = 0.1 sqrt(d) some targets' sums come from sources ~35 bandwidths^2 away, where a
  // float simulation of the kernel's arithmetic reaches 5e-6, half the budget: those get twice
  // the bandwidth, and d = 8, 11 (simulated 2e-6, 3e-6) keep the small one.
  const double h = (c.d > 11 ? 2 : 1) * c.h * std::sqrt(double(c.d));
  GaussReport report;
  const std::vector<double> got = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, kDirect, &report);
  EXPECT_EQ(report.method, GaussMethod::direct);
  const double e = check(got, reference_gauss(X, q, Y, h), q, 1000, c.mixed_sign, name_of(c));
  std::printf("  %-24s max error %.3g\n", name_of(c).c_str(), e);
}

std::vector<Case> accuracy_cases() {
  std::vector<Case> cases;
  for (int64_t d : {1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 20})
    for (double h : {0.1, 2.0})
      for (bool mixed : {false, true}) cases.push_back({d, h, mixed});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, GpuGaussAccuracy, ::testing::ValuesIn(accuracy_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// One target and 4099 sources: the sources are split across many blocks whose sums meet by
// atomicAdd; and the reverse, one source for many targets (a single, mostly padded tile).
TEST(GpuGauss, OneTargetOrOneSource) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  for (int64_t d : {1, 3, 8, 11, 20}) {
    std::string label = "d";
    label += std::to_string(d);
    {
      const Matrix<float> X = random_matrix(4099, d, seed), Y = random_matrix(1, d, seed + 1);
      const std::vector<double> q = random_weights(4099, seed + 2, false);
      const double h = 0.5 * std::sqrt(double(d));
      const auto got = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, kDirect);
      check(got, reference_gauss(X, q, Y, h), q, 4099, false, label + ", m = 1");
    }
    {
      const Matrix<float> X = random_matrix(1, d, seed + 3), Y = random_matrix(5003, d, seed + 4);
      const std::vector<double> q = {-0.75};
      const double h = 0.7 * std::sqrt(double(d));
      const auto got = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, kDirect);
      check(got, reference_gauss(X, q, Y, h), q, 1, true, label + ", n = 1");
    }
  }
}

// Enough targets (600,001 at d = 3: 586 blocks of 1024) that the sources are not split, with a
// partial last block and a partial last tile (n = 257): the plain-store path.
TEST(GpuGauss, ManyTargetsNoSplit) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  const Matrix<float> X = random_matrix(257, 3, seed), Y = random_matrix(600001, 3, seed + 1);
  const std::vector<double> q = random_weights(257, seed + 2, false);
  const auto got = gauss_transform(gpu_context(), X.view(), q, Y.view(), 0.4, kDirect);
  const double e = check(got, reference_gauss(X, q, Y, 0.4), q, 257, false, "600001 x 257");
  std::printf("  600001 targets x 257 sources, d = 3: max relative error %.3g\n", e);
}

// Data centred far from the origin with a bandwidth small against that offset: differences
// taken after scaling by 1/h would lose ~ulp(1000 / 0.05) = 1e-3 of the exponent.
TEST(GpuGauss, DataFarFromOrigin) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  for (int64_t d : {2, 3, 11}) {
    Matrix<float> X = random_matrix(700, d, seed), Y = random_matrix(300, d, seed + 1);
    for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = 1000.f + 0.2f * X.data()[i];
    for (int64_t i = 0; i < Y.size(); ++i) Y.data()[i] = 1000.f + 0.2f * Y.data()[i];
    const std::vector<double> q = random_weights(700, seed + 2, false);
    const double h = 0.05 * std::sqrt(double(d));
    const auto got = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, kDirect);
    const double e = check(got, reference_gauss(X, q, Y, h), q, 700, false, tagged("offset d", d));
    std::printf("  offset 1000, h = %.3g, d = %lld: max relative error %.3g\n", h, static_cast<long long>(d), e);
  }
}

// 2^20 sources all equal to the target, unit weights: every term is exactly 1, so the sum must
// be 2^20, which float accumulation over all sources would miss by far more than 1e-6.
TEST(GpuGauss, ErrorDoesNotGrowWithN) {
  SIMKIT_REQUIRE_GPU();
  const int64_t n = int64_t(1) << 20;
  Matrix<float> X(n, 3), Y(1, 3);
  for (int64_t i = 0; i < n; ++i) X(i, 0) = 0.25f, X(i, 1) = -0.5f, X(i, 2) = 2.0f;
  Y(0, 0) = 0.25f, Y(0, 1) = -0.5f, Y(0, 2) = 2.0f;
  const auto got =
      gauss_transform(gpu_context(), X.view(), std::vector<double>(size_t(n), 1.0), Y.view(), 0.3, kDirect);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LE(std::abs(got[0] - double(n)) / double(n), 1e-6) << got[0];
  // Weights left empty mean all ones.
  const auto ones = gauss_transform(gpu_context(), X.view(), {}, Y.view(), 0.3, kDirect);
  EXPECT_LE(std::abs(ones[0] - double(n)) / double(n), 1e-6) << ones[0];
}

// 2^20 random sources near 4 targets: terms of every size, each target summing a million of
// them; the error must stay at the level of the small cases.
TEST(GpuGauss, MillionSourcesMatchReference) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  const int64_t n = int64_t(1) << 20;
  const Matrix<float> X = random_matrix(n, 3, seed), Y = random_matrix(4, 3, seed + 1);
  const std::vector<double> q = random_weights(n, seed + 2, false);
  const auto got = gauss_transform(gpu_context(), X.view(), q, Y.view(), 0.3, kDirect);
  const double e = check(got, reference_gauss(X, q, Y, 0.3), q, n, false, "2^20 sources");
  std::printf("  2^20 sources x 4 targets, d = 3: max relative error %.3g\n", e);
}

// Inputs already on the device; the output on the host, and on the device as well.
TEST(GpuGauss, DeviceResidentInputs) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  for (int64_t d : {3, 8, 11, 20}) {
    const Matrix<float> X = random_matrix(2000, d, seed), Y = random_matrix(777, d, seed + 1);
    const std::vector<double> q = random_weights(2000, seed + 2, true);
    const Context ctx = gpu_context();
    const DeviceMatrix<float> dX(ctx, X.view()), dY(ctx, Y.view());
    const double h = 0.4 * std::sqrt(double(d));
    const auto got = gauss_transform(ctx, dX.view(), q, dY.view(), h, kDirect);
    check(got, reference_gauss(X, q, Y, h), q, 2000, true, tagged("device d", d));
    // Mixed: device sources, host targets.
    const auto mixed = gauss_transform(ctx, dX.view(), q, Y.view(), h, kDirect);
    check(mixed, reference_gauss(X, q, Y, h), q, 2000, true, tagged("device X, host Y d", d));
    // Everything on the device, the output included.
    DeviceMatrix<double> dG(ctx, 777, 1);
    gauss_transform(ctx, dX.view(), q, dY.view(), h, dG.view(), kDirect);
    std::vector<double> resident(777);
    dG.copy_to_host(MatrixView<double>(resident.data(), 777, 1));
    check(resident, reference_gauss(X, q, Y, h), q, 2000, true, tagged("device output d", d));
  }
}

// A memory budget too small for one pass: blocks of targets and of sources, the latter adding
// into the same output; progress is reported from the caller's thread and ends at 1.
TEST(GpuGauss, SmallBudgetForcesBlocks) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  for (int64_t d : {3, 20}) {
    const Matrix<float> X = random_matrix(5000, d, seed), Y = random_matrix(3001, d, seed + 1);
    const std::vector<double> q = random_weights(5000, seed + 2, false);
    Context ctx = gpu_context(64 * 1024);
    ProgressLog log(ctx);
    const double h = 0.3 * std::sqrt(double(d));
    const auto got = gauss_transform(ctx, X.view(), q, Y.view(), h, kDirect);
    check(got, reference_gauss(X, q, Y, h), q, 5000, false, tagged("budget d", d));
    log.expect_well_formed(tagged("budget d", d));
  }
}

// The two backends agree within the sum of their promises.
TEST(GpuGauss, AgreesWithCpuBackend) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE(tagged("seed ", seed));
  for (int64_t d : {1, 3, 8}) {
    const Matrix<float> X = random_matrix(3000, d, seed), Y = random_matrix(1234, d, seed + 1);
    const std::vector<double> q = random_weights(3000, seed + 2, false);
    const double h = 0.3 * std::sqrt(double(d));
    const auto gpu = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, kDirect);
    const auto cpu = gauss_transform(cpu_context(), X.view(), q, Y.view(), h, kDirect);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t j = 0; j < gpu.size(); ++j)
      ASSERT_LE(std::abs(gpu[j] - cpu[j]), 2e-5 * std::abs(cpu[j]) + 1e-30) << "d" << d << " target " << j;
  }
}

}  // namespace
}  // namespace simkit::test
