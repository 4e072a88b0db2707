// The device-free logic behind `simkit bench`: statistics, FLOP counts, float64 references,
// recall, the text table and the CSV format that bench/compare.py reads.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../apps/cli/bench_harness.hpp"

namespace b = simkit::cli::bench;
using simkit::Matrix;
using simkit::Metric;

TEST(BenchHarness, MedianOddEvenMinMax) {
  const b::Stats odd = b::summarize({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.median_ms, 3);
  EXPECT_DOUBLE_EQ(odd.min_ms, 1);
  EXPECT_DOUBLE_EQ(odd.max_ms, 5);
  EXPECT_EQ(odd.runs, 3);
  const b::Stats even = b::summarize({4, 1, 3, 10});
  EXPECT_DOUBLE_EQ(even.median_ms, 3.5);
  EXPECT_DOUBLE_EQ(even.max_ms, 10);
  EXPECT_DOUBLE_EQ(b::summarize({2}).median_ms, 2);
  EXPECT_THROW(b::summarize({}), simkit::Error);
}

TEST(BenchHarness, TimeRunsCallsWarmupPlusRepeat) {
  int calls = 0;
  const auto ms = b::time_runs([&] { ++calls; }, 2, 5);
  EXPECT_EQ(calls, 7);
  ASSERT_EQ(ms.size(), 5u);
  for (double t : ms) EXPECT_GE(t, 0);
}

TEST(BenchHarness, Gflops) {
  // 1000 x 10000 x 1000 product: 2e10 FLOP; in 1 ms that is 2e13 FLOP/s = 20,000 GFLOP/s.
  EXPECT_NEAR(b::gflops(1000, 10000, 1000, 1.0), 20000.0, 1e-6);
  EXPECT_EQ(b::gflops(1, 1, 1, 0.0), 0.0);
}

TEST(BenchHarness, SampleRowsSpreadAndClamp) {
  EXPECT_EQ(b::sample_rows(100, 3), (std::vector<int64_t>{0, 49, 99}));
  EXPECT_EQ(b::sample_rows(4, 10), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(b::sample_rows(7, 1), (std::vector<int64_t>{0}));
  EXPECT_TRUE(b::sample_rows(0, 5).empty());
}

TEST(BenchHarness, ReferenceValuesByHand) {
  const float q[3] = {1, 2, 3}, x[3] = {4, 6, 3};
  EXPECT_DOUBLE_EQ(b::reference_value(q, x, 3, Metric::sqeuclidean), 25);
  EXPECT_DOUBLE_EQ(b::reference_value(q, x, 3, Metric::l2), 5);
  EXPECT_DOUBLE_EQ(b::reference_value(q, x, 3, Metric::l1), 7);
  EXPECT_DOUBLE_EQ(b::reference_value(q, x, 3, Metric::dot), 25);
  EXPECT_NEAR(b::reference_value(q, x, 3, Metric::cosine), 25 / (std::sqrt(14.0) * std::sqrt(61.0)), 1e-15);
  // Centred: q -> (-1, 0, 1), x -> (-0.333.., 1.666.., -1.333..): dot = -1, |q| = sqrt 2,
  // |x| = sqrt(42/9).
  EXPECT_NEAR(b::reference_value(q, x, 3, Metric::pearson), -1 / (std::sqrt(2.0) * std::sqrt(42.0 / 9)), 1e-15);
  const float flat[3] = {2, 2, 2};
  EXPECT_EQ(b::reference_value(q, flat, 3, Metric::pearson), 0);
}

TEST(BenchHarness, MaxErrorAbsoluteRelativeAndNan) {
  Matrix<float> Q(2, 2), X(3, 2);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < Q.size(); ++i) Q.data()[i] = u(gen);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = u(gen);
  Matrix<float> out(2, 3);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) out(i, j) = float(b::reference_value(&Q(i, 0), &X(j, 0), 2, Metric::cosine));
  EXPECT_LT(b::max_error(Q.view(), X.view(), Metric::cosine, out.view(), {0, 1}), 1e-7);
  out(1, 2) += 0.01f;
  EXPECT_NEAR(b::max_error(Q.view(), X.view(), Metric::cosine, out.view(), {0, 1}), 0.01, 1e-6);
  EXPECT_LT(b::max_error(Q.view(), X.view(), Metric::cosine, out.view(), {0}), 1e-7);  // row 1 unsampled
  out(0, 0) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(b::max_error(Q.view(), X.view(), Metric::cosine, out.view(), {0})));
  EXPECT_EQ(b::count_non_finite(out.view()), 1);

  // Relative for distances: 1% off a distance of 100 is 0.01.
  Matrix<float> q1(1, 1, 0.f), x1(1, 1, 100.f), o1(1, 1, 101.f);
  EXPECT_NEAR(b::max_error(q1.view(), x1.view(), Metric::l2, o1.view(), {0}), 0.01, 1e-9);
}

TEST(BenchHarness, ReferenceKnnMatchesSortAndBreaksTiesByLowerId) {
  // Points on a line at 0, 1, 2, ... with two copies of 3: from q = 3 the order is 3, 3', 2|4 ...
  Matrix<float> X(8, 1);
  const float pos[8] = {0, 1, 2, 3, 4, 5, 3, 7};
  for (int i = 0; i < 8; ++i) X(i, 0) = pos[i];
  const float q = 3;
  for (int threads : {1, 3}) {
    const auto ids = b::reference_knn_row(&q, X.view(), 4, Metric::sqeuclidean, threads);
    EXPECT_EQ(ids, (std::vector<int64_t>{3, 6, 2, 4})) << threads << " threads";
    const auto sim = b::reference_knn_row(&q, X.view(), 2, Metric::dot, threads);
    EXPECT_EQ(sim, (std::vector<int64_t>{7, 5})) << threads << " threads";
  }
}

TEST(BenchHarness, Recall) {
  const int64_t a[4] = {1, 2, 3, 4}, same[4] = {4, 3, 2, 1}, half[4] = {1, 2, 8, 9};
  EXPECT_DOUBLE_EQ(b::recall_row(a, same, 4), 1.0);
  EXPECT_DOUBLE_EQ(b::recall_row(a, half, 4), 0.5);
}

TEST(BenchHarness, CsvLineMatchesHeader) {
  b::Row r;
  r.suite = "pairwise";
  r.case_name = "seed0-d384";
  r.metric = "cosine";
  r.m = 1000, r.n = 10000, r.d = 384, r.k = 0;
  r.device = "gpu";
  r.stats = b::summarize({0.5, 0.25, 1.0});
  r.gflops = 15360.04;
  r.pct_peak = 23.04;
  r.error = 1.25e-7;
  r.check = "PASS";
  EXPECT_EQ(b::csv_line(r),
            "pairwise,seed0-d384,cosine,1000,10000,384,0,gpu,0.5000,0.2500,1.0000,15360.0,23.0,1.25e-07,PASS");
  r.pct_peak.reset();
  r.case_name = "a,\"b\"";
  EXPECT_EQ(b::csv_line(r),
            "pairwise,\"a,\"\"b\"\"\",cosine,1000,10000,384,0,gpu,0.5000,0.2500,1.0000,15360.0,,1.25e-07,PASS");
  const std::string header = b::csv_header();
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 14);
  const std::string doc = b::csv_document({r, r});
  EXPECT_EQ(std::count(doc.begin(), doc.end(), '\n'), 3);
}

TEST(BenchHarness, TableAlignsColumns) {
  const b::TablePrinter t({{"name", 6, false}, {"ms", 6, true}});
  EXPECT_EQ(t.header(), "name        ms\n------  ------");
  EXPECT_EQ(t.row({"ab", "1.5"}), "ab         1.5");
  EXPECT_EQ(t.row({"abcdefgh", "2"}), "abcdefgh       2");  // too wide: pushes right, never cut
  EXPECT_EQ(t.row({"x"}), "x");                             // missing cells are blank, no trailing space
}

TEST(BenchHarness, ParseIntList) {
  EXPECT_EQ(b::parse_int_list("128,768", "--cases"), (std::vector<int64_t>{128, 768}));
  EXPECT_EQ(b::parse_int_list("768", "--cases"), (std::vector<int64_t>{768}));
  EXPECT_THROW(b::parse_int_list("128,", "--cases"), simkit::Error);
  EXPECT_THROW(b::parse_int_list("12x", "--cases"), simkit::Error);
  EXPECT_THROW(b::parse_int_list("", "--cases"), simkit::Error);
}
