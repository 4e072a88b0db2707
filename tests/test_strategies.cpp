// The similarity study's strategies (bench/strategies/): every CPU strategy, and every GPU
// strategy at every launch size it is timed with, against a float64 reference written here
// independently of the study's code, for the four metrics, on awkward sizes (d = 1, odd d, a
// d past one tile, n not a multiple of any block) and on two kinds of data: standard normal and
// the digits set (real, non-negative integers: large means, the hard case for pearson_opt's
// one-pass algebra). The error is |value - reference| / max(|reference|, 1): relative for the
// distances, absolute for the correlations (bounded by 1); the study's tolerance is 1e-4.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <simkit/io.hpp>
#include <simkit/matrix.hpp>

#include "contexts.hpp"
#include "strategies.hpp"

#if SIMKIT_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace simkit::test {
namespace {

using strategies::StudyMetric;

constexpr StudyMetric kMetrics[] = {StudyMetric::euclidean, StudyMetric::cosine, StudyMetric::pearson,
                                    StudyMetric::pearson_opt};
constexpr double kTolerance = 1e-4;

double reference(StudyMetric metric, const float* a, const float* b, int64_t d) {
  if (metric == StudyMetric::euclidean) {
    double acc = 0;
    for (int64_t t = 0; t < d; ++t) acc += (double(a[t]) - b[t]) * (double(a[t]) - b[t]);
    return std::sqrt(acc);
  }
  double ma = 0, mb = 0;
  if (metric != StudyMetric::cosine) {
    for (int64_t t = 0; t < d; ++t) ma += a[t], mb += b[t];
    ma /= double(d), mb /= double(d);
  }
  double ab = 0, aa = 0, bb = 0;
  for (int64_t t = 0; t < d; ++t) {
    const double x = a[t] - ma, y = b[t] - mb;
    ab += x * y, aa += x * x, bb += y * y;
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

struct Case {
  std::string label;
  Matrix<float> Q, X;
};

Matrix<float> normal_rows(int64_t rows, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  Matrix<float> M(rows, d);
  for (int64_t i = 0; i < M.size(); ++i) M.data()[i] = normal(rng);
  return M;
}

Matrix<float> first_rows(const Matrix<float>& A, int64_t rows) {
  Matrix<float> M(rows, A.cols());
  std::copy_n(A.data(), rows * A.cols(), M.data());
  return M;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto [m, n, d] : {std::tuple<int64_t, int64_t, int64_t>{7, 53, 1}, {37, 101, 383}, {5, 70, 1027}})
    out.push_back({"normal " + std::to_string(m) + "x" + std::to_string(n) + " d=" + std::to_string(d),
                   normal_rows(m, d, uint64_t(d)), normal_rows(n, d, uint64_t(d) + 1)});
  const std::string dir = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/";
  out.push_back({"digits 29x211 d=64", first_rows(read_matrix(dir + "digits_query.fvecs"), 29),
                 first_rows(read_matrix(dir + "digits_base.fvecs"), 211)});
  return out;
}

/// The worst error of `out` (m x n) over every entry.
double worst_error(const Case& c, StudyMetric metric, const std::vector<float>& out) {
  const int64_t m = c.Q.rows(), n = c.X.rows(), d = c.Q.cols();
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double ref = reference(metric, c.Q.data() + i * d, c.X.data() + j * d, d);
      const double err = std::fabs(double(out[size_t(i * n + j)]) - ref) / std::max(std::fabs(ref), 1.0);
      if (std::isnan(err)) return err;
      worst = std::max(worst, err);
    }
  return worst;
}

TEST(Strategies, CpuStrategiesMatchFloat64) {
  double overall = 0;
  for (const Case& c : cases()) {
    const strategies::Problem p{c.Q.data(), c.Q.rows(), c.X.data(), c.X.rows(), c.Q.cols()};
    for (StudyMetric metric : kMetrics) {
      std::vector<float> out(size_t(p.m * p.n));
      const std::string what = c.label + " " + strategies::name(metric);
      strategies::cpu_serial(p, metric, out.data());
      const double serial = worst_error(c, metric, out);
      std::fill(out.begin(), out.end(), NAN);
      strategies::cpu_query_parallel(p, metric, out.data(), 3);
      const double parallel = worst_error(c, metric, out);
      std::fill(out.begin(), out.end(), NAN);
      strategies::cpu_dim_reduction(p, metric, out.data(), 3);
      const double reduced = worst_error(c, metric, out);
      EXPECT_LE(serial, kTolerance) << what << " serial";
      EXPECT_LE(parallel, kTolerance) << what << " query parallel";
      EXPECT_LE(reduced, kTolerance) << what << " dimension reduction";
      overall = std::max({overall, serial, parallel, reduced});
    }
  }
  std::printf("worst CPU error: %.2e\n", overall);
}

TEST(Strategies, MetricNamesRoundTrip) {
  for (StudyMetric metric : kMetrics) EXPECT_EQ(strategies::parse_study_metric(strategies::name(metric)), metric);
  EXPECT_THROW(strategies::parse_study_metric("manhattan"), std::invalid_argument);
}

#if SIMKIT_TEST_CUDA
TEST(StrategiesGpuOnly, EveryStrategyAndLaunchSizeMatchesFloat64) {
  SIMKIT_REQUIRE_GPU();
  ASSERT_EQ(strategies::gpu_strategies().size(), 6u);
  double overall = 0;
  for (const Case& c : cases()) {
    const int64_t m = c.Q.rows(), n = c.X.rows(), d = c.Q.cols();
    float *q = nullptr, *x = nullptr, *out = nullptr;
    ASSERT_EQ(cudaMalloc(&q, size_t(m * d) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&x, size_t(n * d) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, size_t(m * n) * 4), cudaSuccess);
    cudaMemcpy(q, c.Q.data(), size_t(m * d) * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(x, c.X.data(), size_t(n * d) * 4, cudaMemcpyHostToDevice);
    const strategies::Problem p{q, m, x, n, d};
    std::vector<float> host(size_t(m * n));
    for (const strategies::GpuStrategy& g : strategies::gpu_strategies())
      for (int block : g.blocks)
        for (StudyMetric metric : kMetrics) {
          cudaMemset(out, 0xff, size_t(m * n) * 4);  // NaN: an entry left unwritten fails
          g.run(p, metric, block, out);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << g.name << " " << block;
          cudaMemcpy(host.data(), out, host.size() * 4, cudaMemcpyDeviceToHost);
          const double err = worst_error(c, metric, host);
          EXPECT_LE(err, kTolerance) << c.label << " " << g.name << " block " << block << " "
                                     << strategies::name(metric);
          overall = std::max(overall, err);
        }
    cudaFree(q);
    cudaFree(x);
    cudaFree(out);
  }
  std::printf("worst GPU error: %.2e\n", overall);
}
#endif

}  // namespace
}  // namespace simkit::test
