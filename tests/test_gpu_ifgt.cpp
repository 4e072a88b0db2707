// The GPU IFGT against a float64 direct sum: the guarantee |G_ifgt(y) - G(y)| <= eps * sum|q|
// on every target, for every compiled dimension (d = 1..8), small and large bandwidths, tight
// clusters, degenerate and offset data, inputs and output on the device; fixed K and p; the
// refusal past d = 8 and auto's fallback; auto's choice where the IFGT is far cheaper; and
// agreement with the CPU IFGT. Skips where no CUDA device is visible.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "ifgt_check.hpp"

namespace simkit::test {
namespace {

Outcome check_case(const std::string& name, const Matrix<float>& X, const std::vector<double>& q,
                   const Matrix<float>& Y, double h, double eps) {
  return check_ifgt(gpu_context(), name, X, q, Y, h, eps);
}

double sum_abs(const std::vector<double>& q) {
  double s = 0;
  for (double w : q) s += std::fabs(w);
  return s;
}

TEST(GpuIfgt, UniformCubeMeetsEpsOnEveryTarget) {
  SIMKIT_REQUIRE_GPU();
  int feasible = 0;
  for (int64_t d = 1; d <= 8; ++d)
    for (double h : {0.3, 0.6, 1.2})
      for (double eps : {1e-3, 1e-6}) {
        const int64_t n = 3001 + 17 * d, m = 2011 - 13 * d;  // awkward sizes, n != m
        const auto seed = static_cast<uint32_t>(500 + 100 * d + 10 * h);
        const Matrix<float> X = uniform_points(n, d, seed), Y = uniform_points(m, d, seed + 1);
        char name[80];
        std::snprintf(name, sizeof name, "uniform d=%lld h=%.1f eps=%.0e", static_cast<long long>(d), h, eps);
        feasible += check_case(name, X, mixed_weights(n, seed + 2), Y, h, eps).feasible;
      }
  std::printf("  %d of 48 uniform cases feasible\n", feasible);
  EXPECT_GE(feasible, 24);
}

TEST(GpuIfgt, ClusteredDegenerateAndOffsetData) {
  SIMKIT_REQUIRE_GPU();
  for (int64_t d : {2, 3, 5}) {
    const Matrix<float> X = blob_points(4001, d, 6, 0.01, 31);
    Matrix<float> Y = blob_points(3001, d, 6, 0.01, 32);
    const Matrix<float> U = uniform_points(500, d, 33);
    for (int64_t j = 0; j < 500; ++j)
      for (int64_t c = 0; c < d; ++c) Y(j, c) = U(j, c);
    for (double h : {0.05, 0.3}) {
      const Outcome o = check_case("blobs d=" + std::to_string(d) + " h=" + std::to_string(h), X,
                                   mixed_weights(4001, 34), Y, h, 1e-6);
      if (d <= 3) {
        EXPECT_TRUE(o.feasible);
      }
    }
  }
  check_degenerate_data(check_case);
}

// Sources, targets and the output on the device, in every combination with the host.
TEST(GpuIfgt, DeviceResidentInputsAndOutput) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> X = uniform_points(5003, 3, 91), Y = uniform_points(2999, 3, 92);
  const std::vector<double> q = mixed_weights(5003, 93);
  const std::vector<double> want = reference(X, q, Y, 0.5);
  const DeviceMatrix<float> dX(ctx, X.view()), dY(ctx, Y.view());
  DeviceMatrix<double> dOut(ctx, Y.rows(), 1);
  GaussOptions opt;
  opt.method = GaussMethod::ifgt;
  for (int variant = 0; variant < 4; ++variant) {
    const MatrixView<const float> xs = variant & 1 ? dX.view() : X.view();
    const MatrixView<const float> ys = variant & 2 ? dY.view() : Y.view();
    std::vector<double> got(size_t(Y.rows()));
    GaussReport rep;
    if (variant == 3) {
      rep = gauss_transform(ctx, xs, q, ys, 0.5, dOut.view(), opt);
      dOut.copy_to_host(MatrixView<double>(got.data(), Y.rows(), 1));
    } else {
      rep = gauss_transform(ctx, xs, q, ys, 0.5, MatrixView<double>(got.data(), Y.rows(), 1), opt);
    }
    EXPECT_EQ(rep.method, GaussMethod::ifgt);
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_LE(std::fabs(got[j] - want[j]), opt.eps * sum_abs(q)) << "variant " << variant << " target " << j;
  }
}

TEST(GpuIfgt, FixedClustersAndOrder) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> X = uniform_points(4096, 4, 81), Y = uniform_points(3999, 4, 82);
  const std::vector<double> ones(4096, 1.0);
  const std::vector<double> want = reference(X, ones, Y, 1.0);
  GaussOptions opt;
  opt.method = GaussMethod::ifgt;
  opt.ifgt_clusters = 3;
  opt.ifgt_order = 14;
  GaussReport rep;
  const std::vector<double> got = gauss_transform(gpu_context(), X.view(), ones, Y.view(), 1.0, opt, &rep);
  EXPECT_EQ(rep.clusters, 3);
  EXPECT_EQ(rep.order, 14);
  double worst = 0;
  for (size_t j = 0; j < got.size(); ++j) worst = std::max(worst, std::fabs(got[j] - want[j]) / 4096.0);
  std::printf("  d = 4, K = 3, p = 14: bound %.3e, measured %.3e\n", rep.error_bound, worst);
  EXPECT_LE(worst, rep.error_bound + 1e-13);
}

// d = 9 has no GPU expansion: an explicit ifgt is refused with the reason, auto runs direct.
TEST(GpuIfgt, BeyondCompiledDimensionsRefusedAndAutoIsDirect) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> X = uniform_points(1000, 9, 95), Y = uniform_points(300, 9, 96);
  GaussOptions opt;
  opt.method = GaussMethod::ifgt;
  expect_error([&] { gauss_transform(gpu_context(), X.view(), {}, Y.view(), 3.0, opt); }, ErrorCode::invalid_argument,
               "the GPU IFGT is built for d <= 8");
  opt.method = GaussMethod::automatic;
  GaussReport rep;
  gauss_transform(gpu_context(), X.view(), {}, Y.view(), 3.0, opt, &rep);
  EXPECT_EQ(rep.method, GaussMethod::direct);
}

// 200,000 x 200,000 at d = 3, h = 0.5: the IFGT is predicted (and is) far cheaper than the direct
// sum, so auto must take it; checked on 2,000 targets.
TEST(GpuIfgt, AutoTakesTheIfgtWhereItIsFarCheaper) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> X = uniform_points(200000, 3, 97), Y = uniform_points(200000, 3, 98);
  const std::vector<double> q = mixed_weights(200000, 99);
  GaussOptions opt;
  opt.method = GaussMethod::automatic;
  GaussReport rep;
  const std::vector<double> got = gauss_transform(gpu_context(), X.view(), q, Y.view(), 0.5, opt, &rep);
  EXPECT_EQ(rep.method, GaussMethod::ifgt) << rep.note;
  Matrix<float> sample(2000, 3);
  for (int64_t j = 0; j < 2000; ++j)
    for (int64_t e = 0; e < 3; ++e) sample(j, e) = Y(j * 100, e);
  const std::vector<double> want = reference(X, q, sample, 0.5);
  double worst = 0;
  for (int64_t j = 0; j < 2000; ++j)
    worst = std::max(worst, std::fabs(got[size_t(j * 100)] - want[size_t(j)]) / sum_abs(q));
  std::printf("  200k d=3: K = %lld, p = %d, bound %.3e, measured %.3e (%s)\n", static_cast<long long>(rep.clusters),
              rep.order, rep.error_bound, worst, rep.note.c_str());
  EXPECT_LE(worst, opt.eps);
}

TEST(GpuIfgt, AgreesWithCpuIfgt) {
  SIMKIT_REQUIRE_GPU();
  for (int64_t d : {1, 3, 6}) {
    const Matrix<float> X = uniform_points(6000, d, 111), Y = uniform_points(1500, d, 112);
    const std::vector<double> q = mixed_weights(6000, 113);
    GaussOptions opt;
    opt.method = GaussMethod::ifgt;
    const double h = 0.4 * double(d);
    const auto gpu = gauss_transform(gpu_context(), X.view(), q, Y.view(), h, opt);
    const auto cpu = gauss_transform(cpu_context(), X.view(), q, Y.view(), h, opt);
    for (size_t j = 0; j < gpu.size(); ++j)
      ASSERT_LE(std::fabs(gpu[j] - cpu[j]), 2 * opt.eps * sum_abs(q)) << "d" << d << " target " << j;
  }
}

}  // namespace
}  // namespace simkit::test
