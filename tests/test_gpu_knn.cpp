// GPU exact k-NN against the float64 reference: every metric at awkward sizes, k = 1 up to
// k = n, the device selection's largest lists (k = 1024) and the host fallback beyond it
// (k = 2000), exact ties from duplicate rows and integer data, device-resident inputs and
// outputs, a budget small enough to force many tiles and query batches, CPU == GPU ids, and
// the digits ground truth row for row. Skips where no CUDA device is visible.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/knn.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "knn_check.hpp"
#include "reference.hpp"
#include "sweep.hpp"

namespace simkit::test {
namespace {

/// cuBLAS's float32 sums at d = 1000 differ from float64 by a few 1e-6 relative, so two values
/// closer than the tolerance may come out in either order.
constexpr double kNear = 1.0;

int64_t expect_matches_reference(const Matrix<float>& Q, const Matrix<float>& X, int64_t k, Metric metric,
                                 const KnnResult& r, bool exact_ties, const std::string& label) {
  return expect_knn_matches_reference(Q, X, k, metric, r, exact_ties ? Ties::exact : Ties::near_ok, kNear, label)
      .ids_checked;
}

class GpuKnnAccuracy : public MetricDimSweep {};

// m = 37, n = 1031 (no tile multiple); k = 1, 17, 1024 (the device lists' limit) and n (the
// host fallback).
TEST_P(GpuKnnAccuracy, MatchesFloat64Reference) {
  SIMKIT_REQUIRE_GPU();
  const auto [metric, d] = GetParam();
  const Matrix<float> Q = inputs_for(metric, 37, d, seed), X = inputs_for(metric, 1031, d, seed + 1);
  int64_t positions = 0, checked = 0;
  for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{1024}, int64_t{1031}}) {
    const KnnResult r = knn(gpu_context(), Q.view(), X.view(), k, metric);
    checked += expect_matches_reference(Q, X, k, metric, r, false, name_of(metric, d) + " k=" + std::to_string(k));
    positions += Q.rows() * k;
  }
  std::printf("  %-16s ids compared at %lld of %lld positions (the rest are near-ties)\n", name_of(metric, d).c_str(),
              static_cast<long long>(checked), static_cast<long long>(positions));
  // At d = 1000 the distances crowd together (relative gaps ~4e-5), so a third of the
  // positions have a neighbour within the tolerance; half is the floor that keeps the id
  // comparison meaningful without flaking on a seed.
  if (d >= 3) {
    EXPECT_GT(checked, positions / 2) << "the id comparison must not be vacuous";
  }
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, GpuKnnAccuracy,
                         ::testing::Combine(::testing::ValuesIn(kMetrics), ::testing::ValuesIn(kAwkwardDims)),
                         MetricDimName{});

// k = n on the device path (n <= 1024) is the full ranking; tiny bases (n < 4, below every
// tile and vector width) too.
TEST(GpuKnn, FullRankingOnDevicePath) {
  SIMKIT_REQUIRE_GPU();
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{500}}) {
    const Matrix<float> Q = random_matrix(9, 20, 61 + uint64_t(n)), X = random_matrix(n, 20, 62 + uint64_t(n));
    for (Metric metric : kMetrics) {
      const KnnResult r = knn(gpu_context(), Q.view(), X.view(), n, metric);
      expect_matches_reference(Q, X, n, metric, r, false, std::string(to_string(metric)) + " n=k=" + std::to_string(n));
    }
  }
}

// k = 2000 > 1024 takes the host-selection fallback; the answers follow the same contract.
TEST(GpuKnn, LargeKFallback) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Q = inputs_for(metric, 11, 24, seed + 2), X = inputs_for(metric, 2503, 24, seed + 3);
    const KnnResult r = knn(gpu_context(), Q.view(), X.view(), 2000, metric);
    expect_matches_reference(Q, X, 2000, metric, r, false, std::string(to_string(metric)) + " k=2000");
  }
}

// Every base row appears three times (ids i, i + 400, i + 800) and the data are small whole
// numbers, so equal values are exactly equal: they must come out in id order, for the
// device selection and for the fallback alike.
TEST(GpuKnn, DuplicatesTieToLowerId) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> base = integer_matrix(400, 10, 5, 71);
  Matrix<float> X(1200, 10);
  for (int64_t i = 0; i < X.rows(); ++i)
    for (int64_t j = 0; j < 10; ++j) X(i, j) = base(i % 400, j);
  const Matrix<float> Q = integer_matrix(23, 10, 5, 72);
  for (Metric metric : kMetrics)
    for (int64_t k : {int64_t{1}, int64_t{30}, int64_t{300}, int64_t{1100}}) {
      const KnnResult r = knn(gpu_context(), Q.view(), X.view(), k, metric);
      expect_matches_reference(Q, X, k, metric, r, true, std::string(to_string(metric)) + " k=" + std::to_string(k));
    }
}

// Cosine with zero rows and pearson with constant rows: similarity 0, never NaN.
TEST(GpuKnn, ZeroNormRowsRankAsZeroSimilarity) {
  SIMKIT_REQUIRE_GPU();
  Matrix<float> Q = random_matrix(6, 17, 81), X = random_matrix(90, 17, 82);
  for (int64_t j = 0; j < 17; ++j) Q(2, j) = 0.f, X(5, j) = 0.f, X(40, j) = 3.f;
  for (Metric metric : {Metric::cosine, Metric::pearson}) {
    const KnnResult r = knn(gpu_context(), Q.view(), X.view(), 90, metric);
    for (int64_t i = 0; i < r.values.size(); ++i) ASSERT_TRUE(std::isfinite(r.values.data()[i])) << to_string(metric);
    expect_matches_reference(Q, X, 90, metric, r, false, to_string(metric));
  }
}

// Inputs and outputs on the device, in every combination with host views, give exactly what
// the all-host call gives.
TEST(GpuKnn, DeviceResidentInputsAndOutputs) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const int64_t k = 25;
  const Matrix<float> Q = random_matrix(41, 37, 91), X = random_matrix(3001, 37, 92);
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  for (Metric metric : kMetrics) {
    const KnnResult host = knn(ctx, Q.view(), X.view(), k, metric);
    expect_matches_reference(Q, X, k, metric, host, false, std::string(to_string(metric)) + " host");
    for (int combo = 1; combo < 8; ++combo) {
      const bool q_dev = combo & 1, x_dev = combo & 2, out_dev = combo & 4;
      const std::string label = std::string(to_string(metric)) + " Q " + (q_dev ? "device" : "host") + ", X " +
                                (x_dev ? "device" : "host") + ", out " + (out_dev ? "device" : "host");
      KnnResult r{Matrix<float>(Q.rows(), k, NAN), Matrix<int64_t>(Q.rows(), k, -1)};
      DeviceMatrix<float> dv(ctx, Q.rows(), k);
      DeviceMatrix<int64_t> di(ctx, Q.rows(), k);
      knn(ctx, q_dev ? dQ.view() : Q.view(), x_dev ? dX.view() : X.view(), k, metric,
          out_dev ? dv.view() : r.values.view(), out_dev ? di.view() : r.ids.view());
      if (out_dev) dv.copy_to_host(r.values.view()), di.copy_to_host(r.ids.view());
      expect_matches_reference(Q, X, k, metric, r, false, label);
      // The base and the outputs may sit anywhere without changing an id.
      EXPECT_EQ(std::memcmp(r.ids.data(), host.ids.data(), size_t(r.ids.size()) * 8), 0) << label;
    }
  }
}

// A budget of 1 MiB forces many base tiles and several query batches (and the per-tile norms
// path); ids must not change, and l2 / sqeuclidean / l1 values are bitwise the same because
// they do not depend on the tiling (exact re-scoring; l1 sums in one fixed order).
TEST(GpuKnn, SmallBudgetForcesManyTilesAndBatches) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(700, 48, 101), X = random_matrix(20011, 48, 102);
  for (Metric metric : kMetrics) {
    const KnnResult whole = knn(gpu_context(), Q.view(), X.view(), 10, metric);
    const KnnResult tiled = knn(gpu_context(size_t(1) << 20), Q.view(), X.view(), 10, metric);
    const std::string label = std::string(to_string(metric)) + " 1 MiB budget";
    if (metric == Metric::l2 || metric == Metric::sqeuclidean || metric == Metric::l1) {
      expect_same_bits(whole, tiled, label);
    } else {
      int64_t differ = 0;
      for (int64_t i = 0; i < whole.ids.size(); ++i) differ += whole.ids.data()[i] != tiled.ids.data()[i];
      EXPECT_LE(differ, whole.ids.size() / 1000) << label;  // only float near-ties may swap
    }
  }
  const Matrix<float> Qs = random_matrix(60, 48, 103);
  for (Metric metric : kMetrics) {
    const KnnResult r = knn(gpu_context(size_t(1) << 20), Qs.view(), X.view(), 10, metric);
    expect_matches_reference(Qs, X, 10, metric, r, false, std::string(to_string(metric)) + " 1 MiB budget");
  }
}

TEST(GpuKnn, BudgetTooSmallIsOutOfMemory) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(3, 4000, 111), X = random_matrix(50, 4000, 112);
  // A 2 KiB budget cannot hold one 4000-float row.
  expect_error([&] { knn(gpu_context(2048), Q.view(), X.view(), 5, Metric::l2); }, ErrorCode::out_of_memory,
               "gpu_memory_budget");
}

// On random float data the CPU and GPU backends agree on every id, except where the two
// candidates' float64 values lie within float rounding of each other.
TEST(GpuKnn, SameIdsAsCpu) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Q = inputs_for(metric, 50, 64, seed + 5), X = inputs_for(metric, 4099, 64, seed + 6);
    const int64_t k = 20;
    const KnnResult g = knn(gpu_context(), Q.view(), X.view(), k, metric);
    const KnnResult c = knn(cpu_context(), Q.view(), X.view(), k, metric);
    int64_t equal = 0, excused = 0;
    for (int64_t i = 0; i < Q.rows(); ++i)
      for (int64_t p = 0; p < k; ++p) {
        const int64_t a = g.ids(i, p), b = c.ids(i, p);
        if (a == b) {
          ++equal;
          continue;
        }
        const double va = reference_metric(&Q(i, 0), &X(a, 0), 64, metric);
        const double vb = reference_metric(&Q(i, 0), &X(b, 0), 64, metric);
        EXPECT_LE(std::abs(va - vb), tolerance(metric, va))
            << to_string(metric) << " query " << i << " position " << p << ": GPU id " << a << " (" << va
            << "), CPU id " << b << " (" << vb << ")";
        ++excused;
      }
    EXPECT_GE(equal, Q.rows() * k * 99 / 100) << to_string(metric);
    std::printf("  %-12s CPU == GPU ids at %lld of %lld positions (%lld near-ties)\n", to_string(metric),
                static_cast<long long>(equal), static_cast<long long>(Q.rows() * k), static_cast<long long>(excused));
  }
}

// ---------------------------------------------------------------- the digits ground truth

/// .fvecs / .ivecs rows: int32 dimension, then that many 4-byte values. A tiny reader of our
/// own, so this test does not depend on simkit's I/O.
template <class T>
bool read_vecs(const std::string& path, Matrix<T>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 4) return false;
  int32_t d = 0;
  std::memcpy(&d, bytes.data(), 4);
  const size_t row_bytes = 4 + size_t(d) * 4;
  if (d <= 0 || bytes.size() % row_bytes != 0) return false;
  const int64_t rows = int64_t(bytes.size() / row_bytes);
  out = Matrix<T>(rows, d);
  for (int64_t i = 0; i < rows; ++i) {
    int32_t di = 0;
    std::memcpy(&di, bytes.data() + size_t(i) * row_bytes, 4);
    if (di != d) return false;
    for (int64_t j = 0; j < d; ++j) {
      const char* p = bytes.data() + size_t(i) * row_bytes + 4 + size_t(j) * 4;
      if constexpr (std::is_same_v<T, float>) {
        std::memcpy(&out(i, j), p, 4);
      } else {
        int32_t v = 0;
        std::memcpy(&v, p, 4);
        out(i, j) = v;
      }
    }
  }
  return true;
}

// The digits data are whole numbers 0..16 with many exact ties; the ground truth orders ties
// by the lower id. GPU ids must equal it row for row, with the inputs on the host and on the
// device.
TEST(GpuKnn, DigitsGroundTruthRowForRow) {
  SIMKIT_REQUIRE_GPU();
  const std::string dir = std::string(SIMKIT_SHARED_DATA_DIR) + "/digits/";
  Matrix<float> X, Q;
  Matrix<int64_t> truth;
  if (!read_vecs(dir + "digits_base.fvecs", X) || !read_vecs(dir + "digits_query.fvecs", Q) ||
      !read_vecs(dir + "digits_groundtruth_sqeuclidean.ivecs", truth))
    GTEST_SKIP() << "digits data not found (or unreadable) under " << dir;
  ASSERT_EQ(truth.rows(), Q.rows());
  const int64_t k = truth.cols();
  const Context ctx = gpu_context();
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  for (bool on_device : {false, true}) {
    const KnnResult r = on_device ? knn(ctx, dQ.view(), dX.view(), k, Metric::sqeuclidean)
                                  : knn(ctx, Q.view(), X.view(), k, Metric::sqeuclidean);
    int64_t found = 0, rows_equal = 0;
    for (int64_t i = 0; i < Q.rows(); ++i) {
      std::set<int64_t> want;
      bool same = true;
      for (int64_t p = 0; p < k; ++p) want.insert(truth(i, p)), same &= r.ids(i, p) == truth(i, p);
      for (int64_t p = 0; p < k; ++p) found += want.count(r.ids(i, p));
      rows_equal += same;
      if (!same) ADD_FAILURE() << (on_device ? "device" : "host") << " inputs: query " << i << " differs";
    }
    std::printf("  digits (%s inputs): recall@%lld = %.3f, %lld of %lld rows identical\n",
                on_device ? "device" : "host", static_cast<long long>(k), double(found) / double(Q.rows() * k),
                static_cast<long long>(rows_equal), static_cast<long long>(Q.rows()));
    EXPECT_EQ(rows_equal, Q.rows());
  }
}

}  // namespace
}  // namespace simkit::test
