// CPU exact k-NN against the float64 reference: every metric, k = 1 .. n, exact ties from
// duplicate rows and integer data, one query over a large base (the striped path), many
// queries (the per-tile path), thread-count independence and progress reports.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <simkit/knn.hpp>

#include "contexts.hpp"
#include "knn_check.hpp"
#include "reference.hpp"
#include "sweep.hpp"

namespace simkit::test {
namespace {

/// Two values closer than a fifth of the promised accuracy may come out in either order: still
/// several times the largest error test_pairwise_cpu measures (a few 1e-7), and narrow enough
/// that most positions are id-checked at large d, where 1031 values crowd into a narrow band.
constexpr double kNear = 0.2;

KnnCheck expect_matches_reference(const Matrix<float>& Q, const Matrix<float>& X, int64_t k, Metric metric,
                                  const KnnResult& r, Ties ties, const std::string& label) {
  return expect_knn_matches_reference(Q, X, k, metric, r, ties, kNear, label);
}

class KnnAccuracy : public MetricDimSweep {};

// m = 37 queries (one partial query tile), n = 1031 base rows (one full base tile and 7 rows),
// k from 1 to n; with 1 thread (one stripe) and 2 threads (two stripes merged), bitwise equal.
TEST_P(KnnAccuracy, MatchesFloat64Reference) {
  const auto [metric, d] = GetParam();
  const Matrix<float> Q = inputs_for(metric, 37, d, seed), X = inputs_for(metric, 1031, d, seed + 1);
  KnnCheck total;
  for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{515}, int64_t{1031}}) {
    const std::string label = name_of(metric, d) + " k=" + std::to_string(k);
    const KnnResult one = knn(cpu_context(1), Q.view(), X.view(), k, metric);
    const KnnResult two = knn(cpu_context(2), Q.view(), X.view(), k, metric);
    expect_same_bits(one, two, label + " 1 vs 2 threads");
    const KnnCheck st = expect_matches_reference(Q, X, k, metric, two, Ties::near_ok, label);
    total.positions += st.positions, total.ids_checked += st.ids_checked;
  }
  std::printf("  %-16s ids compared at %lld of %lld positions (the rest are near-ties)\n", name_of(metric, d).c_str(),
              static_cast<long long>(total.ids_checked), static_cast<long long>(total.positions));
  // With d >= 3 random data, near-ties are rare; the id comparison must not be vacuous.
  if (d >= 3) {
    EXPECT_GT(total.ids_checked, total.positions * 9 / 10);
  }
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, KnnAccuracy,
                         ::testing::Combine(::testing::ValuesIn(kMetrics), ::testing::ValuesIn(kAwkwardDims)),
                         MetricDimName{});

// k = n is the full ranking of the base for every query.
TEST(KnnCpu, FullRankingWhenKIsN) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = random_matrix(5, 9, seed + 2);
  const Matrix<float> X = random_matrix(2100, 9, seed + 3);
  for (Metric metric : kMetrics) {
    const KnnResult r = knn(cpu_context(), Q.view(), X.view(), X.rows(), metric);
    for (int64_t i = 0; i < Q.rows(); ++i) {
      std::vector<int64_t> ids(&r.ids(i, 0), &r.ids(i, 0) + X.rows());
      std::sort(ids.begin(), ids.end());
      for (int64_t j = 0; j < X.rows(); ++j) ASSERT_EQ(ids[size_t(j)], j) << to_string(metric) << " query " << i;
    }
    expect_matches_reference(Q, X, X.rows(), metric, r, Ties::near_ok, std::string(to_string(metric)) + " k=n");
  }
}

// Duplicated base rows tie exactly under every metric; they must come out by increasing id,
// and a query equal to a duplicated row finds all its copies first (distance exactly 0).
TEST(KnnCpu, DuplicatesTieToLowerId) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n = 1031, d = 24;
  const Matrix<float> distinct = random_matrix(700, d, seed + 4);
  Matrix<float> X(n, d);
  std::mt19937_64 rng(seed + 5);
  for (int64_t j = 0; j < n; ++j) {
    // Every row is one of the first 150 distinct rows with probability 1/2: many groups of
    // several identical rows scattered over both base tiles.
    const int64_t src = rng() % 2 ? static_cast<int64_t>(rng() % 150) : 150 + static_cast<int64_t>(rng() % 550);
    std::memcpy(&X(j, 0), &distinct(src, 0), size_t(d) * sizeof(float));
  }
  Matrix<float> Q = random_matrix(30, d, seed + 6);
  for (int64_t i = 0; i < 10; ++i) std::memcpy(&Q(i, 0), &distinct(i, 0), size_t(d) * sizeof(float));
  for (Metric metric : kMetrics) {
    Matrix<float> Qm = Q, Xm = X;
    if (metric == Metric::dot) normalize_rows(Qm), normalize_rows(Xm);
    for (int64_t k : {int64_t{1}, int64_t{10}, int64_t{100}, n}) {
      const std::string label = std::string(to_string(metric)) + " duplicates k=" + std::to_string(k);
      const KnnResult r = knn(cpu_context(), Qm.view(), Xm.view(), k, metric);
      expect_matches_reference(Qm, Xm, k, metric, r, Ties::exact, label);
      // Equal rows adjacent in the answer must be in id order.
      for (int64_t i = 0; i < Q.rows(); ++i)
        for (int64_t p = 1; p < k; ++p) {
          const int64_t a = r.ids(i, p - 1), b = r.ids(i, p);
          if (std::memcmp(&Xm(a, 0), &Xm(b, 0), size_t(d) * sizeof(float)) == 0) {
            ASSERT_LT(a, b) << label << ": query " << i << " positions " << p - 1 << ", " << p;
          }
        }
    }
  }
  // A query equal to base rows: under l2, sqeuclidean and l1 its copies come first at exactly 0.
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::l1}) {
    const KnnResult r = knn(cpu_context(), Q.view(), X.view(), 3, metric);
    for (int64_t i = 0; i < 10; ++i) {
      std::vector<int64_t> copies;
      for (int64_t j = 0; j < n && copies.size() < 3; ++j)
        if (std::memcmp(&X(j, 0), &distinct(i, 0), size_t(d) * sizeof(float)) == 0) copies.push_back(j);
      for (size_t p = 0; p < copies.size(); ++p) {
        EXPECT_EQ(r.ids(i, int64_t(p)), copies[p]) << to_string(metric) << " query " << i;
        EXPECT_EQ(r.values(i, int64_t(p)), 0.0f) << to_string(metric) << " query " << i;
      }
    }
  }
}

// Small whole numbers (as in the digits data): distances and dot products are exact in float32
// and tie exactly all the time; the ids must equal the float64 ranking with ties to the lower
// id, row for row.
TEST(KnnCpu, IntegerDataTiesExactly) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = integer_matrix(40, 8, 4, seed + 7);
  const Matrix<float> X = integer_matrix(3000, 8, 4, seed + 8);
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::dot, Metric::l1}) {
    for (int64_t k : {int64_t{1}, int64_t{50}, int64_t{1500}}) {
      const KnnResult r = knn(cpu_context(), Q.view(), X.view(), k, metric);
      const ReferenceKnn ref = reference_knn(Q, X, k, metric);
      for (int64_t i = 0; i < Q.rows(); ++i)
        for (int64_t p = 0; p < k; ++p) {
          ASSERT_EQ(r.ids(i, p), ref.ids[size_t(i)][size_t(p)])
              << to_string(metric) << " k=" << k << " query " << i << " position " << p;
          ASSERT_EQ(r.values(i, p), static_cast<float>(ref.values[size_t(i)][size_t(p)]));
        }
    }
  }
}

// One query over 50,000 rows: the base is cut into stripes so that every thread works, and
// the stripes' selections are merged. Same bits as the single-stripe (1 thread) run.
TEST(KnnCpu, SingleQueryLargeBase) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Qm = inputs_for(metric, 1, 16, seed + 9), Xm = inputs_for(metric, 50000, 16, seed + 10);
    for (int64_t k : {int64_t{1}, int64_t{10}, int64_t{1000}}) {
      const std::string label = std::string(to_string(metric)) + " m=1 n=50000 k=" + std::to_string(k);
      const KnnResult one = knn(cpu_context(1), Qm.view(), Xm.view(), k, metric);
      for (int threads : {2, 3, 8}) {
        const KnnResult many = knn(cpu_context(threads), Qm.view(), Xm.view(), k, metric);
        expect_same_bits(one, many, label + " 1 vs " + std::to_string(threads) + " threads");
      }
      expect_matches_reference(Qm, Xm, k, metric, one, Ties::near_ok, label);
    }
  }
}

// Enough queries for one stripe per query tile with 2 threads (9 tiles of 256), n crossing
// base tiles.
TEST(KnnCpu, ManyQueries) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Qm = inputs_for(metric, 2100, 12, seed + 11), Xm = inputs_for(metric, 1500, 12, seed + 12);
    const std::string label = std::string(to_string(metric)) + " m=2100 n=1500 k=5";
    const KnnResult two = knn(cpu_context(2), Qm.view(), Xm.view(), 5, metric);
    expect_same_bits(knn(cpu_context(1), Qm.view(), Xm.view(), 5, metric), two, label + " 1 vs 2 threads");
    expect_matches_reference(Qm, Xm, 5, metric, two, Ties::near_ok, label);
  }
}

// Near neighbours far from the origin: the expanded squared distance cancels completely, yet
// the ranking and values come out as in float64.
TEST(KnnCpu, FarFromOrigin) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Matrix<float> Q = random_matrix(20, 64, seed + 13);
  Matrix<float> X = random_matrix(2000, 64, seed + 14);
  for (Matrix<float>* A : {&Q, &X})
    for (int64_t e = 0; e < A->size(); ++e) A->data()[e] = 1000.f + 0.01f * A->data()[e];
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::l1, Metric::pearson}) {
    const KnnResult r = knn(cpu_context(), Q.view(), X.view(), 20, metric);
    const KnnCheck st =
        expect_matches_reference(Q, X, 20, metric, r, Ties::near_ok, std::string(to_string(metric)) + " offset 1000");
    EXPECT_GT(st.ids_checked, st.positions * 9 / 10);
  }
}

// The caller-provided output form fills exactly the views it is given.
TEST(KnnCpu, WritesIntoCallerOutputs) {
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(7, 5, seed + 15);
  const Matrix<float> X = random_matrix(300, 5, seed + 16);
  Matrix<float> values(7, 4, -1.f);
  Matrix<int64_t> ids(7, 4, -1);
  knn(cpu_context(), Q.view(), X.view(), 4, Metric::cosine, values.view(), ids.view());
  const KnnResult r = knn(cpu_context(), Q.view(), X.view(), 4, Metric::cosine);
  EXPECT_EQ(std::memcmp(values.data(), r.values.data(), sizeof(float) * 28), 0);
  EXPECT_EQ(std::memcmp(ids.data(), r.ids.data(), sizeof(int64_t) * 28), 0);
}

// Progress reports come from the calling thread only, never decrease and end at 1.
TEST(KnnCpu, ProgressFromCallingThread) {
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(3, 16, seed + 17);
  const Matrix<float> X = random_matrix(60000, 16, seed + 18);
  for (int threads : {1, 2}) {
    Context ctx = cpu_context(threads);
    const ProgressLog log(ctx);
    (void)knn(ctx, Q.view(), X.view(), 10, Metric::l2);
    log.expect_well_formed(std::to_string(threads) + " threads");
  }
}

}  // namespace
}  // namespace simkit::test
