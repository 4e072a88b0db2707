// The low-dimensional point tree (knn(method = tree), radius_search) against brute force: the
// same ids, order and values on uniform, clustered, duplicate-heavy and collinear sets in
// d = 2, 3, 5, 8, for l2 and sqeuclidean and k = 1, 10, 100; radius lists against the brute
// ranking cut at the radius; caps; packet sizes that change nothing; refusals.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/radius.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "point_shapes.hpp"
#include "spatial/tree_search.hpp"

namespace simkit::test {
namespace {

struct Case {
  Shape shape;
  int64_t d;
};

class TreeKnn : public ::testing::TestWithParam<Case> {};

/// The k best (float64 squared distance, id) pairs of query row q, every row scored.
std::vector<std::pair<double, int64_t>> ranked(const Matrix<float>& Q, int64_t q, const Matrix<float>& X, int64_t k) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < X.rows(); ++j) {
    double s = 0;
    for (int64_t c = 0; c < X.cols(); ++c) s += (double(Q(q, c)) - X(j, c)) * (double(Q(q, c)) - X(j, c));
    all.emplace_back(s, j);
  }
  std::partial_sort(all.begin(), all.begin() + k, all.end());
  all.resize(size_t(k));
  return all;
}

TEST_P(TreeKnn, EqualsBruteForceAndTheFloat64Ranking) {
  const auto [shape, d] = GetParam();
  const Context ctx = cpu_context(2);
  const Matrix<float> X = points(shape, 3001, d, 7 + uint64_t(d)), Q = points(shape, 257, d, 70 + uint64_t(d));
  for (Metric metric : {Metric::l2, Metric::sqeuclidean})
    for (int64_t k : {1, 10, 100}) {
      const KnnResult tree = knn(ctx, Q.view(), X.view(), k, metric, KnnMethod::tree);
      // Every row scored in float64 and sorted by (key, id): the rule both methods promise.
      for (int64_t q = 0; q < Q.rows(); q += 16) {
        const auto want = ranked(Q, q, X, k);
        for (int64_t c = 0; c < k; ++c) {
          ASSERT_EQ(tree.ids(q, c), want[size_t(c)].second) << name(shape) << " d " << d << " k " << k << " q " << q;
          const double v = metric == Metric::l2 ? std::sqrt(want[size_t(c)].first) : want[size_t(c)].first;
          ASSERT_EQ(tree.values(q, c), float(v));
        }
      }
      const KnnResult brute = knn(ctx, Q.view(), X.view(), k, metric, KnnMethod::brute);
      ASSERT_TRUE(std::equal(brute.ids.data(), brute.ids.data() + brute.ids.size(), tree.ids.data()))
          << name(shape) << " d " << d << " " << to_string(metric) << " k " << k;
      ASSERT_TRUE(std::equal(brute.values.data(), brute.values.data() + brute.values.size(), tree.values.data()))
          << name(shape) << " d " << d << " " << to_string(metric) << " k " << k;
    }
}

TEST_P(TreeKnn, RadiusListsAreTheBruteRankingCutAtTheRadius) {
  const auto [shape, d] = GetParam();
  const Context ctx = cpu_context(2);
  const Matrix<float> X = points(shape, 1500, d, 17 + uint64_t(d)), Q = points(shape, 60, d, 170 + uint64_t(d));
  for (Metric metric : {Metric::l2, Metric::sqeuclidean}) {
    const KnnResult all = knn(ctx, Q.view(), X.view(), X.rows(), metric, KnnMethod::brute);
    // The radius of the 20th neighbour of query 0, a little widened: lists of a few dozen.
    const double radius = double(all.values(0, 19)) * 1.0001;
    const RadiusResult r = radius_search(ctx, Q.view(), X.view(), radius, metric);
    ASSERT_EQ(r.offsets.size(), size_t(Q.rows() + 1));
    EXPECT_EQ(r.capped, 0);
    for (int64_t i = 0; i < Q.rows(); ++i) {
      int64_t want = 0;  // the brute ranking up to the radius (values are the same float64 rounded)
      while (want < X.rows() && double(all.values(i, want)) <= radius) ++want;
      const int64_t got = r.offsets[size_t(i) + 1] - r.offsets[size_t(i)];
      ASSERT_EQ(got, want) << name(shape) << " d " << d << " " << to_string(metric) << " query " << i;
      for (int64_t p = 0; p < got; ++p) {
        ASSERT_EQ(r.ids[size_t(r.offsets[size_t(i)] + p)], all.ids(i, p));
        ASSERT_EQ(r.values[size_t(r.offsets[size_t(i)] + p)], all.values(i, p));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TreeKnn,
                         ::testing::Values(Case{Shape::uniform, 2}, Case{Shape::uniform, 3}, Case{Shape::uniform, 5},
                                           Case{Shape::uniform, 8}, Case{Shape::clustered, 3},
                                           Case{Shape::clustered, 8}, Case{Shape::duplicates, 2},
                                           Case{Shape::duplicates, 3}, Case{Shape::collinear, 3},
                                           Case{Shape::collinear, 5}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(name(info.param.shape)) + "_d" + std::to_string(info.param.d);
                         });

TEST(TreeRadius, TinyRadiiAreEmptyAndCapsAreReported) {
  const Context ctx = cpu_context(2);
  const Matrix<float> X = points(Shape::uniform, 2000, 3, 1), Q = points(Shape::uniform, 50, 3, 2);
  const RadiusResult none = radius_search(ctx, Q.view(), X.view(), 1e-9);
  EXPECT_EQ(none.offsets.back(), 0);
  EXPECT_EQ(none.capped, 0);
  const RadiusResult wide = radius_search(ctx, Q.view(), X.view(), 0.5);
  const RadiusResult cut = radius_search(ctx, Q.view(), X.view(), 0.5, Metric::l2, 5);
  int64_t over = 0;
  for (int64_t i = 0; i < Q.rows(); ++i) {
    const int64_t have = wide.offsets[size_t(i) + 1] - wide.offsets[size_t(i)];
    over += have > 5;
    const int64_t kept = cut.offsets[size_t(i) + 1] - cut.offsets[size_t(i)];
    ASSERT_EQ(kept, std::min<int64_t>(have, 5));
    for (int64_t p = 0; p < kept; ++p)  // the nearest ones, in order
      ASSERT_EQ(cut.ids[size_t(cut.offsets[size_t(i)] + p)], wide.ids[size_t(wide.offsets[size_t(i)] + p)]);
  }
  EXPECT_GT(over, 0);
  EXPECT_EQ(cut.capped, over);
}

TEST(TreeKnnPackets, EveryPacketSizeGivesTheSameAnswer) {
  const Context ctx = cpu_context(2);
  const Matrix<float> X = points(Shape::clustered, 5000, 3, 3), Q = points(Shape::uniform, 300, 3, 4);
  const detail::spatial::PointTree tree = detail::spatial::build_point_tree(ctx, X.view(), 16);
  const detail::MetricPlan plan = detail::plan_metric(Metric::l2);
  Matrix<float> v1(300, 16), v(300, 16);
  Matrix<int64_t> i1(300, 16), i(300, 16);
  const auto alone = detail::spatial::cpu::tree_knn(ctx, tree, Q.view(), 16, plan, v1.data(), i1.data(), 1);
  for (int64_t packet : {8, 32, 64}) {
    const auto s = detail::spatial::cpu::tree_knn(ctx, tree, Q.view(), 16, plan, v.data(), i.data(), packet);
    EXPECT_TRUE(std::equal(i1.data(), i1.data() + i1.size(), i.data())) << packet;
    EXPECT_TRUE(std::equal(v1.data(), v1.data() + v1.size(), v.data())) << packet;
    std::printf("packet %2lld: %lld packets, %.1f node fetches per query (alone %.1f), %.0f pairs per query\n",
                (long long)packet, (long long)s.packets, double(s.node_visits) / 300, double(alone.node_visits) / 300,
                double(s.pairs) / 300);
    EXPECT_LT(s.node_visits, alone.node_visits) << "a node is fetched once per packet";
  }
}

TEST(TreeKnn, RefusalsAndBadInput) {
  const Context ctx = cpu_context(2);
  const Matrix<float> X = points(Shape::uniform, 100, 3, 5), Q = points(Shape::uniform, 10, 3, 6);
  expect_error([&] { knn(ctx, Q.view(), X.view(), 5, Metric::cosine, KnnMethod::tree); }, ErrorCode::unsupported,
               "l2 and sqeuclidean");
  const Matrix<float> X9 = points(Shape::uniform, 100, 9, 5), Q9 = points(Shape::uniform, 10, 9, 6);
  expect_error([&] { knn(ctx, Q9.view(), X9.view(), 5, Metric::l2, KnnMethod::tree); }, ErrorCode::unsupported,
               "d <= 8");
  expect_error([&] { knn(ctx, Q.view(), X.view(), 101, Metric::l2, KnnMethod::tree); }, ErrorCode::invalid_argument,
               "exceeds the base size");
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), -1.0); }, ErrorCode::invalid_argument, "radius");
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), NAN); }, ErrorCode::invalid_argument, "radius");
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), 0.1, Metric::l2, -1); }, ErrorCode::invalid_argument,
               "max_neighbors");
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), 0.1, Metric::dot); }, ErrorCode::unsupported,
               "l2 and sqeuclidean");
  Matrix<float> bad = X;
  bad(7, 1) = NAN;
  expect_error([&] { radius_search(ctx, Q.view(), bad.view(), 0.1); }, ErrorCode::invalid_argument, "NaN");
  expect_error([&] { knn(ctx, Q.view(), bad.view(), 5, Metric::l2, KnnMethod::tree); }, ErrorCode::invalid_argument,
               "NaN");
}

}  // namespace
}  // namespace simkit::test
