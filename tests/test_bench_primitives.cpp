// The host-side pieces of `simkit bench primitives` (apps/cli/bench_primitives.hpp): its inputs
// must have the shapes its tables claim, and its checks must catch a wrong result.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../apps/cli/bench_primitives.hpp"

namespace p = simkit::cli::bench::primitives;

TEST(BenchPrimitives, MergeInputsAreSortedHalvesOfTheRightShape) {
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{33}, int64_t{1} << 12}) {
    for (p::Pattern pat : {p::Pattern::random, p::Pattern::sorted, p::Pattern::reverse}) {
      const auto [a, b] = p::merge_input(n, pat, 7);
      ASSERT_EQ(int64_t(a.size() + b.size()), n);
      EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
      EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
      if (a.empty() || b.empty()) continue;
      if (pat == p::Pattern::sorted) {
        EXPECT_LT(a.back(), b.front()) << n;
      }
      if (pat == p::Pattern::reverse) {
        EXPECT_LT(b.back(), a.front()) << n;
      }
    }
  }
  // Random halves interleave and share keys (the stability case).
  const auto [a, b] = p::merge_input(1 << 12, p::Pattern::random, 7);
  std::vector<int32_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  EXPECT_GT(both.size(), 100u);
}

TEST(BenchPrimitives, SortInputsByPattern) {
  const auto up = p::sort_input(1000, p::Pattern::sorted, 1), down = p::sort_input(1000, p::Pattern::reverse, 1);
  EXPECT_TRUE(std::is_sorted(up.begin(), up.end()));
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend()));
  const auto random = p::sort_input(1000, p::Pattern::random, 1);
  EXPECT_FALSE(std::is_sorted(random.begin(), random.end()));
  EXPECT_LT(*std::min_element(random.begin(), random.end()), -(1 << 28));  // the whole int32 range
  EXPECT_GT(*std::max_element(random.begin(), random.end()), 1 << 28);
}

TEST(BenchPrimitives, PowerLawCsrHasTheAdvertisedShape) {
  const p::Csr A = p::power_law_csr(10000, 200000, 10000, 3);
  ASSERT_EQ(A.offsets.size(), 10001u);
  EXPECT_EQ(A.offsets.front(), 0);
  EXPECT_EQ(A.offsets.back(), 200000);
  EXPECT_TRUE(std::is_sorted(A.offsets.begin(), A.offsets.end()));
  EXPECT_EQ(A.offsets[5001] - A.offsets[5000], 10000);  // the long row, in the middle
  EXPECT_EQ(A.longest, 10000);
  EXPECT_EQ(A.indices.size(), 200000u);
  EXPECT_TRUE(std::all_of(A.indices.begin(), A.indices.end(), [](int32_t c) { return c >= 0 && c < 10000; }));
  // Power law: the other rows are skewed, the longest far above the mean of 19, the shortest below it.
  int64_t shortest = A.rows, second = 0;
  for (int64_t r = 0; r < A.rows; ++r) {
    const int64_t len = A.offsets[size_t(r) + 1] - A.offsets[size_t(r)];
    if (r != 5000) second = std::max(second, len), shortest = std::min(shortest, len);
  }
  EXPECT_GT(second, 200);
  EXPECT_LT(shortest, 10);
  EXPECT_THROW(p::power_law_csr(1, 10, 1, 0), simkit::Error);
  EXPECT_THROW(p::power_law_csr(100, 10, 50, 0), simkit::Error);  // long row above nnz
}

TEST(BenchPrimitives, SpmvErrorIsSmallForARightAnswerAndLargeForAWrongOne) {
  const p::Csr A = p::power_law_csr(2000, 20000, 500, 5);
  std::vector<float> x(2000), y(2000);
  for (size_t j = 0; j < x.size(); ++j) x[j] = float(j % 7) - 3.0f;
  for (int64_t r = 0; r < A.rows; ++r) {
    double s = 0;
    for (int32_t j = A.offsets[size_t(r)]; j < A.offsets[size_t(r) + 1]; ++j)
      s += double(A.values[size_t(j)]) * double(x[size_t(A.indices[size_t(j)])]);
    y[size_t(r)] = float(s);
  }
  EXPECT_LE(p::spmv_error(A, x, y), 6e-8);  // one rounding to float
  y[1000] += 1e-3f * (std::fabs(y[1000]) + 1.0f);
  EXPECT_GT(p::spmv_error(A, x, y), 1e-6);
  y[1000] = NAN;
  EXPECT_TRUE(std::isnan(p::spmv_error(A, x, y)));
}

TEST(BenchPrimitives, ScanChecksCatchOneWrongElement) {
  std::vector<int32_t> in = {INT32_MAX, 1, 5};  // wraps, as the primitives' integer sums do
  std::vector<int32_t> out = {INT32_MAX, INT32_MIN, INT32_MIN + 5};
  EXPECT_EQ(p::scan_mismatches(in, out), 0);
  out[2] += 1;
  EXPECT_EQ(p::scan_mismatches(in, out), 1);
  const std::vector<float> f = {1, 2, 3}, good = {1, 3, 6}, off = {1, 3, 6.001f};
  EXPECT_EQ(p::scan_error(f, good), 0);
  EXPECT_GT(p::scan_error(f, off), 1e-5);
}

TEST(BenchPrimitives, SmallestKTiesGoToTheLowerIndex) {
  const std::vector<float> row = {3, 1, 2, 1, 0, 2};
  const auto top = p::smallest_k(row.data(), int64_t(row.size()), 4);
  const std::vector<std::pair<float, int64_t>> want = {{0, 4}, {1, 1}, {1, 3}, {2, 2}};
  EXPECT_EQ(top, want);
}

TEST(BenchPrimitives, SizeLabels) {
  EXPECT_EQ(p::size_label(1 << 27), "2^27");
  EXPECT_EQ(p::size_label(1), "2^0");
  EXPECT_EQ(p::size_label(1000), "1000");
}
