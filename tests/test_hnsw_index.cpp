// The hnsw index beyond the contract (test_index.cpp runs that over it): recall rising with ef on
// clustered data, the graph's own walk with a beam of nearly every node equal to knn on every
// metric, the build deterministic for a seed whatever the thread count, incremental adds, the
// repair after deletes against a fresh build,
// removed ids never returned, allow-lists met inside the walk at 1%, 10% and 50%, save/load,
// files that lie refused. CPU only: the graph is searched on the host.

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "index_check.hpp"
#include "reference.hpp"
#include "scoped_env.hpp"

namespace simkit::test {
namespace {

constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                               Metric::dot, Metric::pearson,     Metric::l1};

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("simkit-hnsw-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Rows [from, from + count) of X.
Matrix<float> rows_of(const Matrix<float>& X, int64_t from, int64_t count) {
  Matrix<float> out(count, X.cols());
  std::copy_n(&X(from, 0), count * X.cols(), out.data());
  return out;
}

HnswSearchParams with_ef(int64_t ef) {
  HnswSearchParams sp;
  sp.ef = ef;
  return sp;
}

/// Clustered base and queries from the same clusters: the first n rows, then m queries.
struct Data {
  Matrix<float> X, Q;
};
Data clustered_data(int64_t n, int64_t m, int64_t d, uint64_t seed) {
  const Matrix<float> all = clustered(n + m, d, 40, 0.35, seed);
  return {rows_of(all, 0, n), rows_of(all, n, m)};
}

TEST(Hnsw, RecallRisesWithEf) {
  const uint64_t seed = test_seed();
  const int64_t n = 4999, d = 37, k = 10;
  const Data data = clustered_data(n, 300, d, seed);
  const Context ctx = cpu_context();
  for (Metric metric : {Metric::l2, Metric::cosine}) {
    auto index = make_index("hnsw", d, metric);
    index->add(ctx, data.X.view());
    const KnnResult truth = knn(ctx, data.Q.view(), data.X.view(), k, metric);
    double previous = 0;
    for (int64_t ef : {10, 20, 40, 80, 160}) {
      const double r = recall(index->search(ctx, data.Q.view(), k, with_ef(ef)), truth);
      std::printf("[ recall ] %s n %lld d %lld: ef %3lld recall@10 %.4f\n", to_string(metric),
                  static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(ef), r);
      EXPECT_GE(r, previous - 0.005) << to_string(metric) << " ef " << ef << " seed " << seed;
      previous = std::max(previous, r);
    }
    EXPECT_GE(previous, 0.99) << to_string(metric) << " seed " << seed;
  }
}

/// ef >= size() scans every live row (exact by construction); a beam of size() - 1 walks the
/// graph and must reach knn's answer through its own re-score, value bits included.
void expect_full_beam_is_knn(const std::string& description) {
  const uint64_t seed = test_seed();
  const int64_t n = 301, d = 13, m = 23, k = 10;
  const Context ctx = cpu_context();
  for (Metric metric : kMetrics) {
    const Matrix<float> X = inputs_for(metric, n, d, seed), Q = inputs_for(metric, m, d, seed + 1);
    const std::string label = description + " " + to_string(metric) + " seed " + std::to_string(seed);
    auto index = make_index(description, d, metric);
    index->add(ctx, X.view());
    const KnnResult truth = knn(ctx, Q.view(), X.view(), k, metric);
    const IndexSearchResult want{truth.values, truth.ids};
    expect_same(index->search(ctx, Q.view(), k, with_ef(n)), want, label + " ef = size");
    SearchStats stats;
    HnswSearchParams sp = with_ef(n - 1);
    sp.stats = &stats;
    expect_same(index->search(ctx, Q.view(), k, sp), want, label + " ef = size - 1 (the walk)");
    EXPECT_GT(stats.candidates, 0) << label;
  }
}

TEST(Hnsw, FullBeamEqualsKnnOnEveryMetric) { expect_full_beam_is_knn("hnsw,m=8,ef_construction=50"); }

TEST(Hnsw, BuildIsDeterministicWhateverTheThreads) {
  const uint64_t seed = test_seed();
  const Data data = clustered_data(3001, 50, 24, seed);
  std::string files[3];
  IndexSearchResult results[3];
  const int threads[3] = {2, 2, 1};
  for (int run = 0; run < 3; ++run) {
    const Context ctx = cpu_context(threads[run]);
    auto index = make_index("hnsw,m=12,ef_construction=80,seed=7", 24, Metric::sqeuclidean);
    index->add(ctx, rows_of(data.X, 0, 2000).view());
    index->add(ctx, rows_of(data.X, 2000, 1001).view());
    results[run] = index->search(ctx, data.Q.view(), 10);
    files[run] = temp_file("determinism-" + std::to_string(run));
    index->save(files[run]);
  }
  for (int run = 1; run < 3; ++run) {
    expect_same(results[run], results[0], "run " + std::to_string(run));
    EXPECT_TRUE(file_bytes(files[run]) == file_bytes(files[0])) << "run " << run << " seed " << seed;
  }
  // Another seed draws other layers: another graph.
  auto other = make_index("hnsw,m=12,ef_construction=80,seed=8", 24, Metric::sqeuclidean);
  other->add(cpu_context(2), rows_of(data.X, 0, 2000).view());
  other->add(cpu_context(2), rows_of(data.X, 2000, 1001).view());
  const std::string other_file = temp_file("determinism-other");
  other->save(other_file);
  EXPECT_FALSE(file_bytes(other_file) == file_bytes(files[0]));
  for (const std::string& f : files) std::filesystem::remove(f);
  std::filesystem::remove(other_file);
}

TEST(Hnsw, IncrementalAddsFindWhatOneAddFinds) {
  const uint64_t seed = test_seed();
  const int64_t n = 3003, d = 29;
  const Data data = clustered_data(n, 200, d, seed);
  const Context ctx = cpu_context();
  auto once = make_index("hnsw", d, Metric::l2);
  once->add(ctx, data.X.view());
  auto grown = make_index("hnsw", d, Metric::l2);
  int64_t at = 0;
  for (int64_t count : {1, 1, 7, 250, 1000, 1744}) {
    grown->add(ctx, rows_of(data.X, at, count).view());
    at += count;
    // Every row added so far finds itself.
    const Matrix<float> so_far = rows_of(data.X, 0, at);
    const IndexSearchResult self = grown->search(ctx, so_far.view(), 1);
    int64_t found = 0;
    for (int64_t i = 0; i < at; ++i) found += self.ids(i, 0) == i;
    EXPECT_GE(double(found), 0.99 * double(at)) << "after " << at << " rows, seed " << seed;
  }
  ASSERT_EQ(at, n);
  ASSERT_EQ(grown->size(), n);
  const KnnResult truth = knn(ctx, data.Q.view(), data.X.view(), 10, Metric::l2);
  const double r_once = recall(once->search(ctx, data.Q.view(), 10), truth);
  const double r_grown = recall(grown->search(ctx, data.Q.view(), 10), truth);
  std::printf("[ recall ] one add %.4f, six adds %.4f (ef 64)\n", r_once, r_grown);
  EXPECT_GE(r_once, 0.97) << "seed " << seed;
  EXPECT_GE(r_grown, 0.97) << "seed " << seed;
}

TEST(Hnsw, RemovedIdsAreNeverReturned) {
  const uint64_t seed = test_seed();
  const int64_t n = 4000, d = 32;
  const Data data = clustered_data(n + 500, 200, d, seed);
  const Context ctx = cpu_context();
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 100);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  auto index = make_index("hnsw", d, Metric::cosine);
  index->add(ctx, rows_of(data.X, 0, n).view(), ids);
  std::vector<int64_t> gone(ids.begin(), ids.begin() + n * 3 / 10);  // a random 30%
  ASSERT_EQ(index->remove(gone), int64_t(gone.size()));
  ASSERT_EQ(index->size(), n - int64_t(gone.size()));
  // New rows under new ids, and an id removed above given to a new row.
  const Matrix<float> fresh = rows_of(data.X, n, 500);
  std::vector<int64_t> fresh_ids(500);
  std::iota(fresh_ids.begin(), fresh_ids.end(), 100000);
  fresh_ids[0] = gone[0];
  index->add(ctx, fresh.view(), fresh_ids);
  std::set<int64_t> removed(gone.begin() + 1, gone.end());
  // The exact answer over what is live, from flat.
  auto flat = make_index("flat", d, Metric::cosine);
  std::vector<int64_t> kept_ids(ids.begin() + int64_t(gone.size()), ids.end());
  Matrix<float> kept(int64_t(kept_ids.size()), d);
  for (size_t i = 0; i < kept_ids.size(); ++i)
    std::copy_n(&data.X(int64_t(gone.size() + i), 0), d, &kept(int64_t(i), 0));
  flat->add(ctx, kept.view(), kept_ids);
  flat->add(ctx, fresh.view(), fresh_ids);
  for (int64_t ef : {10, 64, 1 << 20}) {
    const IndexSearchResult r = index->search(ctx, data.Q.view(), 10, with_ef(ef));
    for (int64_t e = 0; e < r.ids.size(); ++e) ASSERT_EQ(removed.count(r.ids.data()[e]), 0u) << "ef " << ef;
    const IndexSearchResult truth = flat->search(ctx, data.Q.view(), 10);
    const double r_at = recall(r, KnnResult{truth.values, truth.ids});
    std::printf("[ recall ] 30%% removed, 500 added: ef %lld recall@10 %.4f\n", static_cast<long long>(ef), r_at);
    EXPECT_GE(r_at, ef == 10 ? 0.8 : 0.97) << "ef " << ef << " seed " << seed;
    if (ef == (1 << 20)) expect_same(r, truth, "exhaustive after removes");
  }
}

// Issue 33's delete rule: remove a random 30%, add 20% new rows; the repaired graph's recall at a
// fixed ef stays within 0.01 of a graph built fresh over the same rows in the same order, on
// float32 and sq8 storage. The repair also returns the removed rows' memory, survives save/load
// and keeps answering exactly at ef >= size().
TEST(Hnsw, RepairAfterDeletesMatchesAFreshBuild) {
  const uint64_t seed = test_seed();
  const int64_t n = 10000, added = n / 5, d = 24, k = 10;
  const Data data = clustered_data(n + added, 1000, d, seed);
  const Context ctx = cpu_context();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  const std::vector<int64_t> gone(order.begin(), order.begin() + n * 3 / 10);
  const std::set<int64_t> removed(gone.begin(), gone.end());
  // What stays, in node order, then the new rows: the fresh build's rows and ids.
  std::vector<int64_t> kept_ids;
  for (int64_t i = 0; i < n; ++i)
    if (!removed.count(i)) kept_ids.push_back(i);
  for (int64_t i = n; i < n + added; ++i) kept_ids.push_back(i);
  Matrix<float> kept(int64_t(kept_ids.size()), d);
  for (size_t i = 0; i < kept_ids.size(); ++i) std::copy_n(&data.X(kept_ids[i], 0), d, &kept(int64_t(i), 0));
  const KnnResult truth_rows = knn(ctx, data.Q.view(), kept.view(), k, Metric::cosine);
  KnnResult truth = truth_rows;
  for (int64_t e = 0; e < truth.ids.size(); ++e) truth.ids.data()[e] = kept_ids[size_t(truth_rows.ids.data()[e])];
  for (const char* storage : {"float32", "sq8"}) {
    const std::string desc = std::string("hnsw,m=12,ef_construction=100,storage=") + storage;
    auto index = make_index(desc, d, Metric::cosine);
    index->add(ctx, rows_of(data.X, 0, n).view());
    const size_t before = index->memory_bytes();
    ASSERT_EQ(index->remove(gone), int64_t(gone.size()));
    EXPECT_LT(index->memory_bytes(), before * 8 / 10) << storage << ": the repair returns the removed rows";
    std::vector<int64_t> new_ids(static_cast<size_t>(added));
    std::iota(new_ids.begin(), new_ids.end(), n);
    index->add(ctx, rows_of(data.X, n, added).view(), new_ids);
    auto fresh = make_index(desc, d, Metric::cosine);
    fresh->add(ctx, kept.view(), kept_ids);
    for (int64_t ef : {10, 16, 32}) {
      const IndexSearchResult r = index->search(ctx, data.Q.view(), k, with_ef(ef));
      for (int64_t e = 0; e < r.ids.size(); ++e) ASSERT_EQ(removed.count(r.ids.data()[e]), 0u) << storage;
      const double repaired = recall(r, truth),
                   built = recall(fresh->search(ctx, data.Q.view(), k, with_ef(ef)), truth);
      std::printf("[ recall ] %s, 30%% removed then 20%% added: ef %2lld repaired %.4f, fresh build %.4f\n", storage,
                  static_cast<long long>(ef), repaired, built);
      EXPECT_GE(repaired, built - 0.01) << storage << " ef " << ef << " seed " << seed;
    }
    const std::string path = temp_file(std::string("repaired-") + storage + ".simkit");
    index->save(path);
    auto loaded = load_index(path);
    expect_same(loaded->search(ctx, data.Q.view(), k, with_ef(16)), index->search(ctx, data.Q.view(), k, with_ef(16)),
                std::string(storage) + " repaired, reloaded");
    std::filesystem::remove(path);
    expect_same(index->search(ctx, data.Q.view(), k, with_ef(1 << 20)), IndexSearchResult{truth.values, truth.ids},
                std::string(storage) + " exhaustive after the repair");
  }
}

// Every removal, one id at a time, down to an empty index and up again: the repairs along the
// way (one per tenth) keep the entry point live, and the emptied graph takes new rows.
TEST(Hnsw, RemovingEverythingOneByOne) {
  const uint64_t seed = test_seed();
  const Data data = clustered_data(1500, 50, 12, seed);
  const Context ctx = cpu_context();
  for (const char* desc : {"hnsw,m=6,ef_construction=40", "hnsw,m=6,ef_construction=40,storage=sq8"}) {
    auto index = make_index(desc, 12, Metric::l2);
    index->add(ctx, rows_of(data.X, 0, 1000).view());
    std::vector<int64_t> order(1000);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    for (size_t i = 0; i < order.size(); ++i) {
      ASSERT_EQ(index->remove(std::vector<int64_t>{order[i]}), 1);
      if (i % 97 != 0) continue;
      const IndexSearchResult r = index->search(ctx, data.Q.view(), 5, with_ef(8));
      for (int64_t e = 0; e < r.ids.size(); ++e)
        ASSERT_TRUE(r.ids.data()[e] < 0 || std::find(order.begin(), order.begin() + int64_t(i) + 1, r.ids.data()[e]) ==
                                               order.begin() + int64_t(i) + 1)
            << desc << ": a removed id came back";
    }
    EXPECT_EQ(index->size(), 0);
    index->add(ctx, rows_of(data.X, 1000, 500).view());
    const KnnResult truth = knn(ctx, data.Q.view(), rows_of(data.X, 1000, 500).view(), 5, Metric::l2);
    IndexSearchResult r = index->search(ctx, data.Q.view(), 5, with_ef(400));
    for (int64_t e = 0; e < r.ids.size(); ++e) r.ids.data()[e] -= 1000;
    EXPECT_GE(recall(r, truth), 0.99) << desc;
  }
}

// The walk passes through disallowed nodes and keeps allowed ones: forced (SIMKIT_FILTER_PLAN)
// where the planner would gather on a set this small.
TEST(Hnsw, AllowListsInsideTheWalk) {
  const uint64_t seed = test_seed();
  const int64_t n = 5000, d = 32, k = 10, ef = 128;
  const Data data = clustered_data(n, 200, d, seed);
  const Context ctx = cpu_context();
  auto index = make_index("hnsw", d, Metric::l2);
  index->add(ctx, data.X.view());
  auto flat = make_index("flat", d, Metric::l2);
  flat->add(ctx, data.X.view());
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  for (double fraction : {0.01, 0.1, 0.5}) {
    std::vector<int64_t> allowed = ids;
    std::shuffle(allowed.begin(), allowed.end(), std::mt19937_64(seed + uint64_t(fraction * 1000)));
    allowed.resize(size_t(fraction * n));
    std::sort(allowed.begin(), allowed.end());
    SearchParams exact;
    exact.allowed = allowed;
    const IndexSearchResult truth = flat->search(ctx, data.Q.view(), k, exact);
    SearchStats stats;
    HnswSearchParams sp = with_ef(ef);
    sp.allowed = allowed;
    sp.stats = &stats;
    IndexSearchResult walked;
    {
      const ScopedEnv walk("SIMKIT_FILTER_PLAN", "scan");
      walked = index->search(ctx, data.Q.view(), k, sp);
    }
    EXPECT_EQ(stats.gathered, 0);
    for (int64_t e = 0; e < walked.ids.size(); ++e)
      ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), walked.ids.data()[e]));
    const double r = recall(walked, KnnResult{truth.values, truth.ids});
    std::printf("[ recall ] allowed %.0f%%, walked, ef %lld: recall@10 %.4f\n", fraction * 100,
                static_cast<long long>(ef), r);
    EXPECT_GE(r, 0.95) << "fraction " << fraction << " seed " << seed;
    // Left to the planner, a list this size on 5,000 rows is gathered: exact.
    sp.stats = nullptr;
    expect_same(index->search(ctx, data.Q.view(), k, sp), truth, "planned " + std::to_string(fraction));
  }
}

TEST(Hnsw, SaveLoadKeepsTheGraph) {
  const uint64_t seed = test_seed();
  const Data data = clustered_data(2500, 40, 21, seed);
  const Context ctx = cpu_context();
  for (Metric metric : {Metric::pearson, Metric::l1}) {
    auto index = make_index("hnsw,m=10,ef_construction=60,ef=30,seed=3", 21, metric);
    index->add(ctx, rows_of(data.X, 0, 2000).view());
    index->remove(std::vector<int64_t>{0, 5, 77, 1999});
    const std::string path = temp_file("round-trip.simkit");
    index->save(path);
    auto loaded = load_index(path);
    EXPECT_EQ(loaded->description(), index->description());
    EXPECT_EQ(loaded->size(), 1996);
    for (int64_t ef : {0, 5, 100})
      expect_same(loaded->search(ctx, data.Q.view(), 7, with_ef(ef)), index->search(ctx, data.Q.view(), 7, with_ef(ef)),
                  std::string(to_string(metric)) + " ef " + std::to_string(ef));
    loaded->add(ctx, rows_of(data.X, 2000, 500).view());
    index->add(ctx, rows_of(data.X, 2000, 500).view());
    expect_same(loaded->search(ctx, data.Q.view(), 7), index->search(ctx, data.Q.view(), 7), "add after load");
    const std::string again = temp_file("round-trip-again.simkit");
    loaded->save(path);
    index->save(again);
    EXPECT_TRUE(file_bytes(path) == file_bytes(again)) << to_string(metric);
    std::filesystem::remove(path);
    std::filesystem::remove(again);
  }
}

// storage=sq8: the walk over uint8 codes, its best refine x k re-ranked on the float32 rows.
TEST(HnswSq8, RecallRisesWithEf) {
  const uint64_t seed = test_seed();
  const int64_t n = 4999, d = 37, k = 10;
  const Data data = clustered_data(n, 300, d, seed);
  const Context ctx = cpu_context();
  for (Metric metric : kMetrics) {
    auto index = make_index("hnsw,storage=sq8", d, metric);
    index->add(ctx, data.X.view());
    const KnnResult truth = knn(ctx, data.Q.view(), data.X.view(), k, metric);
    double previous = 0;
    for (int64_t ef : {10, 20, 40, 80, 160}) {
      const double r = recall(index->search(ctx, data.Q.view(), k, with_ef(ef)), truth);
      std::printf("[ recall ] sq8 %s n %lld d %lld: ef %3lld recall@10 %.4f\n", to_string(metric),
                  static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(ef), r);
      EXPECT_GE(r, previous - 0.005) << to_string(metric) << " ef " << ef << " seed " << seed;
      previous = std::max(previous, r);
    }
    // dot on un-normalised rows is the heuristic space (hnsw_graph.hpp): a lower bar.
    EXPECT_GE(previous, metric == Metric::dot ? 0.9 : 0.98) << to_string(metric) << " seed " << seed;
  }
}

// As for float32, with a re-rank of every kept node: the codes only choose which rows are
// re-ranked, never the answer.
TEST(HnswSq8, FullBeamEqualsKnnOnEveryMetric) {
  expect_full_beam_is_knn("hnsw,m=8,ef_construction=50,storage=sq8,refine=31");
}

TEST(HnswSq8, BuildIsDeterministicAndRoundTrips) {
  const uint64_t seed = test_seed();
  const Data data = clustered_data(3001, 50, 24, seed);
  std::string files[3];
  IndexSearchResult results[3];
  const int threads[3] = {2, 2, 1};
  for (int run = 0; run < 3; ++run) {
    const Context ctx = cpu_context(threads[run]);
    auto index = make_index("hnsw,m=12,ef_construction=80,seed=7,storage=sq8,refine=3", 24, Metric::l2);
    index->add(ctx, rows_of(data.X, 0, 2000).view());
    index->add(ctx, rows_of(data.X, 2000, 1001).view());  // clamped to the first add's ranges
    index->remove(std::vector<int64_t>{3, 1500});
    results[run] = index->search(ctx, data.Q.view(), 10, with_ef(30));
    files[run] = temp_file("sq8-" + std::to_string(run));
    index->save(files[run]);
  }
  for (int run = 1; run < 3; ++run) {
    expect_same(results[run], results[0], "run " + std::to_string(run));
    EXPECT_TRUE(file_bytes(files[run]) == file_bytes(files[0])) << "run " << run << " seed " << seed;
  }
  auto loaded = load_index(files[0]);
  EXPECT_EQ(loaded->description(), "hnsw,m=12,ef_construction=80,ef=64,seed=7,storage=sq8,refine=3");
  expect_same(loaded->search(cpu_context(), data.Q.view(), 10, with_ef(30)), results[0], "loaded");
  loaded->save(files[1]);
  EXPECT_TRUE(file_bytes(files[1]) == file_bytes(files[0])) << "saved again";
  for (const std::string& f : files) std::filesystem::remove(f);
}

TEST(HnswSq8, DescriptionsParse) {
  EXPECT_EQ(make_index("hnsw,storage=sq8", 3, Metric::l2)->description(),
            "hnsw,m=16,ef_construction=200,ef=64,seed=0,storage=sq8,refine=4");
  expect_error([] { make_index("hnsw,storage=fp8", 3, Metric::l2); }, ErrorCode::invalid_argument,
               "storage must be float32 or sq8");
  expect_error([] { make_index("hnsw,storage=sq8,refine=0", 3, Metric::l2); }, ErrorCode::invalid_argument, "refine");
  // An empty sq8 index (no quantizer yet) saves and loads.
  const std::string path = temp_file("sq8-empty.simkit");
  make_index("hnsw,storage=sq8", 3, Metric::cosine)->save(path);
  EXPECT_EQ(load_index(path)->size(), 0);
  std::filesystem::remove(path);
}

// A file with a valid checksum whose graph contradicts itself is refused by the loader's checks.
TEST(Hnsw, LyingFilesAreRefused) {
  const Matrix<float> X = random_matrix(200, 6, 61);
  auto index = make_index("hnsw,m=4", 6, Metric::l2);
  index->add(cpu_context(), X.view());
  const std::string good = temp_file("good.simkit"), bad = temp_file("bad.simkit");
  index->save(good);
  const detail::IndexFile f = detail::IndexFile::read(good);
  // Rewrites the file with one section's bytes changed by `edit`.
  auto rewrite = [&](const std::string& changed, auto edit) {
    const char* names[] = {"type", "metric", "dim",     "size",  "next_id", "description", "nodes", "entry",
                           "top",  "ids",    "vectors", "level", "deleted", "links0",      "upper"};
    std::vector<std::vector<unsigned char>> copies;
    detail::IndexFileWriter w;
    for (const char* name : names) {
      size_t bytes = 0;
      const unsigned char* p = f.bytes(name, &bytes);
      copies.emplace_back(p, p + bytes);
      if (changed == name) edit(copies.back());
      w.add(name, copies.back().data(), copies.back().size());
    }
    w.write(bad);
  };
  rewrite("", [](auto&) {});
  EXPECT_EQ(load_index(bad)->size(), 200);               // the rewrite itself is faithful
  rewrite("links0", [](std::vector<unsigned char>& b) {  // node 0's first link past the nodes
    const uint32_t far = 100000;
    std::memcpy(b.data() + 4, &far, 4);
  });
  expect_error([&] { load_index(bad); }, ErrorCode::io, "outside the graph");
  rewrite("links0", [](std::vector<unsigned char>& b) {  // node 0 holds more than 2m links
    const uint32_t many = 9;
    std::memcpy(b.data(), &many, 4);
  });
  expect_error([&] { load_index(bad); }, ErrorCode::io, "more links");
  rewrite("level", [](std::vector<unsigned char>& b) { b[0] = 40; });
  expect_error([&] { load_index(bad); }, ErrorCode::io, "layer");
  rewrite("deleted", [](std::vector<unsigned char>& b) { b[3] = 1; });  // the live count no longer matches
  expect_error([&] { load_index(bad); }, ErrorCode::io, "contradicts");
  rewrite("vectors", [](std::vector<unsigned char>& b) { b.resize(b.size() - 4); });
  expect_error([&] { load_index(bad); }, ErrorCode::io, "'vectors'");
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(Hnsw, EfIsCheckedAndOtherTypesRefuseIt) {
  auto index = make_index("hnsw", 4, Metric::l2);
  index->add(cpu_context(), random_matrix(100, 4, 71).view());
  expect_error([&] { index->search(cpu_context(), random_matrix(2, 4, 72).view(), 3, with_ef(-1)); },
               ErrorCode::invalid_argument, "ef must be");
  EXPECT_EQ(typeid(*make_search_params(*index, SearchKnobs{0, 0, 0, 40})), typeid(HnswSearchParams));
  expect_error(
      [&] {
        make_search_params(*make_index("flat", 4, Metric::l2), SearchKnobs{0, 0, 0, 40});
      },
      ErrorCode::invalid_argument, "ef applies to hnsw; this index is flat");
  // k above ef: the beam widens to k.
  const IndexSearchResult r = index->search(cpu_context(), random_matrix(2, 4, 73).view(), 50, with_ef(3));
  for (int64_t e = 0; e < r.ids.size(); ++e) EXPECT_GE(r.ids.data()[e], 0);
}

// Build and search times on 20,000 x 128 (run with --gtest_also_run_disabled_tests; the numbers
// depend on the machine).
TEST(Hnsw, DISABLED_Timing20kx128) {
  const int64_t n = 20000, d = 128, k = 10;
  const Data data = clustered_data(n, 1000, d, 5);
  const Context ctx = cpu_context(2);
  auto index = make_index("hnsw", d, Metric::l2);
  const auto t0 = std::chrono::steady_clock::now();
  index->add(ctx, data.X.view());
  const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ timing ] build %lld x %lld, m 16, ef_construction 200, 2 threads: %.2f s, %.1f MiB\n",
              static_cast<long long>(n), static_cast<long long>(d), build, double(index->memory_bytes()) / (1 << 20));
  const KnnResult truth = knn(ctx, data.Q.view(), data.X.view(), k, Metric::l2);
  for (int64_t ef : {16, 32, 64, 128, 256}) {
    const auto s0 = std::chrono::steady_clock::now();
    const IndexSearchResult r = index->search(ctx, data.Q.view(), k, with_ef(ef));
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    std::printf("[ timing ] ef %3lld: %8.0f queries/s, recall@10 %.4f\n", static_cast<long long>(ef),
                double(data.Q.rows()) / t, recall(r, truth));
  }
}

}  // namespace
}  // namespace simkit::test
