// The Index contract (include/simkit/index.hpp), over every index type on both backends: empty
// and short results padded, flat equal to knn bit for bit, ivf_flat with nprobe = nlist (and
// ivf_pq with every list probed and every candidate re-ranked) equal to flat bit for bit on every
// metric (random, integer and real data), the tree equal to knn bit for bit on the metrics and
// dimensions it serves (searched through its tree and through its brute-force tail), recall rising
// with nprobe, removed ids never returned, allow-lists met exactly (the float64 reference over the allowed
// ids alone, any density, after remove too), save/load round trips, every damaged file refused,
// bad input refused with nothing changed, concurrent searches.

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <typeinfo>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>
#include <simkit/knn.hpp>

#include "allow_list_check.hpp"
#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "index_check.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                               Metric::dot, Metric::pearson,     Metric::l1};

/// The test's index kinds, each with a description that a small set can train. The tree serves
/// l2 and sqeuclidean in d <= 8 alone: its instances run every test in their own dimension with
/// the metrics it serves (dim() and served() below). A tree index keeps up to 1,024 added rows
/// in a brute-force tail beside its tree (index/tree/tree_index.cpp), so most of these tests'
/// indexes would be tail alone: the instances marked `reload` are saved and loaded back once
/// built, which puts every row in the tree; tree_d2 keeps what its adds make of them.
struct Kind {
  const char* name;
  const char* description;
  int64_t dim = 0;      // every test's data in this dimension; 0: the test's own
  bool reload = false;  // built, then saved and loaded back
};
constexpr Kind kKinds[] = {{"flat", "flat"},
                           {"ivf_flat", "ivf_flat,nlist=16,iterations=10"},
                           {"ivf_pq", "ivf_pq,nlist=16,iterations=10,refine=4"},
                           {"lsh", "lsh,tables=8,bits=3,probes=8"},
                           {"tree_d3", "tree", 3, true},
                           {"tree_d8", "tree", 8, true},
                           {"tree_d2", "tree", 2, false},
                           {"hnsw", "hnsw,m=8,ef_construction=100,ef=32"},
                           {"hnsw_reload", "hnsw,m=6,ef_construction=40,ef=16,seed=5", 0, true},
                           {"hnsw_sq8", "hnsw,m=8,ef_construction=100,ef=32,storage=sq8"}};

using Param = std::tuple<Backend, int>;  // backend, index of kKinds

class IndexContract : public ::testing::TestWithParam<Param> {
 protected:
  Backend backend() const { return std::get<0>(GetParam()); }
  const Kind& kind() const { return kKinds[std::get<1>(GetParam())]; }
  Context context() const { return context_for(backend()); }

  /// The index type (the description's first word).
  std::string type() const {
    const std::string d = kind().description;
    return d.substr(0, d.find(','));
  }
  /// A test's data dimension `d`, or the kind's own.
  int64_t dim(int64_t d) const { return kind().dim > 0 ? kind().dim : d; }
  /// The metrics of `wanted` this kind serves; the tree, where `wanted` has neither of its two, l2.
  std::vector<Metric> served(std::vector<Metric> wanted) const {
    if (type() != "tree") return wanted;
    std::erase_if(wanted, [](Metric m) { return m != Metric::l2 && m != Metric::sqeuclidean; });
    if (wanted.empty()) wanted.push_back(Metric::l2);
    return wanted;
  }
  std::vector<Metric> every_metric() const { return served({std::begin(kMetrics), std::end(kMetrics)}); }

  /// An index of this kind over X (trained on X when it needs training).
  std::unique_ptr<Index> build(const Matrix<float>& X, Metric metric, std::vector<int64_t> ids = {}) const {
    auto index = make_index(kind().description, X.cols(), metric);
    index->train(context(), X.view());
    index->add(context(), X.view(), ids);
    if (kind().reload) {
      const std::string path =
          std::filesystem::temp_directory_path() / ("simkit-index-reload-" + std::to_string(::getpid()) + ".simkit");
      index->save(path);
      index = load_index(path);
      std::filesystem::remove(path);
    }
    return index;
  }
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(kKinds[std::get<1>(info.param)].name) + "_" + backend_name(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Kinds, IndexContract,
                         ::testing::Combine(::testing::ValuesIn(kBackends),
                                            ::testing::Range(0, int(std::size(kKinds)))),
                         param_name);

/// n distinct ids, shuffled, far from 0 .. n-1.
std::vector<int64_t> scattered_ids(int64_t n, uint64_t seed) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = 1000003 * (i + 1) % 9999991 + 17;
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  return ids;
}

/// The ids add() gives n rows when none are passed: 0 .. n-1.
std::vector<int64_t> first_ids(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

TEST_P(IndexContract, EmptyIndexPadsEveryRow) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Metric metric : served({Metric::l2, Metric::cosine})) {
    auto index = make_index(kind().description, dim(5), metric);
    if (!index->is_trained()) index->train(context(), random_matrix(40, dim(5), 1).view());
    EXPECT_EQ(index->size(), 0);
    const IndexSearchResult r = index->search(context(), random_matrix(3, dim(5), 2).view(), 4);
    for (int64_t e = 0; e < r.ids.size(); ++e) {
      EXPECT_EQ(r.ids.data()[e], -1);
      EXPECT_EQ(r.values.data()[e], larger_is_better(metric) ? -INFINITY : INFINITY);
    }
  }
}

TEST_P(IndexContract, KBeyondSizeIsPadded) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(40, dim(6), 3), Q = random_matrix(5, dim(6), 4);
  for (Metric metric : every_metric()) {
    auto index = build(X, metric);
    ASSERT_TRUE(index->remove(std::vector<int64_t>(/*first 33 ids*/ [] {
      std::vector<int64_t> v(33);
      std::iota(v.begin(), v.end(), 0);
      return v;
    }())) == 33);
    ASSERT_EQ(index->size(), 7);
    const IndexSearchResult r = index->search(context(), Q.view(), 10, *all_lists(*index));
    for (int64_t q = 0; q < Q.rows(); ++q) {
      std::set<int64_t> seen;
      for (int64_t p = 0; p < 7; ++p) {
        EXPECT_GE(r.ids(q, p), 33) << to_string(metric);
        seen.insert(r.ids(q, p));
      }
      EXPECT_EQ(seen.size(), 7u) << to_string(metric);
      for (int64_t p = 7; p < 10; ++p) {
        EXPECT_EQ(r.ids(q, p), -1) << to_string(metric);
        EXPECT_EQ(r.values(q, p), larger_is_better(metric) ? -INFINITY : INFINITY);
      }
    }
  }
}

// Both index kinds against knn itself, on every metric, with ids 0..n-1 and scattered ids; flat
// must reproduce knn bit for bit, ivf_flat with every list probed must reproduce flat.
TEST_P(IndexContract, AllListsEqualKnnOnEveryMetric) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const int64_t n = 1037, d = dim(37), m = 53, k = 7;
  for (Metric metric : every_metric()) {
    const Matrix<float> X = inputs_for(metric, n, d, seed), Q = inputs_for(metric, m, d, seed + 9);
    const std::string label = std::string(kind().name) + " " + to_string(metric) + " seed " + std::to_string(seed);
    const KnnResult truth = knn(context(), Q.view(), X.view(), k, metric);
    const auto built = build(X, metric);
    const IndexSearchResult plain = built->search(context(), Q.view(), k, *all_lists(*built));
    expect_same(plain, IndexSearchResult{truth.values, truth.ids}, label + " ids 0..n-1");

    const std::vector<int64_t> ids = scattered_ids(n, seed);
    const auto renumbered = build(X, metric, ids);
    const IndexSearchResult mapped = renumbered->search(context(), Q.view(), k, *all_lists(*renumbered));
    // Same rows, renamed: values equal knn's, ids are knn's renamed, except where equal values
    // reorder under the new names (none on random data).
    IndexSearchResult renamed{truth.values, truth.ids};
    for (int64_t e = 0; e < renamed.ids.size(); ++e) renamed.ids.data()[e] = ids[size_t(renamed.ids.data()[e])];
    expect_same(mapped, renamed, label + " scattered ids");
  }
}

// Whole numbers tie exactly (as in the digits data): ties must go to the lower id in both kinds.
TEST_P(IndexContract, IntegerTiesGoToTheLowerId) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = integer_matrix(600, dim(8), 3, 5), Q = integer_matrix(20, dim(8), 3, 6);
  for (Metric metric : served({Metric::sqeuclidean, Metric::l1, Metric::dot})) {
    const std::vector<int64_t> ids = scattered_ids(X.rows(), 7);
    const auto index = build(X, metric, ids);
    const IndexSearchResult r = index->search(context(), Q.view(), 12, *all_lists(*index));
    const ReferenceKnn ref = reference_knn(Q, X, X.rows(), metric);
    for (int64_t q = 0; q < Q.rows(); ++q) {
      // The reference in (value, id) order under the scattered ids.
      std::vector<std::pair<double, int64_t>> want;
      for (int64_t j = 0; j < X.rows(); ++j)
        want.emplace_back(
            larger_is_better(metric) ? -ref.values[size_t(q)][size_t(j)] : ref.values[size_t(q)][size_t(j)],
            ids[size_t(ref.ids[size_t(q)][size_t(j)])]);
      std::sort(want.begin(), want.end());
      for (int64_t p = 0; p < 12; ++p)
        ASSERT_EQ(r.ids(q, p), want[size_t(p)].second) << kind().name << " " << to_string(metric) << " query " << q;
    }
  }
}

TEST_P(IndexContract, RemovedIdsAreNeverReturned) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = clustered(900, dim(12), 20, 0.1, 11), Q = random_matrix(30, dim(12), 12);
  const std::vector<int64_t> ids = scattered_ids(X.rows(), 13);
  for (Metric metric : served({Metric::l2, Metric::cosine})) {
    auto index = build(X, metric, ids);
    std::vector<int64_t> gone, kept_rows;
    for (int64_t i = 0; i < X.rows(); ++i) (i % 3 == 0 ? gone.push_back(ids[size_t(i)]) : kept_rows.push_back(i));
    gone.push_back(-5);  // not held: ignored
    EXPECT_EQ(index->remove(gone), 300);
    EXPECT_EQ(index->remove(gone), 0);
    EXPECT_EQ(index->size(), 600);
    const IndexSearchResult r = index->search(context(), Q.view(), 25, *all_lists(*index));
    const std::set<int64_t> removed(gone.begin(), gone.end());
    for (int64_t e = 0; e < r.ids.size(); ++e) ASSERT_EQ(removed.count(r.ids.data()[e]), 0u);
    // The same as an index built from the kept rows alone.
    Matrix<float> kept(static_cast<int64_t>(kept_rows.size()), X.cols());
    std::vector<int64_t> kept_ids;
    for (size_t i = 0; i < kept_rows.size(); ++i) {
      std::copy_n(&X(kept_rows[i], 0), X.cols(), &kept(int64_t(i), 0));
      kept_ids.push_back(ids[size_t(kept_rows[i])]);
    }
    auto fresh = make_index("flat", X.cols(), metric);
    fresh->add(context(), kept.view(), kept_ids);
    expect_same(r, fresh->search(context(), Q.view(), 25), std::string(kind().name) + " after remove");
  }
}

// ---------------------------------------------------------------- allow-lists

// The top-k among the allowed ids, not a filtered short list: ivf_flat at its default nprobe
// (1 of 16 lists) must still find the best allowed rows wherever they are stored.
TEST_P(IndexContract, AllowListIsExactOverTheAllowedIds) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const int64_t n = 1037, d = dim(37), m = 13, k = 10;
  for (Metric metric : every_metric()) {
    const Matrix<float> X = inputs_for(metric, n, d, seed), Q = inputs_for(metric, m, d, seed + 9);
    const std::vector<int64_t> ids = scattered_ids(n, seed);
    auto index = build(X, metric, ids);
    const struct {
      const char* name;
      std::vector<int64_t> allowed;
    } cases[] = {
        {"empty", {}},
        {"one id", pick_allowed(ids, 0, 1, 0, seed + 1)},
        {"5 ids and 3 not stored", pick_allowed(ids, 0, 5, 3, seed + 2)},
        {"5%", pick_allowed(ids, 0.05, 0, 0, seed + 3)},
        {"50% and 20 not stored", pick_allowed(ids, 0.5, 0, 20, seed + 4)},
        {"all", pick_allowed(ids, 1, 0, 0, seed + 5)},
        {"only ids not stored", pick_allowed(ids, 0, 0, 4, seed + 6)},
    };
    for (const auto& c : cases) {
      const std::string label =
          std::string(kind().name) + " " + to_string(metric) + " " + c.name + " seed " + std::to_string(seed);
      const IndexSearchResult r = index->search(context(), Q.view(), k, *allowing(*index, c.allowed));
      expect_allowed_result(context(), r, Q, allowed_subset(X, ids, c.allowed), metric, label);
      // Selective lists are gathered and searched exactly, whatever the index's knobs.
      if (c.allowed.size() <= size_t(n) / 20) {
        const IndexSearchResult g = index->search(context(), Q.view(), k, allowing_defaults(c.allowed));
        expect_allowed_result(context(), g, Q, allowed_subset(X, ids, c.allowed), metric, label + " defaults");
      }
    }
  }
}

TEST_P(IndexContract, AllowListShorterThanKIsPadded) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(40, dim(6), 101), Q = random_matrix(4, dim(6), 102);
  for (Metric metric : served({Metric::l2, Metric::dot})) {
    auto index = build(X, metric);  // ids 0 .. 39
    const std::vector<int64_t> allowed = {-2, 3, 17, 39, 40, 1000};
    const IndexSearchResult r = index->search(context(), Q.view(), 8, *allowing(*index, allowed));
    for (int64_t q = 0; q < Q.rows(); ++q)
      EXPECT_EQ(std::set<int64_t>(&r.ids(q, 0), &r.ids(q, 0) + 3), (std::set<int64_t>{3, 17, 39}));
    // The other 5 slots padded, and the 3 ranked as knn ranks them.
    expect_allowed_result(context(), r, Q, allowed_subset(X, first_ids(40), allowed), metric, to_string(metric));
  }
}

TEST_P(IndexContract, AllowListMustAscendWithoutRepeats) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(40, dim(6), 111);
  auto index = build(X, Metric::l2);
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{9, 3}, std::vector<int64_t>{1, 3, 3, 8}})
    expect_error([&] { index->search(context(), X.view(), 3, *allowing(*index, bad)); }, ErrorCode::invalid_argument,
                 "sorted ascending without repeats");
  SearchParams on_device;
  on_device.allowed = ArrayView<const int64_t>(reinterpret_cast<const int64_t*>(64), 2, Memory::device);
  expect_error([&] { index->search(context(), X.view(), 3, on_device); }, ErrorCode::invalid_argument, "host memory");
}

// Each type reads its own search parameters: a plain SearchParams gives its defaults, another
// type's struct is refused (a knob the caller believed was used is never silently ignored), and
// make_search_params names a knob the type does not read.
TEST_P(IndexContract, SearchParamsOfAnotherTypeAreRefused) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(300, dim(8), 5);
  auto index = build(X, Metric::l2);
  const std::string type = index->type();
  const std::unique_ptr<SearchParams> own = make_search_params(*index, SearchKnobs{});
  const IvfSearchParams ivf;
  const IvfPqSearchParams pq;
  const LshSearchParams lsh;
  const HnswSearchParams hnsw;
  for (const SearchParams* given : {static_cast<const SearchParams*>(&ivf), static_cast<const SearchParams*>(&pq),
                                    static_cast<const SearchParams*>(&lsh), static_cast<const SearchParams*>(&hnsw)}) {
    if (typeid(*given) == typeid(*own)) {
      EXPECT_NO_THROW(index->search(context(), X.view(), 3, *given)) << type;
    } else {
      expect_error([&] { index->search(context(), X.view(), 3, *given); }, ErrorCode::invalid_argument,
                   type + " search: given ");
    }
  }
  const IndexSearchResult defaults = index->search(context(), X.view(), 3, SearchParams{});
  expect_same(index->search(context(), X.view(), 3, *own), defaults, type + " own defaults");
  auto refused = [&](SearchKnobs knobs, const std::string& needle) {
    expect_error([&] { make_search_params(*index, knobs); }, ErrorCode::invalid_argument,
                 needle + "; this index is " + type);
  };
  if (type != "ivf_pq") refused(SearchKnobs{0, 4, 0}, "refine applies to ivf_pq");
  if (type != "lsh") refused(SearchKnobs{0, 0, 2}, "probes applies to lsh");
  if (type == "flat" || type == "lsh" || type == "tree" || type == "hnsw")
    refused(SearchKnobs{8, 0, 0}, "nprobe applies to ivf_flat and ivf_pq");
  if (type != "hnsw") refused(SearchKnobs{0, 0, 0, 8}, "ef applies to hnsw");
}

// remove() compacts the rows (and the lists): the allow-list must still meet the right rows, and
// removed ids stay out even when allowed.
TEST_P(IndexContract, AllowListAfterRemove) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> X = random_matrix(1037, dim(37), seed + 21), Q = random_matrix(13, dim(37), seed + 22);
  const std::vector<int64_t> ids = scattered_ids(X.rows(), seed + 23);
  for (Metric metric : served({Metric::sqeuclidean, Metric::cosine, Metric::l1})) {
    auto index = build(X, metric, ids);
    std::vector<int64_t> gone;
    for (size_t i = 0; i < ids.size(); i += 3) gone.push_back(ids[i]);
    ASSERT_EQ(index->remove(gone), int64_t(gone.size()));
    // The kept rows, as the subset helper sees them: removed rows take an id no list allows.
    std::vector<int64_t> kept_ids = ids;
    for (size_t i = 0; i < ids.size(); i += 3) kept_ids[i] = -100;
    for (double fraction : {0.05, 0.5, 1.0}) {
      const std::vector<int64_t> allowed = pick_allowed(ids, fraction, 0, 5, seed + 24);
      const std::string label = std::string(kind().name) + " " + to_string(metric) + " after remove, " +
                                std::to_string(fraction) + " seed " + std::to_string(seed);
      const IndexSearchResult r = index->search(context(), Q.view(), 10, *allowing(*index, allowed));
      expect_allowed_result(context(), r, Q, allowed_subset(X, kept_ids, allowed), metric, label);
    }
  }
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("simkit-index-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST_P(IndexContract, SaveLoadRoundTripAndAddAfterLoad) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const TempDir dir;
  const Matrix<float> X = clustered(700, dim(10), 12, 0.2, 21), Q = random_matrix(40, dim(10), 22);
  const Matrix<float> more = random_matrix(50, dim(10), 23);
  for (Metric metric : served({Metric::sqeuclidean, Metric::pearson})) {
    auto index = build(X, metric, scattered_ids(X.rows(), 24));
    index->remove(std::vector<int64_t>{scattered_ids(X.rows(), 24)[5]});
    const std::string path = dir.file(std::string(kind().name) + to_string(metric) + ".simkit");
    index->save(path);
    auto loaded = load_index(path);
    EXPECT_EQ(loaded->type(), type());
    EXPECT_EQ(loaded->description(), index->description());
    EXPECT_EQ(loaded->metric(), metric);
    EXPECT_EQ(loaded->size(), index->size());
    EXPECT_EQ(loaded->next_id(), index->next_id());
    const std::unique_ptr<SearchParams> own = params_for(*index, SearchKnobs{3, 0, 0});
    const SearchParams& sp = *own;
    expect_same(loaded->search(context(), Q.view(), 9, sp), index->search(context(), Q.view(), 9, sp), "round trip");
    // Adding to the loaded copy and to the original gives the same index.
    loaded->add(context(), more.view());
    index->add(context(), more.view());
    expect_same(loaded->search(context(), Q.view(), 9, sp), index->search(context(), Q.view(), 9, sp),
                "add after load");
    // Saving again over the file replaces it whole.
    loaded->save(path);
    EXPECT_EQ(load_index(path)->size(), index->size());
  }
}

TEST_P(IndexContract, EveryDamagedFileIsRefused) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const TempDir dir;
  auto index = build(random_matrix(60, dim(4), 31), Metric::l2);
  const std::string path = dir.file("good.simkit");
  index->save(path);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string bad = dir.file("bad.simkit");
  auto write = [&](const std::string& b) { std::ofstream(bad, std::ios::binary | std::ios::trunc) << b; };
  for (size_t cut : {size_t(0), size_t(5), size_t(20), bytes.size() / 2, bytes.size() - 1}) {
    write(bytes.substr(0, cut));
    expect_error([&] { load_index(bad); }, ErrorCode::io, "bad.simkit");
  }
  for (size_t at = 0; at < bytes.size(); at += std::max<size_t>(1, bytes.size() / 97)) {
    std::string b = bytes;
    b[at] = static_cast<char>(b[at] ^ 0x40);
    write(b);
    expect_error([&] { load_index(bad); }, ErrorCode::io, "not a usable simkit index file");
  }
  expect_error([&] { load_index(dir.file("missing.simkit")); }, ErrorCode::io, "missing.simkit");
}

// A file with a valid checksum whose sections contradict each other (a lying writer) is
// refused by the loader's own checks.
TEST(IndexFileContents, ContradictionsAreRefused) {
  const TempDir dir;
  const std::string path = dir.file("lying.simkit");
  const std::vector<float> vectors(3 * 4, 0.5f);
  auto write_flat = [&](std::vector<int64_t> ids, uint64_t size, uint64_t next, const std::string& metric) {
    detail::IndexFileWriter w;
    w.add_text("type", "flat");
    w.add_text("metric", metric);
    w.add_u64("dim", 4);
    w.add_u64("size", size);
    w.add_u64("next_id", next);
    w.add("ids", ids.data(), ids.size() * sizeof(int64_t));
    w.add("vectors", vectors.data(), vectors.size() * sizeof(float));
    w.write(path);
  };
  write_flat({0, 1, 2}, 3, 3, "l2");
  EXPECT_EQ(load_index(path)->size(), 3);
  write_flat({0, 1, 2}, 4, 3, "l2");
  expect_error([&] { load_index(path); }, ErrorCode::io, "'ids'");
  write_flat({0, 1, 1}, 3, 3, "l2");
  expect_error([&] { load_index(path); }, ErrorCode::io, "stored twice");
  write_flat({0, 1, 2}, 3, 2, "l2");
  expect_error([&] { load_index(path); }, ErrorCode::io, "out of range");
  write_flat({0, 1, 2}, 3, 3, "hamming");
  expect_error([&] { load_index(path); }, ErrorCode::io, "unknown metric");
  detail::IndexFileWriter other;
  other.add_text("type", "graph");
  other.write(path);
  expect_error([&] { load_index(path); }, ErrorCode::io, "unknown index type 'graph'");
}

TEST_P(IndexContract, BadInputIsRefusedAndChangesNothing) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = random_matrix(64, dim(6), 41);
  auto index = build(X, Metric::l2);
  const IndexSearchResult before = index->search(context(), X.view(), 3);
  Matrix<float> nan_rows = random_matrix(4, dim(6), 42);
  nan_rows(2, 3) = NAN;
  expect_error([&] { index->add(context(), nan_rows.view()); }, ErrorCode::invalid_argument, "NaN");
  expect_error([&] { index->add(context(), random_matrix(4, 5, 43).view()); }, ErrorCode::invalid_argument,
               "dimension 5");
  expect_error(
      [&] {
        index->add(context(), random_matrix(2, dim(6), 44).view(), std::vector<int64_t>{7, 100});
      },
      ErrorCode::invalid_argument, "id 7 is already in the index");
  expect_error(
      [&] {
        index->add(context(), random_matrix(2, dim(6), 44).view(), std::vector<int64_t>{500, 500});
      },
      ErrorCode::invalid_argument, "more than once");
  expect_error([&] { index->add(context(), random_matrix(2, dim(6), 44).view(), std::vector<int64_t>{500}); },
               ErrorCode::invalid_argument, "1 ids for 2 vectors");
  expect_error([&] { index->add(context(), random_matrix(1, dim(6), 44).view(), std::vector<int64_t>{-3}); },
               ErrorCode::invalid_argument, ">= 0");
  expect_error([&] { index->add(context(), MatrixView<const float>{}); }, ErrorCode::invalid_argument, "no vectors");
  expect_error([&] { index->search(context(), X.view(), 0); }, ErrorCode::invalid_argument, "k must be at least 1");
  expect_error([&] { index->search(context(), random_matrix(2, 7, 45).view(), 3); }, ErrorCode::invalid_argument,
               "dimension 7");
  expect_error([&] { index->search(context(), nan_rows.view(), 3); }, ErrorCode::invalid_argument, "NaN");
  EXPECT_EQ(index->size(), 64);
  EXPECT_EQ(index->next_id(), 64);
  expect_same(index->search(context(), X.view(), 3), before, "after refused calls");
}

TEST_P(IndexContract, ConcurrentSearchesAgree) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> X = clustered(2000, dim(16), 30, 0.1, 51), Q = random_matrix(64, dim(16), 52);
  auto index = build(X, served({Metric::cosine}).front());
  Context ctx = context();
  ctx.threads = 1;
  const IndexSearchResult want = index->search(ctx, Q.view(), 10);
  std::vector<IndexSearchResult> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) got[t] = index->search(ctx, Q.view(), 10);
    });
  for (auto& t : threads) t.join();
  for (const auto& g : got) expect_same(g, want, "concurrent");
}

// ---------------------------------------------------------------- ivf_flat alone

class IvfFlat : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, IvfFlat, ::testing::ValuesIn(kBackends), BackendName{});

TEST_P(IvfFlat, RecallRisesWithNprobe) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const Matrix<float> X = clustered(6000, 24, 64, 0.3, 61), Q = clustered(200, 24, 64, 0.3, 62);
  for (Metric metric : {Metric::l2, Metric::cosine, Metric::dot}) {
    auto index = make_index("ivf_flat,nlist=64,seed=3", 24, metric);
    index->train(context(), X.view());
    index->add(context(), X.view());
    const KnnResult truth = knn(context(), Q.view(), X.view(), 10, metric);
    double last = -1;
    for (int64_t nprobe : {1, 2, 4, 8, 16, 64}) {
      IvfSearchParams sp;
      sp.nprobe = nprobe;
      const double r = recall(index->search(context(), Q.view(), 10, sp), truth);
      EXPECT_GE(r, last) << to_string(metric) << " nprobe " << nprobe;
      last = r;
      if (nprobe == 1) {
        EXPECT_LT(r, 0.9) << to_string(metric) << ": one list of 64 should miss neighbours";
      }
    }
    EXPECT_EQ(last, 1.0) << to_string(metric);
  }
}

TEST_P(IvfFlat, DigitsWithEveryListProbedEqualFlat) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const std::string dir = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/";
  const Matrix<float> X = read_matrix(dir + "digits_base.fvecs"), Q = read_matrix(dir + "digits_query.fvecs");
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine, Metric::l1}) {
    auto flat = make_index("flat", X.cols(), metric);
    flat->add(context(), X.view());
    auto ivf = make_index("ivf_flat,nlist=32", X.cols(), metric);
    ivf->train(context(), X.view());
    ivf->add(context(), X.view());
    expect_same(ivf->search(context(), Q.view(), 10, *all_lists(*ivf)), flat->search(context(), Q.view(), 10),
                std::string("digits ") + to_string(metric));
  }
}

TEST_P(IvfFlat, TrainingRulesAndNprobe) {
  SIMKIT_REQUIRE_BACKEND(GetParam());
  const Matrix<float> X = random_matrix(100, 4, 71);
  auto index = make_index("ivf_flat,nlist=20", 4, Metric::l2);
  EXPECT_FALSE(index->is_trained());
  expect_error([&] { index->add(context(), X.view()); }, ErrorCode::invalid_argument, "train the ivf_flat index first");
  expect_error([&] { index->train(context(), random_matrix(19, 4, 72).view()); }, ErrorCode::invalid_argument,
               "cannot form nlist = 20");
  index->train(context(), X.view());
  index->add(context(), X.view());
  expect_error([&] { index->train(context(), X.view()); }, ErrorCode::invalid_argument, "already holds 100");
  IvfSearchParams sp;
  sp.nprobe = -4;
  expect_error([&] { index->search(context(), X.view(), 3, sp); }, ErrorCode::invalid_argument, "nprobe");
  // The seed preset probes ceil(0.8 nlist) = 16 of 20 lists: a superset of nprobe = 15's.
  sp.nprobe = kProbeFourFifths;
  const IndexSearchResult seed = index->search(context(), X.view(), 5, sp);
  for (int64_t q = 0; q < X.rows(); ++q) EXPECT_EQ(seed.ids(q, 0), q);  // each row finds itself
}

// reserve() sizes flat's storage for a base added in batches; every kind takes it (a hint) and
// refuses a negative count. The batches give what one add gives.
TEST(IndexFactory, ReserveBeforeBatches) {
  const Matrix<float> X = random_matrix(1003, 9, 71), Q = random_matrix(13, 9, 72);
  for (const char* description : {"flat", "ivf_flat,nlist=8", "hnsw"}) {
    auto whole = make_index(description, 9, Metric::l2), batched = make_index(description, 9, Metric::l2);
    expect_error([&] { batched->reserve(-1); }, ErrorCode::invalid_argument, "reserve: rows");
    whole->train(cpu_context(), X.view());
    batched->train(cpu_context(), X.view());
    whole->add(cpu_context(), X.view());
    batched->reserve(X.rows());
    for (int64_t r = 0; r < X.rows(); r += 250) {
      const int64_t n = std::min<int64_t>(250, X.rows() - r);
      batched->add(cpu_context(), MatrixView<const float>{X.data() + r * 9, n, 9});
    }
    EXPECT_EQ(batched->size(), X.rows()) << description;
    if (std::string(description) == "flat")  // hnsw's graph depends on the batches
      expect_same(batched->search(cpu_context(), Q.view(), 7), whole->search(cpu_context(), Q.view(), 7), description);
  }
}

TEST(IndexFactory, DescriptionsParseOrAreRefused) {
  EXPECT_EQ(make_index("flat", 3, Metric::l2)->type(), "flat");
  auto ivf = make_index("ivf_flat,nlist=8,nprobe=seed,seed=5", 3, Metric::cosine);
  EXPECT_EQ(ivf->type(), "ivf_flat");
  EXPECT_EQ(make_index(ivf->description(), 3, Metric::cosine)->description(), ivf->description());
  expect_error([] { make_index("graph", 3, Metric::l2); }, ErrorCode::invalid_argument, "unknown index type 'graph'");
  EXPECT_EQ(make_index("hnsw", 3, Metric::l2)->description(), "hnsw,m=16,ef_construction=200,ef=64,seed=0");
  EXPECT_EQ(make_index("hnsw,m=8,ef=20,seed=3,storage=float32", 3, Metric::l2)->description(),
            "hnsw,m=8,ef_construction=200,ef=20,seed=3");
  expect_error([] { make_index("hnsw,m=1", 3, Metric::l2); }, ErrorCode::invalid_argument, "m must be");
  expect_error([] { make_index("hnsw,storage=fp8", 3, Metric::l2); }, ErrorCode::invalid_argument,
               "storage must be float32 or sq8");
  expect_error([] { make_index("hnsw,efc=3", 3, Metric::l2); }, ErrorCode::invalid_argument,
               "unknown 'hnsw' parameter 'efc'");
  expect_error([] { make_index("ivf_flat,nlists=8", 3, Metric::l2); }, ErrorCode::invalid_argument,
               "unknown 'ivf_flat' parameter 'nlists'");
  expect_error([] { make_index("ivf_flat,nlist=0", 3, Metric::l2); }, ErrorCode::invalid_argument, "nlist must be");
  expect_error([] { make_index("ivf_flat,nlist=12x", 3, Metric::l2); }, ErrorCode::invalid_argument, "'12x'");
  expect_error([] { make_index("ivf_flat,nlist", 3, Metric::l2); }, ErrorCode::invalid_argument, "key=value");
  expect_error([] { make_index("flat,nlist=3", 3, Metric::l2); }, ErrorCode::invalid_argument, "no parameters");
  expect_error([] { make_index("flat", 0, Metric::l2); }, ErrorCode::invalid_argument, "dimension");
  EXPECT_EQ(make_index("tree", 3, Metric::l2)->description(), "tree");
  expect_error([] { make_index("tree,leaf=8", 3, Metric::l2); }, ErrorCode::invalid_argument, "no parameters");
  expect_error([] { make_index("tree", 3, Metric::cosine); }, ErrorCode::invalid_argument, "l2 and sqeuclidean");
  expect_error([] { make_index("tree", 9, Metric::l2); }, ErrorCode::invalid_argument, "d <= 8");
}

// Device-resident queries and outputs (the torch / CuPy path).
TEST(IndexGpuOnly, DeviceQueriesAndOutputs) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  for (const char* description : {"flat", "ivf_flat,nlist=25", "tree", "hnsw"}) {
    const int64_t d = std::string(description) == "tree" ? 3 : 20;  // the tree serves d <= 8
    const Matrix<float> X = clustered(3000, d, 25, 0.2, 81), Q = random_matrix(33, d, 82);
    auto index = make_index(description, d, Metric::l2);
    index->train(ctx, X.view());
    index->add(ctx, X.view(), scattered_ids(X.rows(), 83));
    const IndexSearchResult host = index->search(ctx, Q.view(), 8);
    const DeviceMatrix<float> dq(ctx, Q.view());
    DeviceMatrix<float> dv(ctx, 33, 8);
    DeviceMatrix<int64_t> di(ctx, 33, 8);
    index->search(ctx, dq.view(), 8, SearchParams{}, dv.view(), di.view());
    IndexSearchResult back{Matrix<float>(33, 8), Matrix<int64_t>(33, 8)};
    dv.copy_to_host(back.values.view());
    di.copy_to_host(back.ids.view());
    expect_same(back, host, description);
  }
}

// Device queries and outputs with an allow-list: the gathered rows stay on the host, the
// results reach the device (straight from the k-NN when every row of 0 .. n-1 is allowed).
TEST(IndexGpuOnly, AllowListWithDeviceQueriesAndOutputs) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const std::vector<int64_t> ids = first_ids(3000);
  for (const char* description : {"flat", "ivf_flat,nlist=25", "tree", "hnsw"}) {
    const bool tree = std::string(description) == "tree";  // l2 in d <= 8 alone
    const int64_t d = tree ? 3 : 20;
    const Metric metric = tree ? Metric::l2 : Metric::cosine;
    const Matrix<float> X = clustered(3000, d, 25, 0.2, 84), Q = random_matrix(33, d, 85);
    auto index = make_index(description, d, metric);
    index->train(ctx, X.view());
    index->add(ctx, X.view());
    for (double fraction : {0.0, 0.002, 0.3, 1.0}) {
      const std::vector<int64_t> allowed = pick_allowed(ids, fraction, 0, 2, 86);
      const std::string label = std::string(description) + " " + std::to_string(fraction);
      const IndexSearchResult host = index->search(ctx, Q.view(), 8, *allowing(*index, allowed));
      expect_allowed_result(ctx, host, Q, allowed_subset(X, ids, allowed), metric, label);
      const DeviceMatrix<float> dq(ctx, Q.view());
      DeviceMatrix<float> dv(ctx, 33, 8);
      DeviceMatrix<int64_t> di(ctx, 33, 8);
      index->search(ctx, dq.view(), 8, *allowing(*index, allowed), dv.view(), di.view());
      IndexSearchResult back{Matrix<float>(33, 8), Matrix<int64_t>(33, 8)};
      dv.copy_to_host(back.values.view());
      di.copy_to_host(back.ids.view());
      expect_same(back, host, label);
    }
  }
}

// Lists larger than the GPU budget stay on the host and are streamed a segment at a time; the
// results are those of the same index searched with its lists resident (l1's float sums are the
// GPU's own, so the comparison is GPU against GPU; resident GPU against CPU is tested above).
TEST(IndexGpuOnly, ListsBeyondTheBudgetAreStreamed) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> X = clustered(20000, 64, 64, 0.3, 91), Q = random_matrix(300, 64, 92);
  for (Metric metric : {Metric::l2, Metric::cosine, Metric::l1}) {
    std::unique_ptr<Index> twins[2];
    for (auto& index : twins) {
      index = make_index("ivf_flat,nlist=64", 64, metric);
      index->train(cpu_context(), X.view());
      index->add(cpu_context(), X.view(), scattered_ids(X.rows(), 93));
    }
    IvfSearchParams sp;
    sp.nprobe = 9;
    const IndexSearchResult resident = twins[0]->search(gpu_context(), Q.view(), 10, sp);
    // 8 MiB of working memory: the lists (~10 MiB interleaved plus row-major) do not fit half of it.
    const IndexSearchResult streamed = twins[1]->search(gpu_context(size_t(8) << 20), Q.view(), 10, sp);
    expect_same(streamed, resident, std::string("streamed ") + to_string(metric));
    if (metric != Metric::l1) {
      const IndexSearchResult cpu = twins[0]->search(cpu_context(), Q.view(), 10, sp);
      expect_same(streamed, cpu, std::string("streamed vs cpu ") + to_string(metric));
    }
  }
}

// A flat index larger than what the GPU has free is not made resident (ResidentRows::sync): its
// rows stream from host memory at each search, with the same answer as the resident copy's.
TEST(IndexGpuOnly, FlatBeyondTheGpuIsStreamed) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const Matrix<float> X = random_matrix(600001, 128, 94, Distribution::gaussian), Q = random_matrix(37, 128, 95);
  for (Metric metric : {Metric::l2, Metric::cosine, Metric::l1}) {
    IndexSearchResult resident;
    {
      auto index = make_index("flat", 128, metric);
      index->add(ctx, X.view());
      resident = index->search(ctx, Q.view(), 10);
    }  // its device copy freed
    auto index = make_index("flat", 128, metric);
    index->add(ctx, X.view());
    // Leave 256 MiB free: the 293 MiB of rows are more than kResidentShare of it.
    const size_t free_now = gpus()[size_t(ctx.gpu_id)].free_memory;
    ASSERT_GT(free_now, size_t(1) << 30);
    const DeviceMatrix<float> hog(ctx, int64_t((free_now - (size_t(256) << 20)) / sizeof(float)), 1);
    const IndexSearchResult streamed = index->search(ctx, Q.view(), 10);
    expect_same(streamed, resident, std::string("streamed flat ") + to_string(metric));
  }
}

}  // namespace
}  // namespace simkit::test
