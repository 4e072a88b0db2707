// The product quantizer (src/index/product_quantizer.hpp), the code book of ivf_pq: exact
// reconstruction where every sub-space has as many distinct sub-vectors as centroids, table
// sums equal to float64 distances to the reconstructions, a reconstruction error well below
// the data's spread, and every misuse refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <simkit/error.hpp>

#include "index/ivf/product_quantizer.hpp"

namespace {

using simkit::Context;
using simkit::Error;
using simkit::Matrix;
using simkit::detail::ProductQuantizer;

Matrix<float> gaussian(int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g;
  Matrix<float> X(n, d);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = g(rng);
  return X;
}

TEST(ProductQuantizer, ReconstructsExactlyWhenEachSubspaceHasAtMost256Values) {
  // 256 rows: in each sub-space the rows are 256 distinct sub-vectors (a permutation of 256
  // prototypes), so k-means with k = 256 puts a centroid on each and the codes lose nothing.
  const int64_t n = 256, d = 12, m = 3, ds = d / m;
  const Matrix<float> protos = gaussian(256 * m, ds, 7);
  Matrix<float> X(n, d);
  std::mt19937_64 rng(3);
  for (int64_t j = 0; j < m; ++j) {
    std::vector<int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = 0; t < ds; ++t) X(i, j * ds + t) = protos(j * 256 + perm[size_t(i)], t);
  }
  ProductQuantizer pq(d, m);
  pq.train(Context{}, X.view(), 1);
  ASSERT_EQ(pq.ksub(), 256);
  std::vector<uint8_t> codes(size_t(n * m));
  pq.encode(X.view(), codes.data());
  Matrix<float> R(n, d);
  pq.decode(codes.data(), n, R.data());
  for (int64_t i = 0; i < X.size(); ++i) ASSERT_EQ(R.data()[i], X.data()[i]) << "element " << i;
}

TEST(ProductQuantizer, TableSumsAreDistancesToTheReconstruction) {
  const int64_t n = 1003, d = 24, m = 6;
  const Matrix<float> X = gaussian(n, d, 11), Q = gaussian(5, d, 12);
  ProductQuantizer pq(d, m);
  pq.train(Context{}, X.view(), 2, 10);
  std::vector<uint8_t> codes(size_t(n * m));
  pq.encode(X.view(), codes.data());
  Matrix<float> R(n, d);
  pq.decode(codes.data(), n, R.data());
  std::vector<float> table(size_t(m * pq.ksub()));
  for (int64_t q = 0; q < Q.rows(); ++q)
    for (bool ip : {false, true}) {
      pq.distance_table(Q.view().row(q), ip, table.data());
      for (int64_t i = 0; i < n; ++i) {
        double truth = 0;
        for (int64_t t = 0; t < d; ++t) {
          const double a = Q(q, t), b = R(i, t);
          truth += ip ? a * b : (a - b) * (a - b);
        }
        const double got = pq.adc(table.data(), codes.data() + i * m);
        ASSERT_NEAR(got, truth, 1e-5 * (1 + std::abs(truth))) << "query " << q << " row " << i << " ip " << ip;
      }
    }
}

TEST(ProductQuantizer, ReconstructionErrorIsFarBelowTheSpread) {
  // Unit Gaussian in 4-d sub-spaces with 256 centroids each: the mean squared error per
  // coordinate is about 0.2 (the spread is 1); a code book that did not fit would sit near 1.
  const int64_t n = 4000, d = 16, m = 4;
  const Matrix<float> X = gaussian(n, d, 21);
  ProductQuantizer pq(d, m);
  pq.train(Context{}, X.view(), 5, 15);
  std::vector<uint8_t> codes(size_t(n * m));
  pq.encode(X.view(), codes.data());
  Matrix<float> R(n, d);
  pq.decode(codes.data(), n, R.data());
  double err = 0;
  for (int64_t i = 0; i < X.size(); ++i) err += std::pow(double(X.data()[i]) - R.data()[i], 2);
  err /= double(X.size());
  EXPECT_LT(err, 0.35);
  EXPECT_GT(err, 0.0);
}

TEST(ProductQuantizer, RefusesMisuse) {
  EXPECT_THROW(ProductQuantizer(10, 3), Error);  // 3 does not divide 10
  EXPECT_THROW(ProductQuantizer(8, 0), Error);
  ProductQuantizer pq(8, 2);
  Matrix<float> X = gaussian(50, 8, 1);
  std::vector<uint8_t> codes(100);
  EXPECT_THROW(pq.encode(X.view(), codes.data()), Error);  // not trained
  const Matrix<float> narrow = gaussian(50, 6, 1);
  EXPECT_THROW(pq.train(Context{}, narrow.view(), 0), Error);
  X(7, 3) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(pq.train(Context{}, X.view(), 0), Error);
  EXPECT_FALSE(pq.trained());
  X(7, 3) = 0;
  pq.train(Context{}, X.view(), 0, 5);
  EXPECT_EQ(pq.ksub(), 50);  // fewer rows than 256: one centroid per row at most
  EXPECT_THROW(pq.encode(narrow.view(), codes.data()), Error);
  std::vector<uint8_t> bad = {49, 50};  // 50 is past the last centroid
  std::vector<float> out(8);
  EXPECT_THROW(pq.decode(bad.data(), 1, out.data()), Error);
}

}  // namespace
