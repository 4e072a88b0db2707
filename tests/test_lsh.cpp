// The lsh index beyond the contract suite (test_index.cpp): the hash family's collision rate,
// recall rising with probes and tables, every bucket probed equal to knn, short rows padded and
// counted (never filled by a scan), candidate counts, save/load, contradictory files, the
// factory's refusals, the seed's preset; and on the GPU, the same results as the CPU in both
// candidate regimes, with multi-probe and short rows in the dense one.

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "index/lsh/lsh_hash.hpp"
#include "index_check.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                               Metric::dot, Metric::pearson,     Metric::l1};

std::unique_ptr<Index> build(const Context& ctx, const std::string& description, const Matrix<float>& X,
                             Metric metric) {
  auto index = make_index(description, X.cols(), metric);
  index->train(ctx, X.view());
  index->add(ctx, X.view());
  return index;
}

LshSearchParams with_probes(int64_t probes, SearchStats* stats = nullptr) {
  LshSearchParams p;
  p.probes = probes;
  p.stats = stats;
  return p;
}

// A random hyperplane separates two vectors at angle theta with probability theta / pi, so one
// sign bit agrees with probability 1 - theta / pi (Charikar 2002). 2,048 one-bit hashes per
// pair: the observed rate has a standard deviation <= sqrt(0.25 / 2048) = 0.011; each pair must
// lie within 0.06 (5.4 sigma) and the mean signed error over 40 pairs within 0.01 (~6 sigma of
// that mean).
TEST(LshHash, SignCollisionRateIsOneMinusAngleOverPi) {
  const int64_t d = 24, H = 2048, pairs = 40;
  detail::LshTables T;
  detail::lsh_configure(T, d, Metric::cosine, H, 1);
  detail::lsh_draw(T, 7);
  const Matrix<float> A = random_matrix(pairs, d, 1, Distribution::gaussian);
  const Matrix<float> B = random_matrix(pairs, d, 2, Distribution::gaussian);
  Matrix<float> P(2 * pairs, d);
  for (int64_t i = 0; i < pairs; ++i)
    for (int64_t j = 0; j < d; ++j) {
      // Mix B towards A by a varying amount: angles from near 0 to near pi/2 and beyond.
      const double w = double(i) / pairs;
      P(2 * i, j) = A(i, j);
      P(2 * i + 1, j) = float((1 - w) * A(i, j) * (i % 2 ? 1 : -0.2) + w * B(i, j));
    }
  std::vector<float> proj(size_t(2 * pairs * H));
  detail::lsh_project(T, P.view(), proj.data(), 1);
  double signed_error = 0;
  for (int64_t i = 0; i < pairs; ++i) {
    double dot = 0, na = 0, nb = 0;
    for (int64_t j = 0; j < d; ++j) {
      dot += double(P(2 * i, j)) * P(2 * i + 1, j);
      na += double(P(2 * i, j)) * P(2 * i, j);
      nb += double(P(2 * i + 1, j)) * P(2 * i + 1, j);
    }
    const double theta = std::acos(std::clamp(dot / std::sqrt(na * nb), -1.0, 1.0));
    int64_t same = 0;
    for (int64_t h = 0; h < H; ++h)
      same += (proj[size_t(2 * i * H + h)] >= 0) == (proj[size_t((2 * i + 1) * H + h)] >= 0);
    const double rate = double(same) / H, want = 1 - theta / std::numbers::pi;
    EXPECT_NEAR(rate, want, 0.06) << "pair " << i << " theta " << theta;
    signed_error += rate - want;
  }
  EXPECT_NEAR(signed_error / pairs, 0.0, 0.01);
}

class Lsh : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Lsh, ::testing::ValuesIn(kBackends), BackendName{});

// More probes and more tables only add candidates (the first tables of a larger index are the
// smaller index's: same seed, same draw order), and the ranking over candidates is exact, so
// recall can only rise; on clustered data it must rise substantially.
TEST_P(Lsh, RecallRisesWithProbesAndTables) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = clustered(4000, 32, 40, 0.3, 3), Q = clustered(60, 32, 40, 0.3, 3 + 100);
  for (Metric metric : {Metric::cosine, Metric::l2, Metric::l1}) {
    const KnnResult truth = knn(context(), Q.view(), X.view(), 10, metric);
    const std::string bits = metric == Metric::cosine ? ",bits=12" : ",bits=8";
    double r[2][4];
    const int64_t probes[] = {1, 4, 16, 64};
    for (int t = 0; t < 2; ++t) {
      auto index = build(context(), "lsh,tables=" + std::to_string(t ? 8 : 2) + bits, X, metric);
      for (int p = 0; p < 4; ++p) {
        r[t][p] = recall(index->search(context(), Q.view(), 10, with_probes(probes[p])), truth);
        if (p > 0) {
          EXPECT_GE(r[t][p], r[t][p - 1]) << to_string(metric) << " tables index " << t << " probes " << probes[p];
        }
        if (t > 0) {
          EXPECT_GE(r[1][p], r[0][p]) << to_string(metric) << " probes " << probes[p];
        }
      }
    }
    EXPECT_GT(r[1][3], r[0][0] + 0.2) << to_string(metric);
    EXPECT_GT(r[1][3], 0.6) << to_string(metric);
  }
}

TEST_P(Lsh, EveryBucketProbedEqualsKnn) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  for (Metric metric : kMetrics) {
    const Matrix<float> X = inputs_for(metric, 700, 19, seed), Q = inputs_for(metric, 31, 19, seed + 5);
    const KnnResult truth = knn(context(), Q.view(), X.view(), 9, metric);
    auto index = build(context(), "lsh,tables=3,bits=5", X, metric);
    SearchStats stats;
    // Sign hashing: 2^5 probes flip every bit combination; p-stable: the whole-table rule.
    const int64_t probes =
        index->metric() == Metric::l2 || metric == Metric::sqeuclidean || metric == Metric::l1 ? int64_t(1) << 30 : 32;
    expect_same(index->search(context(), Q.view(), 9, with_probes(probes, &stats)),
                IndexSearchResult{truth.values, truth.ids}, to_string(metric));
    EXPECT_EQ(stats.candidates, 31 * 700) << to_string(metric);
    EXPECT_EQ(stats.short_rows, 0);
  }
}

TEST_P(Lsh, ShortRowsArePaddedAndCountedNeverScanned) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(500, 8, 11);
  Matrix<float> Q = random_matrix(3, 8, 12);
  for (int64_t j = 0; j < 8; ++j) Q(1, j) = 1000.0f + float(j);  // far from every stored row
  for (Metric metric : {Metric::l2, Metric::l1}) {
    auto index = build(context(), "lsh,tables=1,bits=16,width=0.5", X, metric);
    SearchStats stats;
    const IndexSearchResult r = index->search(context(), Q.view(), 5, with_probes(1, &stats));
    for (int64_t p = 0; p < 5; ++p) {
      EXPECT_EQ(r.ids(1, p), -1) << to_string(metric);
      EXPECT_EQ(r.values(1, p), INFINITY);
    }
    EXPECT_GE(stats.short_rows, 1);
    // Every returned id came from the query's bucket: far fewer than a scan would touch.
    EXPECT_LT(stats.candidates, 3 * 500 / 4);
  }
}

TEST_P(Lsh, CandidatesAreCountedDistinct) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = clustered(1200, 16, 10, 0.2, 21), Q = clustered(20, 16, 10, 0.2, 22);
  auto index = build(context(), "lsh,tables=4,bits=6", X, Metric::cosine);
  SearchStats one, all;
  index->search(context(), Q.view(), 4, with_probes(1, &one));
  index->search(context(), Q.view(), 4, with_probes(64, &all));
  EXPECT_GT(one.candidates, 0);
  EXPECT_LT(one.candidates, all.candidates);
  EXPECT_EQ(all.candidates, 20 * 1200);  // 2^6 probes reach every row, each counted once
  // Counts add up over searches given the same struct.
  index->search(context(), Q.view(), 4, with_probes(64, &all));
  EXPECT_EQ(all.candidates, 2 * 20 * 1200);
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() / ("simkit-lsh-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

TEST_P(Lsh, SaveLoadRoundTripIsIdentical) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const TempDir dir;
  const Matrix<float> X = clustered(900, 12, 9, 0.2, 31), Q = random_matrix(25, 12, 32);
  for (Metric metric : kMetrics) {
    auto index = build(context(), "lsh,tables=5,bits=4,probes=3,seed=9", X, metric);
    index->remove(std::vector<int64_t>{3, 4, 500});
    const std::string path = dir.file(std::string(to_string(metric)) + ".simkit");
    index->save(path);
    auto loaded = load_index(path);
    EXPECT_EQ(loaded->description(), index->description());
    EXPECT_EQ(loaded->memory_bytes(), index->memory_bytes());
    expect_same(loaded->search(context(), Q.view(), 7), index->search(context(), Q.view(), 7), to_string(metric));
  }
}

/// Rewrites a saved lsh file with one section replaced.
void rewrite(const std::string& from, const std::string& to, const std::string& name,
             const std::vector<unsigned char>& payload) {
  const detail::IndexFile f = detail::IndexFile::read(from);
  detail::IndexFileWriter w;
  std::vector<std::vector<unsigned char>> keep;
  for (const char* s : {"type", "metric", "dim", "size", "next_id", "description", "trained", "width", "projections",
                        "offsets", "ids", "vectors", "key_start", "keys", "bucket_start", "members"}) {
    size_t bytes = 0;
    const unsigned char* p = f.bytes(s, &bytes);
    keep.emplace_back(p, p + bytes);
    if (name == s) keep.back() = payload;
    w.add(s, keep.back().data(), keep.back().size());
  }
  w.write(to);
}

template <class T>
std::vector<T> section(const std::string& path, const std::string& name) {
  const detail::IndexFile f = detail::IndexFile::read(path);
  size_t bytes = 0;
  const unsigned char* p = f.bytes(name, &bytes);
  std::vector<T> v(bytes / sizeof(T));
  std::memcpy(v.data(), p, bytes);
  return v;
}

template <class T>
std::vector<unsigned char> as_bytes(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  return {p, p + v.size() * sizeof(T)};
}

TEST(LshFile, ContradictionsAreRefused) {
  const TempDir dir;
  const Context ctx = cpu_context();
  const std::string good = dir.file("good.simkit"), bad = dir.file("bad.simkit");
  build(ctx, "lsh,tables=3,bits=4,width=0.5", random_matrix(200, 6, 41), Metric::l2)->save(good);
  rewrite(good, bad, "none", {});
  EXPECT_EQ(load_index(bad)->size(), 200);

  auto members = section<int64_t>(good, "members");
  members[7] = 200;
  rewrite(good, bad, "members", as_bytes(members));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "out of range");
  members = section<int64_t>(good, "members");
  members[7] = members[8];
  rewrite(good, bad, "members", as_bytes(members));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "twice");

  auto keys = section<int64_t>(good, "keys");
  std::swap(keys[0], keys[1]);
  rewrite(good, bad, "keys", as_bytes(keys));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "not ascending");

  auto starts = section<int64_t>(good, "bucket_start");
  starts[1] = starts[2];
  rewrite(good, bad, "bucket_start", as_bytes(starts));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "partition");
  auto key_start = section<int64_t>(good, "key_start");
  key_start.back() += 1;
  rewrite(good, bad, "key_start", as_bytes(key_start));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "partition");

  auto proj = section<float>(good, "projections");
  proj[3] = NAN;
  rewrite(good, bad, "projections", as_bytes(proj));
  expect_error([&] { load_index(bad); }, ErrorCode::io, "NaN");

  const double other = 0.75;
  std::vector<unsigned char> w(8);
  std::memcpy(w.data(), &other, 8);
  rewrite(good, bad, "width", w);
  expect_error([&] { load_index(bad); }, ErrorCode::io, "width");
}

TEST(LshFactory, BadValuesAreRefusedAndThePresetIsTheSeeds) {
  for (const char* d : {"lsh,bits=0", "lsh,bits=33", "lsh,width=-1", "lsh,tables=0", "lsh,probes=0", "lsh,depth=3"})
    expect_error([&] { make_index(d, 8, Metric::cosine); }, ErrorCode::invalid_argument, "lsh");
  const std::string preset = make_index("lsh", 8, Metric::cosine)->description();
  EXPECT_EQ(preset.rfind("lsh,tables=6,bits=2,probes=1,", 0), 0u) << preset;
  // The description parses back to the same parameters.
  const std::string full = make_index("lsh,tables=3,bits=7,probes=5,width=0.125,seed=4", 8, Metric::l2)->description();
  EXPECT_EQ(full, "lsh,tables=3,bits=7,probes=5,width=0.125,seed=4");
  EXPECT_EQ(make_index(full, 8, Metric::l2)->description(), full);
  expect_error([&] { make_index("lsh", 8, Metric::l2)->add(cpu_context(), random_matrix(3, 8, 1).view()); },
               ErrorCode::invalid_argument, "train");
}

// ---------------------------------------------------------------- GPU against CPU

class LshGpuOnly : public ::testing::Test {};

// The GPU hashes its queries with cuBLAS, the CPU with OpenBLAS: a projection within rounding
// of a hash boundary could fall on different sides, so identical results are expected on data
// where that does not happen (random data: the chance is ~1e-6 per hash).
TEST_F(LshGpuOnly, SameResultsAsTheCpuInBothRegimes) {
  SIMKIT_REQUIRE_GPU();
  const Context gpu = gpu_context(), cpu = cpu_context();
  const uint64_t seed = test_seed();
  struct Case {
    const char* description;
    int64_t probes;
    const char* regime;
  } cases[] = {{"lsh,tables=2,bits=10", 2, "sparse gather"},
               {"lsh,tables=8,bits=2", 1, "dense masked scan"},
               {"lsh,tables=2,bits=4", int64_t(1) << 30, "every bucket (dense)"},
               // Small buckets in many tables, two probes each: the bounds from bucket sizes tend
               // to straddle 1/8, leaving the regime to the device's exact count.
               {"lsh,tables=8,bits=4", 2, "multi-probe (counted, then dense or sparse)"}};
  for (Metric metric : kMetrics) {
    const Matrix<float> X = inputs_for(metric, 3000, 29, seed), Q = inputs_for(metric, 70, 29, seed + 3);
    for (const Case& c : cases) {
      auto index = build(cpu, c.description, X, metric);
      const std::string label = std::string(to_string(metric)) + " " + c.regime;
      SearchStats on_cpu, on_gpu;
      const IndexSearchResult want = index->search(cpu, Q.view(), 10, with_probes(c.probes, &on_cpu));
      const double rel = metric == Metric::l1 ? 1e-6 : 0;
      expect_same(index->search(gpu, Q.view(), 10, with_probes(c.probes, &on_gpu)), want, label, rel);
      EXPECT_EQ(on_gpu.candidates, on_cpu.candidates) << label;
      EXPECT_EQ(on_gpu.short_rows, on_cpu.short_rows) << label;
      // Device-resident queries and outputs.
      const DeviceMatrix<float> dq(gpu, Q.view());
      DeviceMatrix<float> dv(gpu, Q.rows(), 10);
      DeviceMatrix<int64_t> di(gpu, Q.rows(), 10);
      index->search(gpu, dq.view(), 10, with_probes(c.probes), dv.view(), di.view());
      IndexSearchResult back{Matrix<float>(Q.rows(), 10), Matrix<int64_t>(Q.rows(), 10)};
      dv.copy_to_host(back.values.view());
      di.copy_to_host(back.ids.view());
      expect_same(back, want, label + " device-resident", rel);
    }
  }
}

// A dense batch (most queries meet a third of the rows or more) holding one query far from
// every row: its probes meet no stored bucket, so it has no candidates and is padded and
// counted on the device as on the CPU, never filled by the scan that scored every row. Two
// probes per table exercise the device's multi-probe lists in the masking pass.
TEST_F(LshGpuOnly, DenseBatchWithAShortRowAndMultiProbe) {
  SIMKIT_REQUIRE_GPU();
  const Context gpu = gpu_context(), cpu = cpu_context();
  const Matrix<float> X = random_matrix(3000, 8, 31);
  Matrix<float> Q = random_matrix(70, 8, 32);
  for (int64_t j = 0; j < 8; ++j) Q(5, j) = 1000.0f + float(j);
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::l1}) {
    for (int64_t probes : {1, 2}) {
      auto index = build(cpu, "lsh,tables=2,bits=2,width=2", X, metric);
      const std::string label = std::string(to_string(metric)) + " probes " + std::to_string(probes);
      SearchStats on_cpu, on_gpu;
      const IndexSearchResult want = index->search(cpu, Q.view(), 10, with_probes(probes, &on_cpu));
      // The premise: the batch is in the dense regime (f >= 1/8) and query 5 is short.
      ASSERT_GE(on_cpu.candidates * 8, Q.rows() * X.rows()) << label;
      ASSERT_GE(on_cpu.short_rows, 1) << label;
      for (int64_t p = 0; p < 10; ++p) ASSERT_EQ(want.ids(5, p), -1) << label;
      const double rel = metric == Metric::l1 ? 1e-6 : 0;
      expect_same(index->search(gpu, Q.view(), 10, with_probes(probes, &on_gpu)), want, label, rel);
      EXPECT_EQ(on_gpu.candidates, on_cpu.candidates) << label;
      EXPECT_EQ(on_gpu.short_rows, on_cpu.short_rows) << label;
      // One query alone: the single-query path.
      SearchStats one_cpu, one_gpu;
      const Matrix<float> q0 = random_matrix(1, 8, 33);
      const IndexSearchResult one = index->search(cpu, q0.view(), 10, with_probes(probes, &one_cpu));
      expect_same(index->search(gpu, q0.view(), 10, with_probes(probes, &one_gpu)), one, label + " single", rel);
      EXPECT_EQ(one_gpu.candidates, one_cpu.candidates) << label;
    }
  }
}

}  // namespace
}  // namespace simkit::test
