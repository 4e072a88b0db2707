// Exact k-NN against the float64 reference, each test written once for both backends (instances
// named .../cpu and .../gpu): every metric at awkward sizes, k = 1 up to k = n (on the GPU the
// device selection's largest lists, k = 1024, and the host fallback beyond them), exact ties from
// duplicate rows and integer data, more rows tied at the k-th key than the candidate margin
// (every row scored in float64), near-ties below float32's resolution ranked as in float64 and
// alike on both backends, one query over a large base (the CPU's striped path) and many queries
// (its per-tile path), zero-norm rows, points far from the origin, caller outputs and progress
// reports; on the CPU, bitwise independence from the thread count. KnnGpuOnly: device-resident
// inputs and outputs, a budget small enough to force many tiles and query batches, a budget too
// small to work in, CPU == GPU ids on random data, and the digits ground truth row for row. The
// gpu instances skip where no CUDA device is visible.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
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

/// How close two values may be and still come out in either order, as a fraction of the
/// promised accuracy. CPU: a fifth, still several times the largest error test_pairwise measures
/// there (a few 1e-7), and narrow enough that most positions are id-checked at large d, where
/// 1031 values crowd into a narrow band. GPU: all of it, because cuBLAS's float32 sums at
/// d = 1000 differ from float64 by a few 1e-6 relative.
double near_fraction(Backend backend) { return backend == Backend::gpu ? 1.0 : 0.2; }

KnnCheck expect_matches_reference(Backend backend, const Matrix<float>& Q, const Matrix<float>& X, int64_t k,
                                  Metric metric, const KnnResult& r, Ties ties, const std::string& label) {
  return expect_knn_matches_reference(Q, X, k, metric, r, ties, near_fraction(backend), label);
}

bool same_row(const Matrix<float>& X, int64_t a, int64_t b) {
  return std::memcmp(&X(a, 0), &X(b, 0), size_t(X.cols()) * sizeof(float)) == 0;
}

/// Identical rows next to each other in an answer must be in id order.
void expect_equal_rows_in_id_order(const Matrix<float>& X, const KnnResult& r, const std::string& label) {
  for (int64_t i = 0; i < r.ids.rows(); ++i)
    for (int64_t p = 1; p < r.ids.cols(); ++p) {
      const int64_t a = r.ids(i, p - 1), b = r.ids(i, p);
      if (same_row(X, a, b)) {
        ASSERT_LT(a, b) << label << ": query " << i << " positions " << p - 1 << ", " << p;
      }
    }
}

class KnnTest : public BackendTest {};

INSTANTIATE_TEST_SUITE_P(Backends, KnnTest, ::testing::ValuesIn(kBackends), BackendName{});

class KnnAccuracy : public BackendMetricDimSweep {};

// m = 37 queries (one partial query tile), n = 1031 base rows (one full CPU base tile and 7
// rows, no multiple of any GPU tile); k = 1, 17, 515, 1024 (the GPU's device lists' limit) and
// n (the GPU's host fallback). On the CPU, 1 thread (one stripe) and 2 threads (two stripes
// merged) must give the same bits.
TEST_P(KnnAccuracy, MatchesFloat64Reference) {
  const auto [backend, metric, d] = GetParam();
  SIMKIT_REQUIRE_BACKEND(backend);
  const Matrix<float> Q = inputs_for(metric, 37, d, seed), X = inputs_for(metric, 1031, d, seed + 1);
  KnnCheck total;
  for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{515}, int64_t{1024}, int64_t{1031}}) {
    const std::string label = name_of(metric, d) + " k=" + std::to_string(k);
    const Context ctx = backend == Backend::cpu ? cpu_context(2) : gpu_context();
    const KnnResult r = knn(ctx, Q.view(), X.view(), k, metric);
    if (backend == Backend::cpu) {
      expect_same_bits(knn(cpu_context(1), Q.view(), X.view(), k, metric), r, label + " 1 vs 2 threads");
    }
    const KnnCheck st = expect_matches_reference(backend, Q, X, k, metric, r, Ties::near_ok, label);
    total.positions += st.positions, total.ids_checked += st.ids_checked;
  }
  std::printf("  %-16s ids compared at %lld of %lld positions (the rest are near-ties)\n", name_of(metric, d).c_str(),
              static_cast<long long>(total.ids_checked), static_cast<long long>(total.positions));
  // With d >= 3 random data, near-ties are rare; the id comparison must not be vacuous. The GPU's
  // wider near-tie band holds a third of the positions at d = 1000 (relative gaps ~4e-5), so half
  // is its floor: meaningful without flaking on a seed.
  if (d >= 3) {
    EXPECT_GT(total.ids_checked, backend == Backend::cpu ? total.positions * 9 / 10 : total.positions / 2)
        << "the id comparison must not be vacuous";
  }
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, KnnAccuracy, backend_metric_dims(), BackendMetricDimName{});

// k = n is the full ranking of the base for every query: tiny bases (n < 4, below every tile and
// vector width), n = 500 (the GPU's device path) and n = 2100 (beyond it: the host fallback).
TEST_P(KnnTest, FullRankingWhenKIsN) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Case {
    int64_t m, n, d;
    uint64_t q_seed, x_seed;
  };
  for (const Case& c : {Case{9, 1, 20, 62, 63}, Case{9, 3, 20, 64, 65}, Case{9, 500, 20, 561, 562},
                        Case{5, 2100, 9, seed + 2, seed + 3}}) {
    const Matrix<float> Q = random_matrix(c.m, c.d, c.q_seed), X = random_matrix(c.n, c.d, c.x_seed);
    for (Metric metric : kMetrics) {
      const std::string label = std::string(to_string(metric)) + " n=k=" + std::to_string(c.n);
      const KnnResult r = knn(context(), Q.view(), X.view(), c.n, metric);
      for (int64_t i = 0; i < Q.rows(); ++i) {
        std::vector<int64_t> ids(&r.ids(i, 0), &r.ids(i, 0) + c.n);
        std::sort(ids.begin(), ids.end());
        for (int64_t j = 0; j < c.n; ++j) ASSERT_EQ(ids[size_t(j)], j) << label << " query " << i;
      }
      expect_matches_reference(backend(), Q, X, c.n, metric, r, Ties::near_ok, label);
    }
  }
}

// k = 2000 > 1024 takes the GPU's host-selection fallback; the answers follow the same contract.
TEST_P(KnnTest, LargeK) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Q = inputs_for(metric, 11, 24, seed + 2), X = inputs_for(metric, 2503, 24, seed + 3);
    const KnnResult r = knn(context(), Q.view(), X.view(), 2000, metric);
    expect_matches_reference(backend(), Q, X, 2000, metric, r, Ties::near_ok,
                             std::string(to_string(metric)) + " k=2000");
  }
}

// Duplicated base rows tie exactly under every metric; they must come out by increasing id, for
// the GPU's device selection and its host fallback alike (k = 1100). Two bases: random rows, half
// of them copies of 150 rows scattered over both CPU base tiles, with queries equal to duplicated
// rows, whose copies come first at exactly 0 under the distances; and small whole numbers, every
// row three times (ids i, i + 400, i + 800), so that equal values are exactly equal.
TEST_P(KnnTest, DuplicatesTieToLowerId) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  {
    const int64_t n = 1031, d = 24;
    const Matrix<float> distinct = random_matrix(700, d, seed + 4);
    Matrix<float> X(n, d);
    std::mt19937_64 rng(seed + 5);
    for (int64_t j = 0; j < n; ++j) {
      // Every row is one of the first 150 distinct rows with probability 1/2: many groups of
      // several identical rows.
      const int64_t src = rng() % 2 ? static_cast<int64_t>(rng() % 150) : 150 + static_cast<int64_t>(rng() % 550);
      std::memcpy(&X(j, 0), &distinct(src, 0), size_t(d) * sizeof(float));
    }
    Matrix<float> Q = random_matrix(30, d, seed + 6);
    for (int64_t i = 0; i < 10; ++i) std::memcpy(&Q(i, 0), &distinct(i, 0), size_t(d) * sizeof(float));
    for (Metric metric : kMetrics) {
      Matrix<float> Qm = Q, Xm = X;
      if (metric == Metric::dot) normalize_rows(Qm), normalize_rows(Xm);
      for (int64_t k : {int64_t{1}, int64_t{10}, int64_t{100}, n}) {
        const std::string label = std::string(to_string(metric)) + " random duplicates k=" + std::to_string(k);
        const KnnResult r = knn(context(), Qm.view(), Xm.view(), k, metric);
        expect_matches_reference(backend(), Qm, Xm, k, metric, r, Ties::exact, label);
        expect_equal_rows_in_id_order(Xm, r, label);
      }
    }
    // A query equal to base rows: under l2, sqeuclidean and l1 its copies come first at exactly 0.
    for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::l1}) {
      const KnnResult r = knn(context(), Q.view(), X.view(), 3, metric);
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
  {
    const Matrix<float> base = integer_matrix(400, 10, 5, 71);
    Matrix<float> X(1200, 10);
    for (int64_t i = 0; i < X.rows(); ++i)
      for (int64_t j = 0; j < 10; ++j) X(i, j) = base(i % 400, j);
    const Matrix<float> Q = integer_matrix(23, 10, 5, 72);
    for (Metric metric : kMetrics)
      for (int64_t k : {int64_t{1}, int64_t{30}, int64_t{300}, int64_t{1100}}) {
        const std::string label = std::string(to_string(metric)) + " whole-number triplicates k=" + std::to_string(k);
        const KnnResult r = knn(context(), Q.view(), X.view(), k, metric);
        expect_matches_reference(backend(), Q, X, k, metric, r, Ties::exact, label);
        expect_equal_rows_in_id_order(X, r, label);
      }
  }
}

// Small whole numbers (as in the digits data): distances and dot products are exact in float32
// and tie exactly all the time; the ids must equal the float64 ranking with ties to the lower
// id, row for row, and the values the float64 ones rounded once.
TEST_P(KnnTest, IntegerDataTiesExactly) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Matrix<float> Q = integer_matrix(40, 8, 4, seed + 7);
  const Matrix<float> X = integer_matrix(3000, 8, 4, seed + 8);
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::dot, Metric::l1}) {
    for (int64_t k : {int64_t{1}, int64_t{50}, int64_t{1500}}) {
      const KnnResult r = knn(context(), Q.view(), X.view(), k, metric);
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

/// Every row of X scored in float64 against query row i of Q and sorted by (key, id): the
/// rule's ranking, with the library's keys (squared distance, negated similarity, cosine 0 for
/// a zero row and clamped to [-1, 1]) summed in the same order.
std::vector<std::pair<double, int64_t>> rule_ranking(const Matrix<float>& Q, int64_t i, const Matrix<float>& X,
                                                     Metric metric) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < X.rows(); ++j) {
    double key = 0, qq = 0, xx = 0;
    for (int64_t c = 0; c < X.cols(); ++c) {
      const double a = Q(i, c), b = X(j, c);
      key += metric == Metric::l2 || metric == Metric::sqeuclidean ? (a - b) * (a - b) : -a * b;
      qq += a * a, xx += b * b;
    }
    if (metric == Metric::cosine)
      key = qq > 0 && xx > 0 ? std::clamp(key / (std::sqrt(qq) * std::sqrt(xx)), -1., 1.) : 0;
    all.emplace_back(key, j);
  }
  std::sort(all.begin(), all.end());
  return all;
}

/// Brute-force k-NN on the GPU with inputs and outputs in device memory.
KnnResult knn_on_device(const Matrix<float>& Q, const Matrix<float>& X, int64_t k, Metric metric) {
  const Context ctx = gpu_context();
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  DeviceMatrix<float> dv(ctx, Q.rows(), k);
  DeviceMatrix<int64_t> di(ctx, Q.rows(), k);
  knn(ctx, dQ.view(), dX.view(), k, metric, dv.view(), di.view(), KnnMethod::brute);
  KnnResult r{Matrix<float>(Q.rows(), k), Matrix<int64_t>(Q.rows(), k)};
  dv.copy_to_host(r.values.view()), di.copy_to_host(r.ids.view());
  return r;
}

// Far more rows than the candidate margin (k + 16) tie, or nearly tie, at the k-th key: points
// of a 7 x 7 (x 7) grid, and copies of 5 random points. Float32 rounding picks an arbitrary part
// of such a group as candidates; the answer must still be the rule's, row for row.
TEST_P(KnnTest, HeavyTiesFollowTheFloat64Rule) {
  SIMKIT_REQUIRE_BACKEND(backend());
  auto grid = [](int64_t n, int64_t d, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    Matrix<float> P(n, d);
    for (int64_t e = 0; e < P.size(); ++e) P.data()[e] = float(int(u(rng) * 3)) / 3.f;
    return P;
  };
  // Copies of 5 points, half of them moved by one unit in the last place of one coordinate:
  // exact ties, and near-ties that float32 keys cannot see.
  auto copies = [](int64_t n, int64_t d, uint64_t seed) {
    const Matrix<float> few = random_matrix(5, d, seed);
    std::mt19937_64 rng(seed + 1);
    Matrix<float> P(n, d);
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(&P(j, 0), &few(int64_t(rng() % 5), 0), size_t(d) * sizeof(float));
      float& c = P(j, int64_t(rng() % uint64_t(d)));
      if (rng() % 2) c = std::nextafter(c, rng() % 2 ? 2.f : -2.f);
    }
    return P;
  };
  struct Shape {
    const char* name;
    Matrix<float> X, Q;
  };
  const Shape shapes[] = {{"grid d=2", grid(3001, 2, 9), grid(257, 2, 72)},
                          {"grid d=3", grid(3001, 3, 10), grid(257, 3, 73)},
                          {"copies d=5", copies(3001, 5, 11), random_matrix(257, 5, 74)}};
  for (const Shape& s : shapes)
    for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::dot, Metric::cosine}) {
      std::vector<std::vector<std::pair<double, int64_t>>> want;
      for (int64_t i = 0; i < s.Q.rows(); ++i) want.push_back(rule_ranking(s.Q, i, s.X, metric));
      // The GPU re-scores on the host when the base is there, on the device when it is there.
      for (bool on_device : {false, true}) {
        if (on_device && backend() != Backend::gpu) continue;
        for (int64_t k : {int64_t{1}, int64_t{10}, int64_t{100}}) {
          const KnnResult r = on_device ? knn_on_device(s.Q, s.X, k, metric)
                                        : knn(context(), s.Q.view(), s.X.view(), k, metric, KnnMethod::brute);
          int64_t wrong = 0;
          for (int64_t i = 0; i < s.Q.rows(); ++i)
            for (int64_t p = 0; p < k; ++p) {
              const auto [key, id] = want[size_t(i)][size_t(p)];
              const double value = metric == Metric::l2 ? std::sqrt(key) : metric == Metric::sqeuclidean ? key : -key;
              if (r.ids(i, p) != id || r.values(i, p) != float(value)) {
                ++wrong;
                break;
              }
            }
          EXPECT_EQ(wrong, 0) << s.name << " " << to_string(metric) << " k=" << k << (on_device ? " device" : " host")
                              << ": queries that differ";
        }
      }
    }
}

// One query over 50,000 rows, k up to 1000. The CPU cuts the base into stripes so that every
// thread works and merges the stripes' selections: the same bits as the single-stripe (1 thread)
// run, whatever the thread count.
TEST_P(KnnTest, SingleQueryLargeBase) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Qm = inputs_for(metric, 1, 16, seed + 9), Xm = inputs_for(metric, 50000, 16, seed + 10);
    for (int64_t k : {int64_t{1}, int64_t{10}, int64_t{1000}}) {
      const std::string label = std::string(to_string(metric)) + " m=1 n=50000 k=" + std::to_string(k);
      const Context ctx = backend() == Backend::cpu ? cpu_context(1) : gpu_context();
      const KnnResult r = knn(ctx, Qm.view(), Xm.view(), k, metric);
      if (backend() == Backend::cpu) {
        for (int threads : {2, 3, 8}) {
          const KnnResult many = knn(cpu_context(threads), Qm.view(), Xm.view(), k, metric);
          expect_same_bits(r, many, label + " 1 vs " + std::to_string(threads) + " threads");
        }
      }
      expect_matches_reference(backend(), Qm, Xm, k, metric, r, Ties::near_ok, label);
    }
  }
}

// Many queries, n crossing base tiles: on the CPU one stripe per query tile with 2 threads (9
// tiles of 256), the same bits as with 1.
TEST_P(KnnTest, ManyQueries) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Metric metric : kMetrics) {
    const Matrix<float> Qm = inputs_for(metric, 2100, 12, seed + 11), Xm = inputs_for(metric, 1500, 12, seed + 12);
    const std::string label = std::string(to_string(metric)) + " m=2100 n=1500 k=5";
    const Context ctx = backend() == Backend::cpu ? cpu_context(2) : gpu_context();
    const KnnResult r = knn(ctx, Qm.view(), Xm.view(), 5, metric);
    if (backend() == Backend::cpu) {
      expect_same_bits(knn(cpu_context(1), Qm.view(), Xm.view(), 5, metric), r, label + " 1 vs 2 threads");
    }
    expect_matches_reference(backend(), Qm, Xm, 5, metric, r, Ties::near_ok, label);
  }
}

// Cosine with zero rows and pearson with constant rows: similarity 0, never NaN.
TEST_P(KnnTest, ZeroNormRowsRankAsZeroSimilarity) {
  SIMKIT_REQUIRE_BACKEND(backend());
  Matrix<float> Q = random_matrix(6, 17, 81), X = random_matrix(90, 17, 82);
  for (int64_t j = 0; j < 17; ++j) Q(2, j) = 0.f, X(5, j) = 0.f, X(40, j) = 3.f;
  for (Metric metric : {Metric::cosine, Metric::pearson}) {
    const KnnResult r = knn(context(), Q.view(), X.view(), 90, metric);
    for (int64_t i = 0; i < r.values.size(); ++i) ASSERT_TRUE(std::isfinite(r.values.data()[i])) << to_string(metric);
    expect_matches_reference(backend(), Q, X, 90, metric, r, Ties::near_ok, to_string(metric));
  }
}

// Near neighbours far from the origin: the expanded squared distance cancels completely, yet
// the ranking and values come out as in float64.
TEST_P(KnnTest, FarFromOrigin) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Matrix<float> Q = random_matrix(20, 64, seed + 13);
  Matrix<float> X = random_matrix(2000, 64, seed + 14);
  for (Matrix<float>* A : {&Q, &X})
    for (int64_t e = 0; e < A->size(); ++e) A->data()[e] = 1000.f + 0.01f * A->data()[e];
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::l1, Metric::pearson}) {
    const KnnResult r = knn(context(), Q.view(), X.view(), 20, metric);
    const KnnCheck st = expect_matches_reference(backend(), Q, X, 20, metric, r, Ties::near_ok,
                                                 std::string(to_string(metric)) + " offset 1000");
    EXPECT_GT(st.ids_checked, st.positions * 9 / 10);
  }
}

// The caller-provided output form fills exactly the views it is given.
TEST_P(KnnTest, WritesIntoCallerOutputs) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(7, 5, seed + 15);
  const Matrix<float> X = random_matrix(300, 5, seed + 16);
  Matrix<float> values(7, 4, -1.f);
  Matrix<int64_t> ids(7, 4, -1);
  knn(context(), Q.view(), X.view(), 4, Metric::cosine, values.view(), ids.view());
  const KnnResult r = knn(context(), Q.view(), X.view(), 4, Metric::cosine);
  EXPECT_EQ(std::memcmp(values.data(), r.values.data(), sizeof(float) * 28), 0);
  EXPECT_EQ(std::memcmp(ids.data(), r.ids.data(), sizeof(int64_t) * 28), 0);
}

// Progress reports come from the calling thread only, never decrease and end at 1 (on the CPU
// with 1 and with 2 threads).
TEST_P(KnnTest, ProgressFromCallingThread) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> Q = random_matrix(3, 16, seed + 17);
  const Matrix<float> X = random_matrix(60000, 16, seed + 18);
  std::vector<std::pair<Context, std::string>> runs;
  if (backend() == Backend::cpu)
    runs = {{cpu_context(1), "1 thread"}, {cpu_context(2), "2 threads"}};
  else
    runs = {{gpu_context(), "gpu"}};
  for (auto& [ctx, label] : runs) {
    const ProgressLog log(ctx);
    (void)knn(ctx, Q.view(), X.view(), 10, Metric::l2);
    log.expect_well_formed(label);
  }
}

// ------------------------------------------------------------ near-ties below float32's reach

/// A near-tie cluster: rows whose values differ from the value at the cluster's centre by
/// `units` (positive: worse), `copies` rows each. With k = 10 the cut falls inside the three
/// rows at +1, so the selection must keep the two lower ids of those.
struct Step {
  int units, copies;
};
constexpr Step kSteps[] = {{-9, 1}, {-6, 2}, {-4, 1}, {-2, 1}, {0, 3}, {1, 3}, {2, 1}, {4, 2}, {7, 1}, {11, 1}};

/// v minus its components along the orthonormal rows of `basis`, scaled to unit length. Twice
/// over, because one Gram-Schmidt pass in float64 leaves ~1e-16 of each.
std::vector<double> orthonormal_rest(std::vector<double> v, const std::vector<std::vector<double>>& basis) {
  for (int pass = 0; pass < 2; ++pass)
    for (const std::vector<double>& b : basis) {
      const double along = std::inner_product(v.begin(), v.end(), b.begin(), 0.0);
      for (size_t t = 0; t < v.size(); ++t) v[t] -= along * b[t];
    }
  const double norm = std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0));
  for (double& x : v) x /= norm;
  return v;
}

/// A random unit vector orthogonal to the orthonormal rows of `basis` and 0 where `zero` is set.
std::vector<double> random_orthogonal(const std::vector<std::vector<double>>& basis, const std::vector<bool>& zero,
                                      std::mt19937_64& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> v(zero.size());
  for (size_t t = 0; t < v.size(); ++t) v[t] = zero[t] ? 0.0 : g(rng);
  return orthonormal_rest(std::move(v), basis);
}

/// Queries, and a base in which every query has its own cluster -- a row c, c three times, and c
/// with one coordinate moved so that the metric moves by a set number of units -- at random ids
/// among rows far worse than any of it. 16 rows a cluster: every one fits in the 26 candidates
/// (k + 16) that each backend re-scores for k = 10, so the float32 pass needs only to tell the
/// cluster from the rest.
///
/// The float32 pass must not be able to rank the cluster itself, and rows that differ in one
/// coordinate keep most of their rounding in common: only sums far larger than the differences
/// hide them. The distances have such sums in the expanded form (|x|^2 against a distance 8
/// times smaller than the uniform rows'): c is q plus noise of half their spread. For the
/// similarities, c has similarity 0.01 with q, so that the products' partial sums are ~30 times
/// the value; the queries are orthonormal, the other rows have similarity 0 (other queries'
/// clusters) or -0.27 (the rest), and every row has mean 0, so that pearson's centring changes
/// nothing. There c's random part is 0 on the coordinates to be moved: c is 0.01 q alone there,
/// small enough for a float32 move of a tenth of a unit.
struct NearTies {
  Matrix<float> Q, X;
};

NearTies near_ties(Metric metric, int64_t m, int64_t n, int64_t d, double unit, uint64_t seed) {
  const bool similarity = larger_is_better(metric);
  constexpr double kRho = 0.01;
  constexpr size_t kMovable = 12;  // coordinates set aside for the moves (9 distinct steps)
  NearTies data{random_matrix(m, d, seed), random_matrix(n, d, seed + 1)};
  std::mt19937_64 rng(seed + 2);
  const std::vector<bool> none(static_cast<size_t>(d), false);
  // The all-ones direction, then the queries'.
  std::vector<std::vector<double>> basis(1, std::vector<double>(static_cast<size_t>(d), 1.0 / std::sqrt(double(d))));
  if (similarity) {
    for (int64_t i = 0; i < m; ++i) {
      basis.push_back(random_orthogonal(basis, none, rng));
      for (int64_t t = 0; t < d; ++t) data.Q(i, t) = static_cast<float>(basis.back()[size_t(t)]);
    }
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<double> w = random_orthogonal(basis, none, rng);
      for (int64_t t = 0; t < d; ++t) {
        double toward_queries = 0;
        for (size_t b = 1; b < basis.size(); ++b) toward_queries += basis[b][size_t(t)];
        data.X(j, t) = static_cast<float>(w[size_t(t)] - toward_queries / std::sqrt(double(m)));
      }
    }
  }
  std::vector<int64_t> slots(static_cast<size_t>(n));
  std::iota(slots.begin(), slots.end(), int64_t{0});
  std::shuffle(slots.begin(), slots.end(), rng);
  const Matrix<float> noise = random_matrix(m, d, seed + 3);
  const double worse = similarity ? -1.0 : 1.0;
  size_t next_slot = 0;
  for (int64_t i = 0; i < m; ++i) {
    const float* q = &data.Q(i, 0);
    std::vector<int64_t> coords(static_cast<size_t>(d));
    std::iota(coords.begin(), coords.end(), int64_t{0});
    std::shuffle(coords.begin(), coords.end(), rng);
    std::vector<float> c(static_cast<size_t>(d));
    if (similarity) {
      // The random part lives off the movable coordinates: orthogonal to the basis cut to the
      // other coordinates (made orthonormal again), it is orthogonal to the basis itself.
      coords.resize(kMovable);
      std::vector<bool> movable(static_cast<size_t>(d), false);
      for (int64_t t : coords) movable[size_t(t)] = true;
      std::vector<std::vector<double>> cut;
      for (std::vector<double> b : basis) {
        for (size_t t = 0; t < b.size(); ++t)
          if (movable[t]) b[t] = 0;
        cut.push_back(orthonormal_rest(std::move(b), cut));
      }
      const std::vector<double> w = random_orthogonal(cut, movable, rng);
      for (int64_t t = 0; t < d; ++t)
        c[size_t(t)] = static_cast<float>(kRho * q[t] + std::sqrt(1 - kRho * kRho) * w[size_t(t)]);
    } else {
      for (int64_t t = 0; t < d; ++t) c[size_t(t)] = q[t] + 0.5f * noise(i, t);
    }
    const double v0 = reference_metric(q, c.data(), d, metric), step = unit * std::abs(v0);
    size_t next_coord = 0;
    for (const Step& s : kSteps) {
      std::vector<float> row = c;
      if (s.units != 0) {
        // Move one coordinate (a fresh one per step) by the amount the metric's slope there
        // asks for; keep it where the float32 rounding of the moved coordinate lands the value
        // within a fifth of a unit of its step, so that distinct steps stay 0.6 units apart.
        const double want = worse * s.units * step;
        bool placed = false;
        while (!placed && next_coord < coords.size()) {
          const size_t t = size_t(coords[next_coord++]);
          std::vector<float> up = c, down = c;
          up[t] += 1e-3f, down[t] -= 1e-3f;
          const double slope =
              (reference_metric(q, up.data(), d, metric) - reference_metric(q, down.data(), d, metric)) /
              (double(up[t]) - double(down[t]));
          if (slope == 0) continue;
          row = c;
          row[t] = static_cast<float>(c[t] + want / slope);
          placed = std::abs(reference_metric(q, row.data(), d, metric) - v0 - want) <= 0.2 * step;
        }
        if (!placed)
          ADD_FAILURE() << to_string(metric) << " d=" << d << ": no coordinate gives " << s.units << " units";
      }
      for (int copy = 0; copy < s.copies; ++copy)
        std::memcpy(&data.X(slots[next_slot++], 0), row.data(), size_t(d) * sizeof(float));
    }
  }
  return data;
}

// Near-ties: values 0.6 to 4 units apart, where a unit is 2.5e-7 of the value for the metrics
// ranked through a float32 product (l2, sqeuclidean, cosine, dot, pearson). A float32 ranking
// gets them wrong (near_ties says why); but they are more than a float32 ulp apart (at most
// 1.2e-7 relative), so the order does not hinge on whether a backend ranks the float64 value or
// its float32 rounding (the value it outputs), and far more than float64's rounding, so any
// float64 re-score ranks as the reference does. l1 is summed in float32 on both backends and
// not re-scored: its unit is 1e-4, so that 0.6 units stay above twice the float32 error bound
// of a sum of d non-negative terms (d 2^-24, 2.3e-5 at d = 384) whatever the summation order.
// Both backends must rank exactly as float64 does, ties to the lower id, and the gpu instance
// must give the CPU's ids position for position.
TEST_P(KnnTest, NearTiesRankTheSameOnBothBackends) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t m = 7, k = 10;
  struct Shape {
    int64_t n, d;
  };
  for (const Shape shape : {Shape{2999, 37}, Shape{1031, 37}, Shape{2999, 384}, Shape{1031, 384}})
    for (Metric metric : kMetrics) {
      const double unit = metric == Metric::l1 ? 1e-4 : 2.5e-7;
      const std::string label = std::string(to_string(metric)) + " n=" + std::to_string(shape.n) +
                                " d=" + std::to_string(shape.d) + " near-ties";
      const NearTies data = near_ties(metric, m, shape.n, shape.d, unit, seed + 20);
      const Matrix<float>&Q = data.Q, &X = data.X;
      const ReferenceKnn ref = reference_knn(Q, X, k + 1, metric);
      // The data are what they claim: the best k + 1 lie within the cluster's span of 20 units,
      // and neighbours in the ranking are identical rows or at least half a unit apart.
      for (int64_t i = 0; i < m; ++i) {
        const std::vector<double>& v = ref.values[size_t(i)];
        const double u = unit * std::abs(v[0]);
        ASSERT_LE(std::abs(v[size_t(k)] - v[0]), 20.5 * u) << label << " query " << i;
        for (int64_t p = 1; p <= k; ++p) {
          const int64_t a = ref.ids[size_t(i)][size_t(p - 1)], b = ref.ids[size_t(i)][size_t(p)];
          ASSERT_TRUE(same_row(X, a, b) || std::abs(v[size_t(p)] - v[size_t(p - 1)]) >= 0.5 * u)
              << label << " query " << i << " positions " << p - 1 << ", " << p;
        }
      }
      const KnnResult r = knn(context(), Q.view(), X.view(), k, metric);
      expect_knn_matches_reference(Q, X, k, metric, r, Ties::exact, 0.0, label);
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
          if (r.ids(i, p) != ref.ids[size_t(i)][size_t(p)] && wrong++ < 5)
            ADD_FAILURE() << label << ": query " << i << " position " << p << ": id " << r.ids(i, p)
                          << ", float64 ranks id " << ref.ids[size_t(i)][size_t(p)] << " there";
      EXPECT_EQ(wrong, 0) << label << ": positions where the ids differ from the float64 ranking";
      if (on_gpu()) {
        const KnnResult cpu = knn(cpu_context(), Q.view(), X.view(), k, metric);
        int64_t differ = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < k; ++p)
            if (r.ids(i, p) != cpu.ids(i, p) && differ++ < 5)
              ADD_FAILURE() << label << ": query " << i << " position " << p << ": GPU id " << r.ids(i, p)
                            << ", CPU id " << cpu.ids(i, p);
        EXPECT_EQ(differ, 0) << label << ": positions where the GPU's ids differ from the CPU's";
      }
    }
}

// ------------------------------------------------------------------------ the GPU's own cases

// Inputs and outputs on the device, in every combination with host views, give exactly what
// the all-host call gives.
TEST(KnnGpuOnly, DeviceResidentInputsAndOutputs) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const int64_t k = 25;
  const Matrix<float> Q = random_matrix(41, 37, 91), X = random_matrix(3001, 37, 92);
  const DeviceMatrix<float> dQ(ctx, Q.view()), dX(ctx, X.view());
  for (Metric metric : kMetrics) {
    const KnnResult host = knn(ctx, Q.view(), X.view(), k, metric);
    expect_matches_reference(Backend::gpu, Q, X, k, metric, host, Ties::near_ok,
                             std::string(to_string(metric)) + " host");
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
      expect_matches_reference(Backend::gpu, Q, X, k, metric, r, Ties::near_ok, label);
      // The base and the outputs may sit anywhere without changing an id.
      EXPECT_EQ(std::memcmp(r.ids.data(), host.ids.data(), size_t(r.ids.size()) * 8), 0) << label;
    }
  }
}

// A budget of 1 MiB forces many base tiles and several query batches (and the per-tile norms
// path); ids must not change, and l2 / sqeuclidean / l1 values are bitwise the same because
// they do not depend on the tiling (exact re-scoring; l1 sums in one fixed order).
TEST(KnnGpuOnly, SmallBudgetForcesManyTilesAndBatches) {
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
    expect_matches_reference(Backend::gpu, Qs, X, 10, metric, r, Ties::near_ok,
                             std::string(to_string(metric)) + " 1 MiB budget");
  }
}

TEST(KnnGpuOnly, BudgetTooSmallIsOutOfMemory) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(3, 4000, 111), X = random_matrix(50, 4000, 112);
  // A 2 KiB budget cannot hold one 4000-float row.
  expect_error([&] { knn(gpu_context(2048), Q.view(), X.view(), 5, Metric::l2); }, ErrorCode::out_of_memory,
               "gpu_memory_budget");
}

// On random float data the CPU and GPU backends agree on every id, except where the two
// candidates' float64 values lie within float rounding of each other.
TEST(KnnGpuOnly, SameIdsAsCpu) {
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
// device (the CPU's run is test_digits_cpu.cpp's).
TEST(KnnGpuOnly, DigitsGroundTruthRowForRow) {
  SIMKIT_REQUIRE_GPU();
  const std::string dir = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/";
  Matrix<float> X, Q;
  Matrix<int64_t> truth;
  ASSERT_TRUE(read_vecs(dir + "digits_base.fvecs", X) && read_vecs(dir + "digits_query.fvecs", Q) &&
              read_vecs(dir + "digits_groundtruth_sqeuclidean.ivecs", truth))
      << "digits data unreadable under " << dir << " (they ship with the repository: tests/data/README.md)";
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
