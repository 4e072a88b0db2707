// ivf_pq beyond the shared contract (test_index.cpp): recall rising with nprobe and with the
// re-rank; the codes-only estimates equal to a float64 reference of the metric against each
// row's decoded reconstruction; refine refused where no vectors are kept; the search counters;
// the reported footprint; save/load of both forms; contradictory files refused; the factory's
// m rule; and the digits set.

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>
#include <simkit/knn.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "index/ivf/ivf_pq_index.hpp"
#include "index_check.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

class IvfPq : public BackendTest {
 protected:
  std::unique_ptr<Index> build(const std::string& description, const Matrix<float>& X, Metric metric) const {
    auto index = make_index(description, X.cols(), metric);
    index->train(context(), X.view());
    index->add(context(), X.view());
    return index;
  }
};
INSTANTIATE_TEST_SUITE_P(Backends, IvfPq, ::testing::ValuesIn(kBackends), BackendName{});

IvfPqSearchParams probing(int64_t nprobe, int64_t refine = 0) {
  IvfPqSearchParams sp;
  sp.nprobe = nprobe;
  sp.refine = refine;
  return sp;
}

TEST_P(IvfPq, RecallRisesWithNprobeAndWithRefine) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const Matrix<float> X = clustered(6000, 32, 64, 0.3, 61), Q = clustered(200, 32, 64, 0.3, 62);
  for (Metric metric : {Metric::l2, Metric::cosine}) {
    const KnnResult truth = knn(context(), Q.view(), X.view(), 10, metric);
    auto codes_only = build("ivf_pq,nlist=64,m=8,iterations=8,seed=3", X, metric);
    auto refined = build("ivf_pq,nlist=64,m=8,refine=8,iterations=8,seed=3", X, metric);
    double last_codes = -1, last_refined = -1;
    for (int64_t nprobe : {1, 4, 16, 64}) {
      const double rc = recall(codes_only->search(context(), Q.view(), 10, probing(nprobe)), truth);
      const double rr = recall(refined->search(context(), Q.view(), 10, probing(nprobe)), truth);
      // More lists only add candidates; the code ranking may swap a few at the margin.
      EXPECT_GE(rc, last_codes - 0.01) << to_string(metric) << " nprobe " << nprobe;
      EXPECT_GE(rr, last_refined) << to_string(metric) << " nprobe " << nprobe;
      EXPECT_GE(rr, rc) << to_string(metric) << " nprobe " << nprobe << ": the re-rank must not lose recall";
      last_codes = rc, last_refined = rr;
    }
    // 8 codes for 32 coordinates misrank neighbours; re-ranking 80 candidates mends nearly all.
    EXPECT_LT(last_codes, 0.9) << to_string(metric);
    EXPECT_GT(last_refined, 0.97) << to_string(metric);
    EXPECT_GT(last_refined, last_codes + 0.1) << to_string(metric);
    // Deeper re-ranks only help, and re-ranking everything is exact.
    const double r2 = recall(refined->search(context(), Q.view(), 10, probing(64, 2)), truth);
    const double r32 = recall(refined->search(context(), Q.view(), 10, probing(64, 32)), truth);
    EXPECT_GE(r32, r2) << to_string(metric);
    EXPECT_EQ(recall(refined->search(context(), Q.view(), 10, probing(64, 1 << 20)), truth), 1.0);
  }
}

/// The metric between a query and a reconstruction x^ in the coded space, in float64: what the
/// codes-only search estimates (ivf_pq_lists.hpp).
double reconstruction_value(Metric metric, const std::vector<double>& q, const std::vector<double>& x) {
  double s = 0;
  for (size_t t = 0; t < q.size(); ++t) {
    const double e = q[t] - x[t];
    s += metric == Metric::l1 ? std::abs(e) : metric == Metric::dot ? q[t] * x[t] : e * e;
  }
  switch (metric) {
    case Metric::l2: return std::sqrt(s);
    case Metric::cosine:
    case Metric::pearson: return 1 - s / 2;
    default: return s;
  }
}

/// The coded-space form of a row, in float64 (cosine: unit; pearson: centred, unit).
std::vector<double> prepared(Metric metric, const float* x, int64_t d) {
  std::vector<double> out(x, x + d);
  if (metric != Metric::cosine && metric != Metric::pearson) return out;
  double mean = 0, sq = 0;
  if (metric == Metric::pearson) {
    for (double v : out) mean += v;
    mean /= double(d);
  }
  for (double& v : out) v -= mean, sq += v * v;
  for (double& v : out) v = sq > 0 ? v / std::sqrt(sq) : 0;
  return out;
}

TEST_P(IvfPq, CodeEstimatesEqualTheReconstructionReference) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const int64_t n = 300, d = 16, k = n;
  for (Metric metric : {Metric::l2, Metric::sqeuclidean, Metric::cosine, Metric::pearson, Metric::dot, Metric::l1}) {
    const Matrix<float> X = inputs_for(metric, n, d, 71), Q = inputs_for(metric, 5, d, 72);
    auto index = build("ivf_pq,nlist=4,m=4,seed=1", X, metric);
    const detail::IvfPqLists& L = *detail::ivf_pq_lists_of(*index);
    ASSERT_EQ(L.ksub, 256);
    // Every row's reconstruction: its centroid plus its decoded residual.
    std::map<int64_t, std::vector<double>> rebuilt;
    for (int64_t l = 0; l < L.nlist; ++l)
      for (int64_t r = L.arena.begin[size_t(l)]; r < L.arena.end[size_t(l)]; ++r) {
        std::vector<double> x(size_t(d), 0.0);
        for (int64_t j = 0; j < L.m; ++j)
          for (int64_t t = 0; t < L.dsub(); ++t) {
            const int64_t code = L.codes[size_t(r * L.m + j)];
            x[size_t(j * L.dsub() + t)] = double(L.centroids[size_t(l * d + j * L.dsub() + t)]) +
                                          L.codebooks[size_t((j * L.ksub + code) * L.dsub() + t)];
          }
        rebuilt[L.arena.ids[size_t(r)]] = x;
      }
    const IndexSearchResult got = index->search(context(), Q.view(), k, probing(L.nlist));
    for (int64_t q = 0; q < Q.rows(); ++q) {
      const std::vector<double> qp = prepared(metric, &Q(q, 0), d);
      std::set<int64_t> seen;
      for (int64_t p = 0; p < k; ++p) {
        const int64_t id = got.ids(q, p);
        ASSERT_TRUE(rebuilt.count(id)) << to_string(metric) << " query " << q << " slot " << p;
        seen.insert(id);
        const double want = reconstruction_value(metric, qp, rebuilt[id]);
        // The float32 table sum has d products or differences and m additions, each rounded to
        // 2^-24 relative of terms no larger than |q'|^2 + |x^|^2 (or their l1 / dot scale): an
        // error below ~4 d 2^-24 of that scale. 2e-6 d is ten times that, and far below what a
        // wrong code or centroid changes (a code book step, ~1e-2 here).
        double scale = 1;
        for (size_t t = 0; t < qp.size(); ++t) scale += qp[t] * qp[t] + rebuilt[id][t] * rebuilt[id][t];
        double have = got.values(q, p);
        double ref = want;
        if (metric == Metric::l2) have *= have, ref *= ref;  // compare squares: no root near 0
        EXPECT_NEAR(have, ref, 2e-6 * double(d) * scale) << to_string(metric) << " query " << q << " id " << id;
        if (p > 0) {
          const bool ordered = larger_is_better(metric) ? got.values(q, p) <= got.values(q, p - 1)
                                                        : got.values(q, p) >= got.values(q, p - 1);
          EXPECT_TRUE(ordered) << to_string(metric) << " query " << q << " slot " << p;
        }
      }
      EXPECT_EQ(int64_t(seen.size()), n) << to_string(metric);
    }
  }
}

TEST_P(IvfPq, RefineWithoutKeptVectorsIsRefused) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const Matrix<float> X = random_matrix(200, 8, 81);
  auto index = build("ivf_pq,nlist=4", X, Metric::l2);
  expect_error([&] { index->search(context(), X.view(), 3, probing(0, 2)); }, ErrorCode::invalid_argument,
               "build it with refine >= 1");
  expect_error([&] { index->search(context(), X.view(), 3, probing(0, -1)); }, ErrorCode::invalid_argument,
               "refine must be >= 0");
  // Without a re-rank the search runs, and each row finds a row at its own code estimate.
  const IndexSearchResult r = index->search(context(), X.view(), 3, probing(4));
  EXPECT_NE(r.ids(0, 0), -1);
}

TEST_P(IvfPq, StatsCountShortRowsAndCandidates) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const Matrix<float> X = clustered(400, 8, 8, 0.1, 91), Q = clustered(20, 8, 8, 0.1, 92);
  for (const char* description : {"ivf_pq,nlist=8,m=2", "ivf_pq,nlist=8,m=2,refine=2"}) {
    auto index = build(description, X, Metric::l2);
    const detail::IvfPqLists& L = *detail::ivf_pq_lists_of(*index);
    int64_t largest = 0;
    for (int64_t l = 0; l < L.nlist; ++l) largest = std::max(largest, L.arena.length(l));
    ASSERT_LT(largest, 400) << "the clusters should spread over the lists";
    // One list per query and k above every list: each row holds its list's rows, then padding.
    SearchStats stats;
    IvfPqSearchParams sp = probing(1);
    sp.stats = &stats;
    const IndexSearchResult r = index->search(context(), Q.view(), largest + 1, sp);
    int64_t found = 0;
    for (int64_t e = 0; e < r.ids.size(); ++e) found += r.ids.data()[e] != -1;
    EXPECT_EQ(stats.short_rows, Q.rows()) << description;
    EXPECT_EQ(stats.candidates, found) << description;
    // Every list and k within the index: nothing short, every row a candidate; counts add up.
    sp.nprobe = 8;
    index->search(context(), Q.view(), 10, sp);
    EXPECT_EQ(stats.short_rows, Q.rows()) << description;
    EXPECT_EQ(stats.candidates, found + Q.rows() * X.rows()) << description;
  }
  // An empty index pads every row; an allow-list counts its rows.
  auto empty = make_index("ivf_pq,nlist=8,m=2", 8, Metric::l2);
  empty->train(context(), X.view());
  SearchStats stats;
  SearchParams sp;
  sp.stats = &stats;
  empty->search(context(), Q.view(), 3, sp);
  EXPECT_EQ(stats.short_rows, Q.rows());
  EXPECT_EQ(stats.candidates, 0);
}

TEST_P(IvfPq, MemoryBytesIsTheFootprint) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const int64_t n = 500, d = 16, m = 4, nlist = 8;
  const Matrix<float> X = random_matrix(n, d, 101);
  auto codes_only = build("ivf_pq,nlist=8,m=4", X, Metric::l2);
  auto refined = build("ivf_pq,nlist=8,m=4,refine=2", X, Metric::l2);
  // Per arena row (the held rows and the lists' room to grow): m code bytes, the row term (l2:
  // one float), the id; per held row the id map's entry; then centroids, code books, list bounds.
  const int64_t rows = detail::ivf_pq_lists_of(*codes_only)->arena.arena_rows();
  ASSERT_GE(rows, n);
  const size_t fixed = size_t(nlist * d * 4 + m * 256 * (d / m) * 4 + 3 * nlist * 8);
  EXPECT_GE(codes_only->memory_bytes(), size_t(rows * (m + 12)) + fixed + size_t(n) * 16);
  EXPECT_LE(codes_only->memory_bytes(), size_t(rows * (m + 12)) + fixed + size_t(n) * 80);
  // The kept vectors: dim floats per arena row (both indexes filed the same rows the same way).
  ASSERT_EQ(detail::ivf_pq_lists_of(*refined)->arena.arena_rows(), rows);
  EXPECT_EQ(refined->memory_bytes() - codes_only->memory_bytes(), size_t(rows * d * 4));
  const size_t before = codes_only->memory_bytes();
  codes_only->remove(std::vector<int64_t>{0, 1, 2, 3, 4});
  EXPECT_LT(codes_only->memory_bytes(), before) << "the id map shrinks; the arena keeps its rows";
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("simkit-ivfpq-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST_P(IvfPq, SaveLoadRoundTripOfBothForms) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const TempDir dir;
  const Matrix<float> X = clustered(900, 12, 10, 0.2, 111), Q = random_matrix(30, 12, 112);
  for (Metric metric : {Metric::l2, Metric::cosine, Metric::dot, Metric::l1}) {
    for (const char* description : {"ivf_pq,nlist=10,m=3,nprobe=3", "ivf_pq,nlist=10,m=6,refine=3"}) {
      const std::string label = std::string(description) + " " + to_string(metric);
      auto index = build(description, X, metric);
      index->remove(std::vector<int64_t>{7, 8, 500});
      const std::string path = dir.file("pq.simkit");
      index->save(path);
      auto loaded = load_index(path);
      EXPECT_EQ(loaded->description(), index->description()) << label;
      // Loaded lists are compact: no room to grow yet, so no more than the saved index holds.
      EXPECT_LE(loaded->memory_bytes(), index->memory_bytes()) << label;
      expect_same(loaded->search(context(), Q.view(), 9), index->search(context(), Q.view(), 9), label);
      const Matrix<float> more = random_matrix(40, 12, 113);
      loaded->add(context(), more.view());
      index->add(context(), more.view());
      expect_same(loaded->search(context(), Q.view(), 9, probing(10)),
                  index->search(context(), Q.view(), 9, probing(10)), label + " add after load");
    }
  }
}

/// Rewrites a saved ivf_pq file with some sections replaced (a writer whose checksum is right
/// but whose contents lie).
void rewrite(const std::string& from, const std::string& to,
             const std::function<void(const std::string&, std::vector<unsigned char>&)>& edit) {
  const detail::IndexFile f = detail::IndexFile::read(from);
  std::vector<std::vector<unsigned char>> kept;
  detail::IndexFileWriter w;
  for (const char* name : {"type", "metric", "dim", "size", "next_id", "description", "trained", "ksub", "centroids",
                           "codebooks", "offsets", "ids", "codes", "vectors"}) {
    size_t bytes = 0;
    const unsigned char* p = f.bytes(name, &bytes);
    kept.emplace_back(p, p + bytes);
    edit(name, kept.back());
  }
  size_t i = 0;
  for (const char* name : {"type", "metric", "dim", "size", "next_id", "description", "trained", "ksub", "centroids",
                           "codebooks", "offsets", "ids", "codes", "vectors"})
    w.add(name, kept[i].data(), kept[i].size()), ++i;
  w.write(to);
}

TEST(IvfPqFile, ContradictionsAreRefused) {
  const TempDir dir;
  const Matrix<float> X = random_matrix(100, 8, 121);  // 100 rows: 100 code book entries a sub-space
  auto index = make_index("ivf_pq,nlist=4,m=2,refine=1", 8, Metric::l2);
  index->train(cpu_context(), X.view());
  index->add(cpu_context(), X.view());
  const std::string good = dir.file("good.simkit"), bad = dir.file("bad.simkit");
  index->save(good);
  rewrite(good, bad, [](const std::string&, std::vector<unsigned char>&) {});
  EXPECT_EQ(load_index(bad)->size(), 100);  // the rewrite itself is faithful

  const struct {
    const char* section;
    std::function<void(std::vector<unsigned char>&)> edit;
    const char* message;
  } cases[] = {
      {"codes", [](auto& b) { b[17] = 200; }, "past the 100 code book entries"},
      {"codes", [](auto& b) { b.pop_back(); }, "section 'codes' holds"},
      {"codebooks", [](auto& b) { b.resize(b.size() - 4); }, "section 'codebooks' holds"},
      {"codebooks", [](auto& b) { std::memcpy(b.data() + 8, "\x00\x00\xc0\x7f", 4); }, "NaN"},
      {"centroids", [](auto& b) { b.resize(b.size() + 4); }, "section 'centroids' holds"},
      {"vectors", [](auto& b) { b.resize(b.size() - 32); }, "section 'vectors' holds"},
      {"ksub", [](auto& b) { std::fill(b.begin(), b.end(), 0); }, "ksub = 0"},
      {"offsets",
       [](auto& b) {
         b[8] = 255;
         b[15] = 0;
       },
       "do not partition"},
      {"ids", [](auto& b) { std::swap_ranges(b.begin(), b.begin() + 8, b.begin() + 8); }, "not in id order"},
  };
  for (const auto& c : cases) {
    rewrite(good, bad, [&](const std::string& name, std::vector<unsigned char>& b) {
      if (name == c.section) c.edit(b);
    });
    expect_error([&] { load_index(bad); }, ErrorCode::io, c.message);
  }
}

TEST(IvfPqFactory, MMustDivideTheDimension) {
  expect_error([] { make_index("ivf_pq,m=5", 16, Metric::l2); }, ErrorCode::invalid_argument,
               "m = 5 must divide the dimension 16");
  // m = 0: the largest divisor of dim up to dim / 4, named in the description.
  EXPECT_NE(make_index("ivf_pq", 384, Metric::cosine)->description().find(",m=96,"), std::string::npos);
  EXPECT_NE(make_index("ivf_pq", 37, Metric::l2)->description().find(",m=1,"), std::string::npos);
  EXPECT_NE(make_index("ivf_pq", 30, Metric::l2)->description().find(",m=6,"), std::string::npos);
  auto index =
      make_index("ivf_pq,nlist=8,m=4,refine=3,refine_on=host,nprobe=seed,train_sample=99,seed=5", 16, Metric::dot);
  EXPECT_EQ(make_index(index->description(), 16, Metric::dot)->description(), index->description());
  EXPECT_NE(index->description().find("refine_on=host"), std::string::npos);
}

TEST_P(IvfPq, DigitsWithEveryListAndEveryCandidateEqualFlat) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const std::string dir = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/";
  const Matrix<float> X = read_matrix(dir + "digits_base.fvecs"), Q = read_matrix(dir + "digits_query.fvecs");
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine, Metric::l1}) {
    auto flat = make_index("flat", X.cols(), metric);
    flat->add(context(), X.view());
    auto pq = build("ivf_pq,nlist=16,refine=4", X, metric);
    const IndexSearchResult want = flat->search(context(), Q.view(), 10);
    expect_same(pq->search(context(), Q.view(), 10, probing(16, 1 << 20)), want,
                std::string("digits ") + to_string(metric));
    // At a quarter of the lists and refine = 4 the re-rank still finds most neighbours.
    const KnnResult truth{want.values, want.ids};
    EXPECT_GT(recall(pq->search(context(), Q.view(), 10, probing(4)), truth), 0.85) << to_string(metric);
  }
}

}  // namespace
}  // namespace simkit::test
