// The point tree on the GPU (knn(method = tree), knn_tree, radius_search with a GPU context):
// against the GPU's brute force on device-resident rows (whose float64 re-score sums in the same
// order), and against every row scored on the host in that order, on uniform, clustered,
// duplicate-heavy and collinear sets in d = 2, 3, 5, 8, for l2 and sqeuclidean and k = 1, 10,
// 100; awkward sizes; every packet size; radius lists, caps, tiny radii; refusals. Every test
// skips itself where no GPU answers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/radius.hpp>
#include <simkit/tree.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "point_shapes.hpp"

namespace simkit::test {
namespace {

/// The float64 squared distance summed as the device re-score sums it (a lane per coordinate,
/// then a butterfly: terms c and c + 4, then + 2, then + 1), so ties and near-ties fall exactly
/// as on the GPU.
double device_key(const Matrix<float>& Q, int64_t q, const Matrix<float>& X, int64_t j) {
  double s[8] = {};
  for (int64_t c = 0; c < X.cols(); ++c) {
    const double e = double(Q(q, c)) - double(X(j, c));
    s[c] = e * e;
  }
  for (int o = 4; o > 0; o /= 2)
    for (int i = 0; i < o; ++i) s[i] = s[i] + s[i + o];
  return s[0];
}

/// Every row of X ranked for query q by (device key, id).
std::vector<std::pair<double, int64_t>> ranked(const Matrix<float>& Q, int64_t q, const Matrix<float>& X) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < X.rows(); ++j) all.emplace_back(device_key(Q, q, X, j), j);
  std::sort(all.begin(), all.end());
  return all;
}

float value_of(Metric metric, double key) { return float(metric == Metric::l2 ? std::sqrt(key) : key); }

struct Case {
  Shape shape;
  int64_t d;
};

class GpuTreeKnn : public ::testing::TestWithParam<Case> {};

TEST_P(GpuTreeKnn, EqualsTheRankingAndTheGpuBruteForce) {
  SIMKIT_REQUIRE_GPU();
  const auto [shape, d] = GetParam();
  const Context ctx = gpu_context();
  const Matrix<float> X = points(shape, 3001, d, 7 + uint64_t(d)), Q = points(shape, 257, d, 70 + uint64_t(d));
  const DeviceMatrix<float> dX(ctx, X.view()), dQ(ctx, Q.view());
  for (Metric metric : {Metric::l2, Metric::sqeuclidean})
    for (int64_t k : {1, 10, 100}) {
      const KnnResult tree = knn(ctx, dQ.view(), dX.view(), k, metric, KnnMethod::tree);
      for (int64_t q = 0; q < Q.rows(); q += 8) {
        const auto want = ranked(Q, q, X);
        for (int64_t c = 0; c < k; ++c) {
          ASSERT_EQ(tree.ids(q, c), want[size_t(c)].second) << name(shape) << " d " << d << " k " << k << " q " << q;
          ASSERT_EQ(tree.values(q, c), value_of(metric, want[size_t(c)].first));
        }
      }
      const KnnResult brute = knn(ctx, dQ.view(), dX.view(), k, metric, KnnMethod::brute);
      ASSERT_TRUE(std::equal(brute.ids.data(), brute.ids.data() + brute.ids.size(), tree.ids.data()))
          << name(shape) << " d " << d << " " << to_string(metric) << " k " << k;
      ASSERT_TRUE(std::equal(brute.values.data(), brute.values.data() + brute.values.size(), tree.values.data()))
          << name(shape) << " d " << d << " " << to_string(metric) << " k " << k;
    }
}

TEST_P(GpuTreeKnn, RadiusListsAreTheRankingCutAtTheRadius) {
  SIMKIT_REQUIRE_GPU();
  const auto [shape, d] = GetParam();
  const Context ctx = gpu_context();
  const Matrix<float> X = points(shape, 1500, d, 17 + uint64_t(d)), Q = points(shape, 60, d, 170 + uint64_t(d));
  const auto first = ranked(Q, 0, X);
  for (Metric metric : {Metric::l2, Metric::sqeuclidean}) {
    const double radius = double(value_of(metric, first[19].first)) * 1.0001;  // lists of a few dozen
    const RadiusResult r = radius_search(ctx, Q.view(), X.view(), radius, metric);
    ASSERT_EQ(r.offsets.size(), size_t(Q.rows() + 1));
    EXPECT_EQ(r.capped, 0);
    for (int64_t i = 0; i < Q.rows(); ++i) {
      const auto all = ranked(Q, i, X);
      int64_t want = 0;  // the value compared in float64, as the search does
      while (want < X.rows() &&
             (metric == Metric::l2 ? std::sqrt(all[size_t(want)].first) : all[size_t(want)].first) <= radius)
        ++want;
      ASSERT_EQ(r.offsets[size_t(i) + 1] - r.offsets[size_t(i)], want)
          << name(shape) << " d " << d << " " << to_string(metric) << " q " << i;
      for (int64_t p = 0; p < want; ++p) {
        ASSERT_EQ(r.ids[size_t(r.offsets[size_t(i)] + p)], all[size_t(p)].second);
        ASSERT_EQ(r.values[size_t(r.offsets[size_t(i)] + p)], value_of(metric, all[size_t(p)].first));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuTreeKnn,
                         ::testing::Values(Case{Shape::uniform, 2}, Case{Shape::uniform, 3}, Case{Shape::uniform, 5},
                                           Case{Shape::uniform, 8}, Case{Shape::clustered, 3},
                                           Case{Shape::clustered, 8}, Case{Shape::duplicates, 2},
                                           Case{Shape::duplicates, 3}, Case{Shape::collinear, 3},
                                           Case{Shape::collinear, 5}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(name(info.param.shape)) + "_d" + std::to_string(info.param.d);
                         });

TEST(GpuTree, AwkwardSizesAndHostArrays) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  for (int64_t n : {1, 31, 32, 33, 1025})
    for (int64_t m : {1, 33}) {
      const Matrix<float> X = points(Shape::uniform, n, 3, uint64_t(n)), Q = points(Shape::clustered, m, 3, 9);
      const int64_t k = std::min<int64_t>(n, 17);
      const KnnResult tree = knn(ctx, Q.view(), X.view(), k, Metric::l2, KnnMethod::tree);  // host arrays
      for (int64_t q = 0; q < m; ++q) {
        const auto want = ranked(Q, q, X);
        for (int64_t c = 0; c < k; ++c) ASSERT_EQ(tree.ids(q, c), want[size_t(c)].second) << n << " " << m;
      }
    }
}

TEST(GpuTree, EveryPacketSizeGivesTheSameAnswerAndFewerFetches) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> X = points(Shape::clustered, 20000, 3, 3), Q = points(Shape::uniform, 3000, 3, 4);
  Matrix<float> v1(3000, 16), v(3000, 16);
  Matrix<int64_t> i1(3000, 16), i(3000, 16);
  const TreeReport alone = knn_tree(ctx, Q.view(), X.view(), 16, Metric::l2, v1.view(), i1.view(), {.packet = 1});
  for (int64_t packet : {2, 8, 32}) {
    const TreeReport r = knn_tree(ctx, Q.view(), X.view(), 16, Metric::l2, v.view(), i.view(), {.packet = packet});
    EXPECT_TRUE(std::equal(i1.data(), i1.data() + i1.size(), i.data())) << packet;
    EXPECT_TRUE(std::equal(v1.data(), v1.data() + v1.size(), v.data())) << packet;
    std::printf("packet %2lld: %lld packets, %.1f node fetches per query (alone %.1f), lanes busy at leaves %.2f\n",
                (long long)packet, (long long)r.packets, double(r.node_visits) / 3000, double(alone.node_visits) / 3000,
                double(r.leaf_lanes) / double(r.leaf_visits * packet));
    EXPECT_LT(r.node_visits, alone.node_visits) << "a node is fetched once per packet";
    EXPECT_EQ(r.packets, (3000 + packet - 1) / packet);
  }
}

TEST(GpuTree, CapsTinyRadiiAndRefusals) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> X = points(Shape::uniform, 2000, 3, 1), Q = points(Shape::uniform, 50, 3, 2);
  const RadiusResult none = radius_search(ctx, Q.view(), X.view(), 1e-9);
  EXPECT_EQ(none.offsets.back(), 0);
  const RadiusResult wide = radius_search(ctx, Q.view(), X.view(), 0.5);
  const RadiusResult cut = radius_search(ctx, Q.view(), X.view(), 0.5, Metric::l2, 5);
  int64_t over = 0;
  for (int64_t i = 0; i < Q.rows(); ++i) {
    const int64_t have = wide.offsets[size_t(i) + 1] - wide.offsets[size_t(i)];
    over += have > 5;
    const int64_t kept = cut.offsets[size_t(i) + 1] - cut.offsets[size_t(i)];
    ASSERT_EQ(kept, std::min<int64_t>(have, 5));
    for (int64_t p = 0; p < kept; ++p)
      ASSERT_EQ(cut.ids[size_t(cut.offsets[size_t(i)] + p)], wide.ids[size_t(wide.offsets[size_t(i)] + p)]);
  }
  EXPECT_GT(over, 0);
  EXPECT_EQ(cut.capped, over);
  Matrix<float> v(50, 130);
  Matrix<int64_t> ids(50, 130);
  expect_error([&] { knn_tree(ctx, Q.view(), X.view(), 130, Metric::l2, v.view(), ids.view()); },
               ErrorCode::unsupported, "k <= 128");
  // KnnMethod::automatic goes to brute force where the GPU tree does not serve.
  EXPECT_NO_THROW(knn(ctx, Q.view(), X.view(), 130, Metric::l2, v.view(), ids.view()));
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), 0.1, Metric::l2, 0, {.packet = 3}); },
               ErrorCode::invalid_argument, "power of two");
  expect_error([&] { radius_search(ctx, Q.view(), X.view(), 0.1, Metric::l2, 0, {.packet = 64}); },
               ErrorCode::invalid_argument, "power of two");
}

}  // namespace
}  // namespace simkit::test
