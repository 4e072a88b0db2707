// k-means on both backends against what Lloyd's algorithm promises, checked from outside in
// float64: every label is the nearest centroid (ties to the lower id) at the returned
// centroids; at convergence every centroid is the mean of its points; k-means++ beats random
// seeding on clustered data; the same seed gives the same result at any thread count and on
// either backend; empty clusters are re-seeded; bad input is refused. Real data: digits.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/kmeans.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

class KmeansTest : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, KmeansTest, ::testing::ValuesIn(kBackends), BackendName{});

/// `clusters` Gaussian blobs of width `spread` around centres uniform in [-10, 10)^d.
Matrix<float> blobs(int64_t n, int64_t d, int64_t clusters, double spread, uint64_t seed) {
  const Matrix<float> centres = random_matrix(clusters, d, seed);
  const Matrix<float> noise = random_matrix(n, d, seed + 1, Distribution::gaussian);
  Matrix<float> X(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) X(i, j) = float(10.0 * centres(i % clusters, j) + spread * noise(i, j));
  return X;
}

double cost(const float* x, const float* c, int64_t d, Metric metric) {
  return metric == Metric::cosine ? 1.0 - reference_metric(x, c, d, Metric::cosine)
                                  : reference_metric(x, c, d, Metric::sqeuclidean);
}

/// Labels are the float64-nearest centroids (ties within `tie` of the best excused), and the
/// inertia is their total cost; returns the float64 inertia.
double expect_labels_nearest(const Matrix<float>& X, const KmeansResult& r, Metric metric, const std::string& label) {
  const int64_t n = X.rows(), d = X.cols(), k = r.centroids.rows();
  double inertia = 0;
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    double best = INFINITY;
    for (int64_t c = 0; c < k; ++c) best = std::min(best, cost(&X(i, 0), &r.centroids(c, 0), d, metric));
    const int64_t l = r.labels(i, 0);
    EXPECT_TRUE(l >= 0 && l < k) << label << " point " << i;
    if (l < 0 || l >= k) return 0;
    const double mine = cost(&X(i, 0), &r.centroids(l, 0), d, metric);
    if (mine > best + 1e-5 * std::max(1.0, std::fabs(best))) ++wrong;
    inertia += mine;
  }
  EXPECT_EQ(wrong, 0) << label << ": points not at their nearest centroid";
  EXPECT_NEAR(r.inertia, inertia, 1e-5 * std::max(1.0, inertia)) << label;
  return inertia;
}

TEST_P(KmeansTest, LabelsAreNearestAndCentroidsAreMeansAtConvergence) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
    const Matrix<float> X = blobs(3001, 19, 13, 1.5, 41);
    KmeansParams p;
    p.k = 13;
    p.metric = metric;
    p.max_iterations = 200;
    p.tolerance = 0;  // to the fixed point: no label changes any more
    p.seed = 5;
    const KmeansResult r = kmeans(context(), X.view(), p);
    const std::string label = to_string(metric);
    expect_labels_nearest(X, r, metric, label);
    EXPECT_LT(r.iterations, 200) << label << ": did not converge";
    ASSERT_EQ(r.history.size(), size_t(r.iterations + 1)) << label;
    for (size_t i = 1; i < r.history.size(); ++i)
      EXPECT_LE(r.history[i], r.history[i - 1] * (1 + 1e-6)) << label << ": Lloyd's inertia never rises";
    // At the fixed point each centroid is its points' mean (normalised for spherical k-means).
    for (int64_t c = 0; c < p.k; ++c) {
      std::vector<double> mean(size_t(X.cols()), 0.0);
      int64_t count = 0;
      for (int64_t i = 0; i < X.rows(); ++i)
        if (r.labels(i, 0) == c) {
          ++count;
          for (int64_t j = 0; j < X.cols(); ++j) mean[size_t(j)] += X(i, j);
        }
      ASSERT_GT(count, 0) << label << " cluster " << c;
      double scale = 1.0 / double(count), norm = 0;
      for (double v : mean) norm += v * v;
      if (metric == Metric::cosine) scale = 1.0 / std::sqrt(norm);
      for (int64_t j = 0; j < X.cols(); ++j)
        EXPECT_NEAR(r.centroids(c, j), mean[size_t(j)] * scale,
                    1e-5 * std::max(1.0, std::fabs(mean[size_t(j)] * scale)))
            << label << " cluster " << c << " dim " << j;
    }
  }
}

/// The label a point must get: the float64 nearest centroid, ties to the lower id.
int64_t nearest_exact(const float* x, const Matrix<float>& C, Metric metric) {
  double best = INFINITY;
  int64_t id = -1;
  for (int64_t c = 0; c < C.rows(); ++c) {
    const double v = cost(x, &C(c, 0), C.cols(), metric);
    if (v < best) best = v, id = c;
  }
  return id;
}

/// One assignment from the given centroids (max_iterations = 0): labels, inertia, stats.
KmeansResult assign_only(const Context& ctx, const Matrix<float>& X, const Matrix<float>& C, Metric metric) {
  KmeansParams p;
  p.k = C.rows();
  p.metric = metric;
  p.init = KmeansInit::given;
  p.initial = C.view();
  p.max_iterations = 0;
  return kmeans(ctx, X.view(), p);
}

// The fast products (sgemm, half precision) only propose; the labels must be the float64 argmin even
// where they cannot tell: duplicate centroids (exact ties, the lower id wins), a centroid 1/16
// away from another, everything translated 1e4 from the origin (where cosine similarities all
// sit near 1 and only the exact ranking separates them). k = 301 and 1100 cross the GPU's
// 128-centroid tiles and the CPU's 1024; d = 37 is no multiple of the GPU's 32-wide steps.
TEST_P(KmeansTest, AssignmentIsExactOnTiesNearTiesAndFarFromOrigin) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const int64_t n = 2000, d = 37;
  for (int64_t k : {301, 1100})
    for (double offset : {0.0, 1e4})
      for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
        Matrix<float> C = random_matrix(k, d, 71 + uint64_t(k));
        Matrix<float> X = random_matrix(n, d, 72 + uint64_t(k));
        for (int64_t j = 0; j < d; ++j) C(1, j) = C(0, j), C(2, j) = C(0, j);
        C(2, 0) += 0.0625f;
        const Matrix<float> noise = random_matrix(10, d, 73, Distribution::gaussian);
        for (int64_t i = 0; i < 10; ++i)  // points among the three
          for (int64_t j = 0; j < d; ++j) X(i, j) = C(0, j) + 0.01f * noise(i, j);
        for (int64_t e = 0; e < C.size(); ++e) C.data()[e] = float(C.data()[e] + offset);
        for (int64_t e = 0; e < X.size(); ++e) X.data()[e] = float(X.data()[e] + offset);
        const KmeansResult r = assign_only(context(), X, C, metric);
        const std::string label =
            std::string(to_string(metric)) + " k " + std::to_string(k) + " offset " + std::to_string(offset);
        int64_t wrong = 0;
        double inertia = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t want = nearest_exact(&X(i, 0), C, metric);
          wrong += r.labels(i, 0) != want;
          inertia += cost(&X(i, 0), &C(want, 0), d, metric);
          if (i < 10) {
            EXPECT_NE(r.labels(i, 0), 1) << label << ": a duplicate centroid must lose to the lower id";
          }
        }
        EXPECT_EQ(wrong, 0) << label;
        EXPECT_NEAR(r.inertia, inertia, 1e-9 * std::max(1.0, inertia)) << label;
        EXPECT_EQ(r.assignments, n) << label;
        if (offset > 0 && metric == Metric::cosine) {
          EXPECT_GT(r.points_ranked_exactly, 0)
              << label << ": near-parallel points cannot be settled by a float product";
        }
      }
}

// Rows of tiny norm put the float keys among the subnormals, where relative error bounds say
// nothing, and rows of huge norm push them toward overflow: the labels must stay the float64
// argmin either way (the certificate's absolute floor, or the exact ranking, takes over).
TEST_P(KmeansTest, AssignmentIsExactAtTinyAndHugeScales) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const int64_t n = 1500, d = 19, k = 37;
  for (double scale : {0x1p-135, 0x1p62})
    for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
      Matrix<float> C = random_matrix(k, d, 91);
      Matrix<float> X = random_matrix(n, d, 92);
      for (int64_t e = 0; e < C.size(); ++e) C.data()[e] = float(C.data()[e] * scale);
      for (int64_t e = 0; e < X.size(); ++e) X.data()[e] = float(X.data()[e] * scale);
      const KmeansResult r = assign_only(context(), X, C, metric);
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += r.labels(i, 0) != nearest_exact(&X(i, 0), C, metric);
      EXPECT_EQ(wrong, 0) << to_string(metric) << " at scale " << scale;
    }
}

// The GPU keeps eight candidates per point from chunks of 1024 centroids (read four at a time
// when k % 4 == 0) and merges keys tied at its threshold in rounds of 24; the CPU keeps two per
// 1024. Forty copies of one centroid, spread over both chunks, tie for second place behind a
// unique nearest centroid for 200 points placed between them: the selection must keep the
// unique one through the rounds (or those points could not be settled without ranking every
// centroid), and every label is the float64 argmin, the lowest id among the copies included.
TEST_P(KmeansTest, ManyTiedCentroidsAcrossChunks) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const int64_t n = 2500, d = 24, near = 200;
  for (int64_t k : {2048, 1029})
    for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
      Matrix<float> C = random_matrix(k, d, 81 + uint64_t(k));
      Matrix<float> X = random_matrix(n, d, 82 + uint64_t(k));
      const Matrix<float> w = random_matrix(1, d, 83, Distribution::gaussian);
      const Matrix<float> noise = random_matrix(near, d, 84, Distribution::gaussian);
      int64_t copies = 0;
      for (int64_t id = 57; id < k && copies < 40; id += 25, ++copies)
        for (int64_t j = 0; j < d; ++j) C(id, j) = C(7, j);
      // Along a unit direction: 0.4 from centroid 3, 0.8 from the copies, so the gap (0.48 in
      // squared distance) is 10x the GPU pass's error bound here and the points can be settled.
      double wn = 0;
      for (int64_t j = 0; j < d; ++j) wn += double(w(0, j)) * w(0, j);
      const double unit = 1.0 / std::sqrt(wn);
      for (int64_t j = 0; j < d; ++j) C(3, j) = float(C(7, j) + 1.2 * unit * w(0, j));
      for (int64_t i = 0; i < near; ++i)
        for (int64_t j = 0; j < d; ++j) X(i, j) = float(C(7, j) + 0.8 * unit * w(0, j) + 0.01 * noise(i, j));
      const KmeansResult r = assign_only(context(), X, C, metric);
      const std::string label = std::string(to_string(metric)) + " k " + std::to_string(k);
      int64_t wrong = 0, near_wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t want = nearest_exact(&X(i, 0), C, metric);
        wrong += r.labels(i, 0) != want;
        near_wrong += i < near && want != 3;
      }
      EXPECT_EQ(near_wrong, 0) << label << ": the test's geometry (centroid 3 nearest to the placed points)";
      EXPECT_EQ(wrong, 0) << label;
      EXPECT_LT(r.points_ranked_exactly, near / 2) << label << ": the tied copies crowded out the nearest centroid";
    }
}

TEST_P(KmeansTest, PlusPlusBeatsRandomOnClusteredData) {
  SIMKIT_REQUIRE_BACKEND(backend());
  // 40 tight blobs: random seeding leaves some blobs without a centroid and some with two.
  const Matrix<float> X = blobs(8000, 16, 40, 0.3, 43);
  double plus = 0, random = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    KmeansParams p;
    p.k = 40;
    p.seed = seed;
    p.max_iterations = 10;
    p.init = KmeansInit::kmeans_plus_plus;
    plus += kmeans(context(), X.view(), p).inertia;
    p.init = KmeansInit::random;
    random += kmeans(context(), X.view(), p).inertia;
  }
  EXPECT_LT(plus, 0.8 * random) << "k-means++ " << plus / 4 << " vs random " << random / 4 << " (mean of 4 seeds)";
}

TEST_P(KmeansTest, SameSeedSameResultAnyThreadsAndSampling) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = blobs(5003, 24, 30, 2.0, 47);
  KmeansParams p;
  p.k = 30;
  p.seed = 9;
  p.sample = 2500;
  Context one = context(), many = context();
  one.threads = 1;
  const KmeansResult a = kmeans(one, X.view(), p), b = kmeans(many, X.view(), p);
  ASSERT_EQ(a.iterations, b.iterations);
  for (int64_t e = 0; e < a.centroids.size(); ++e) ASSERT_EQ(a.centroids.data()[e], b.centroids.data()[e]) << e;
  for (int64_t i = 0; i < X.rows(); ++i) ASSERT_EQ(a.labels(i, 0), b.labels(i, 0)) << i;
  EXPECT_EQ(a.inertia, b.inertia);
  // The sample trains, every point is labelled at the end.
  ASSERT_EQ(a.labels.rows(), X.rows());
  expect_labels_nearest(X, a, Metric::sqeuclidean, "sampled");
  p.seed = 10;
  const KmeansResult c = kmeans(many, X.view(), p);
  EXPECT_NE(std::vector<float>(c.centroids.data(), c.centroids.data() + c.centroids.size()),
            std::vector<float>(a.centroids.data(), a.centroids.data() + a.centroids.size()))
      << "another seed, another start";
}

TEST_P(KmeansTest, EmptyClustersAreReseededFromTheFarthestPoints) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = blobs(600, 5, 3, 0.5, 53);
  // Two of the three given centroids sit far from every point, so only the first attracts any:
  // the other two empty out at the first update and take the points farthest from it.
  Matrix<float> init(3, 5, 1000.f);
  for (int64_t j = 0; j < 5; ++j) init(0, j) = 0.f, init(2, j) = 2000.f;
  KmeansParams p;
  p.k = 3;
  p.init = KmeansInit::given;
  p.initial = init.view();
  p.max_iterations = 30;
  const KmeansResult r = kmeans(context(), X.view(), p);
  EXPECT_GE(r.empty_reseeded, 2);
  expect_labels_nearest(X, r, Metric::sqeuclidean, "reseeded");
  std::vector<int64_t> sizes(3, 0);
  for (int64_t i = 0; i < X.rows(); ++i) ++sizes[size_t(r.labels(i, 0))];
  for (int64_t s : sizes) EXPECT_GT(s, 0) << "no cluster stays empty";
}

TEST_P(KmeansTest, DigitsRealData) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const std::string path = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/digits_base.fvecs";
  const Matrix<float> X = read_matrix(path);
  KmeansParams p;
  p.k = 10;
  p.seed = 1;
  const KmeansResult r = kmeans(context(), X.view(), p);
  const double inertia = expect_labels_nearest(X, r, Metric::sqeuclidean, "digits");
  std::printf("  digits 1,697 x 64, k = 10: inertia %.6g after %d iterations\n", inertia, r.iterations);
}

// Farthest-point traversal against a float64 one written here: the same centers in the same
// order from the same first draw, exact labels, the radius. k = 150 crosses the GPU's tiles.
TEST_P(KmeansTest, KcenterIsTheFarthestPointTraversal) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = blobs(3007, 21, 40, 2.0, 79);
  const int64_t n = X.rows(), d = X.cols(), k = 150;
  const KcenterResult r = kcenter(context(), X.view(), k, 12);
  ASSERT_EQ(r.ids.rows(), k);
  std::vector<double> nearest(size_t(n), INFINITY);
  int64_t next = r.ids(0, 0);
  for (int64_t c = 0; c < k; ++c) {
    ASSERT_EQ(r.ids(c, 0), next) << "center " << c;
    for (int64_t j = 0; j < d; ++j) ASSERT_EQ(r.centers(c, j), X(next, j));
    int64_t far = 0;
    for (int64_t i = 0; i < n; ++i) {
      nearest[size_t(i)] = std::min(nearest[size_t(i)], cost(&X(i, 0), &X(r.ids(c, 0), 0), d, Metric::sqeuclidean));
      if (nearest[size_t(i)] > nearest[size_t(far)]) far = i;
    }
    next = far;
  }
  const double radius = std::sqrt(*std::max_element(nearest.begin(), nearest.end()));
  EXPECT_NEAR(r.radius, radius, 1e-12 * radius);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(r.labels(i, 0), nearest_exact(&X(i, 0), r.centers, Metric::sqeuclidean)) << i;
  EXPECT_EQ(kcenter(context(), X.view(), k, 12).ids(k - 1, 0), r.ids(k - 1, 0)) << "same seed, same centers";
  expect_error([&] { kcenter(context(), X.view(), 0); }, ErrorCode::invalid_argument, "k must be at least 1");
  expect_error([&] { kcenter(context(), X.view(), n + 1); }, ErrorCode::invalid_argument, "exceeds the 3007 points");
  Matrix<float> bad = X;
  bad(5, 3) = INFINITY;
  expect_error([&] { kcenter(context(), bad.view(), 3); }, ErrorCode::invalid_argument, "NaN or Inf (row 5");
}

// Integer data ties exactly; both backends must break every tie the same way (lower centroid id),
// so they follow the same path from the same start.
TEST(KmeansGpuOnly, SameLabelsAndInertiaAsCpu) {
  SIMKIT_REQUIRE_GPU();
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
    const Matrix<float> X = blobs(20011, 32, 50, 1.0, 59);
    KmeansParams p;
    p.k = 50;
    p.metric = metric;
    p.seed = 3;
    const KmeansResult c = kmeans(cpu_context(), X.view(), p), g = kmeans(gpu_context(), X.view(), p);
    EXPECT_EQ(c.iterations, g.iterations) << to_string(metric);
    EXPECT_NEAR(g.inertia, c.inertia, 1e-4 * c.inertia) << to_string(metric);
    int64_t differ = 0;
    for (int64_t i = 0; i < X.rows(); ++i) differ += c.labels(i, 0) != g.labels(i, 0);
    EXPECT_EQ(differ, 0) << to_string(metric);
    // Same labels, same summation order: the same centroids, bit for bit.
    ASSERT_EQ(c.centroids.size(), g.centroids.size());
    int64_t bits = 0;
    for (int64_t e = 0; e < c.centroids.size(); ++e) bits += c.centroids.data()[e] != g.centroids.data()[e];
    EXPECT_EQ(bits, 0) << to_string(metric) << ": centroid coordinates that differ";
  }
}

// Points that do not fit the GPU budget stream from host memory at each assignment and the
// update runs on the host: the same result as resident.
TEST(KmeansGpuOnly, StreamedPointsGiveTheResidentResult) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> X = blobs(30011, 40, 64, 1.0, 67);
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
    KmeansParams p;
    p.k = 200;
    p.metric = metric;
    p.seed = 4;
    p.max_iterations = 6;
    const KmeansResult resident = kmeans(gpu_context(), X.view(), p);
    const KmeansResult streamed = kmeans(gpu_context(size_t(3) << 20), X.view(), p);  // 3 MiB: > 5 tiles
    EXPECT_EQ(resident.iterations, streamed.iterations) << to_string(metric);
    for (int64_t e = 0; e < resident.centroids.size(); ++e)
      ASSERT_EQ(resident.centroids.data()[e], streamed.centroids.data()[e]) << to_string(metric) << " " << e;
    for (int64_t i = 0; i < X.rows(); ++i) ASSERT_EQ(resident.labels(i, 0), streamed.labels(i, 0)) << i;
    EXPECT_NEAR(resident.inertia, streamed.inertia, 1e-12 * resident.inertia) << to_string(metric);
  }
}

TEST(KmeansCpuOnly, RefusesBadInput) {
  const Context ctx = cpu_context();
  const Matrix<float> X = random_matrix(50, 4, 61);
  KmeansParams p;
  p.k = 0;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "k must be at least 1");
  p.k = 51;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "exceeds the 50 points");
  p.k = 20;
  p.sample = 10;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "exceeds the 10 sampled points");
  p.sample = 0;
  p.metric = Metric::l1;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "sqeuclidean or cosine");
  p.metric = Metric::sqeuclidean;
  p.init = KmeansInit::given;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "initial centroids must be 20 x 4");
  p.init = KmeansInit::kmeans_plus_plus;
  Matrix<float> bad = X;
  bad(7, 2) = NAN;
  expect_error([&] { kmeans(ctx, bad.view(), p); }, ErrorCode::invalid_argument, "data contains NaN or Inf (row 7");
  expect_error([&] { kmeans(ctx, MatrixView<const float>(), p); }, ErrorCode::invalid_argument, "data is empty");
  p.tolerance = -1;
  expect_error([&] { kmeans(ctx, X.view(), p); }, ErrorCode::invalid_argument, "tolerance");
}

}  // namespace
}  // namespace simkit::test
