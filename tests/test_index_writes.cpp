// Writes between searches: an index that went through a history of adds (in shuffled batches,
// with ids out of order), removals, re-adds and searches in between returns, bit for bit, what
// an index built once from the surviving rows in id order returns -- on every kind and both
// backends, with random data and with integer data full of exact ties and duplicate rows (the
// tie rule, lower id first, must survive rows stored out of id order). On the GPU the searches in
// between keep the resident copies in use, so the later ones see them updated, not rebuilt.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <simkit/index.hpp>

#include "contexts.hpp"
#include "index/id_filter.hpp"
#include "index/ivf/probe_pairs.hpp"
#include "index_check.hpp"
#include "reference.hpp"
#include "scoped_env.hpp"

namespace simkit::test {
namespace {

/// The tree serves l2 and sqeuclidean in d <= 8 alone: its instances take every history in their
/// own dimension with those metrics (dim() and served() below).
struct Kind {
  const char* name;
  const char* description;
  int64_t dim = 0;  // every history's data in this dimension; 0: the test's own
  /// The index's structure depends on its history (hnsw's graph), not only on the rows it
  /// holds: only its exhaustive searches must equal the clean build's, and its file may differ.
  bool history_shapes = false;
};
constexpr Kind kKinds[] = {{"flat", "flat"},
                           {"ivf_flat", "ivf_flat,nlist=12,iterations=8"},
                           {"ivf_pq", "ivf_pq,nlist=12,iterations=8,refine=4"},
                           {"lsh", "lsh,tables=6,bits=3,probes=6"},
                           {"tree_d3", "tree", 3},
                           {"tree_d8", "tree", 8},
                           {"hnsw", "hnsw,m=8,ef_construction=60,ef=20", 0, true}};

using Param = std::tuple<Backend, int>;
class IndexWrites : public ::testing::TestWithParam<Param> {
 protected:
  Backend backend() const { return std::get<0>(GetParam()); }
  const Kind& kind() const { return kKinds[std::get<1>(GetParam())]; }
  Context context() const { return context_for(backend()); }
  /// A history's data dimension `d`, or the kind's own.
  int64_t dim(int64_t d) const { return kind().dim > 0 ? kind().dim : d; }
  /// The metrics of `wanted` this kind serves (the tree: l2 and sqeuclidean).
  std::vector<Metric> served(std::vector<Metric> wanted) const {
    if (std::string(kind().description) == "tree")
      std::erase_if(wanted, [](Metric m) { return m != Metric::l2 && m != Metric::sqeuclidean; });
    return wanted;
  }
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(kKinds[std::get<1>(info.param)].name) + "_" + backend_name(std::get<0>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Kinds, IndexWrites,
                         ::testing::Combine(::testing::ValuesIn(kBackends),
                                            ::testing::Range(0, int(std::size(kKinds)))),
                         param_name);

Matrix<float> rows_of(const Matrix<float>& X, const std::vector<int64_t>& rows) {
  Matrix<float> out(static_cast<int64_t>(rows.size()), X.cols());
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(&X(rows[i], 0), X.cols(), &out(int64_t(i), 0));
  return out;
}

/// Integer rows in [0, 3) with every fifth row a copy of an earlier one: exact ties everywhere.
Matrix<float> tied_rows(int64_t n, int64_t d, uint64_t seed) {
  Matrix<float> X = integer_matrix(n, d, 3, seed);
  std::mt19937_64 rng(seed + 1);
  for (int64_t i = 5; i < n; i += 5) std::copy_n(&X(int64_t(rng() % uint64_t(i)), 0), d, &X(i, 0));
  return X;
}

void check_history(const Context& ctx, const Kind& kind, const Matrix<float>& X, const Matrix<float>& Q, Metric metric,
                   uint64_t seed, const std::string& what) {
  const int64_t n = X.rows();
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));  // id of row i: scattered, none in row order
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = 7919 * (i + 3) % 1000003;
  std::shuffle(ids.begin(), ids.end(), rng);

  auto history = make_index(kind.description, X.cols(), metric);
  history->train(ctx, X.view());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const std::unique_ptr<SearchParams> exhaustive = all_lists(*history);  // each kind's exact mode
  const SearchParams& sp = *exhaustive;
  for (int64_t b0 = 0; b0 < n; b0 += n / 5 + 1) {  // five batches, rows in shuffled order
    const std::vector<int64_t> batch(order.begin() + b0, order.begin() + std::min(n, b0 + n / 5 + 1));
    std::vector<int64_t> batch_ids;
    for (int64_t r : batch) batch_ids.push_back(ids[size_t(r)]);
    history->add(ctx, rows_of(X, batch).view(), batch_ids);
    history->search(ctx, Q.view(), 7, sp);  // GPU: the resident copy is made, then must follow
  }
  // Remove a third (one at a time for some, a batch for the rest), then give half of them back.
  std::vector<int64_t> gone(order.begin(), order.begin() + n / 3);
  for (size_t i = 0; i < 20; ++i) ASSERT_EQ(history->remove(std::vector<int64_t>{ids[size_t(gone[i])]}), 1);
  std::vector<int64_t> rest_ids;
  for (size_t i = 20; i < gone.size(); ++i) rest_ids.push_back(ids[size_t(gone[i])]);
  ASSERT_EQ(history->remove(rest_ids), int64_t(rest_ids.size()));
  history->search(ctx, Q.view(), 7, sp);
  const std::vector<int64_t> back(gone.begin(), gone.begin() + int64_t(gone.size() / 2));
  std::vector<int64_t> back_ids;
  for (int64_t r : back) back_ids.push_back(ids[size_t(r)]);
  history->add(ctx, rows_of(X, back).view(), back_ids);

  // The same survivors, added once in id order.
  std::vector<int64_t> kept(order.begin() + int64_t(gone.size()), order.end());
  kept.insert(kept.end(), back.begin(), back.end());
  std::sort(kept.begin(), kept.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
  std::vector<int64_t> kept_ids;
  for (int64_t r : kept) kept_ids.push_back(ids[size_t(r)]);
  auto clean = make_index(kind.description, X.cols(), metric);
  clean->train(ctx, X.view());
  clean->add(ctx, rows_of(X, kept).view(), kept_ids);
  ASSERT_EQ(history->size(), clean->size()) << what;

  for (int64_t k : {int64_t(1), int64_t(10), clean->size() + 3}) {
    const std::string label = what + " k=" + std::to_string(k);
    expect_same(history->search(ctx, Q.view(), k, sp), clean->search(ctx, Q.view(), k, sp), label + " exhaustive");
    if (!kind.history_shapes)
      expect_same(history->search(ctx, Q.view(), k), clean->search(ctx, Q.view(), k), label + " defaults");
  }
  // Allow-lists: the filter tested inside the history's scan (rows out of id order) against the
  // clean index's gathered rows, for every density (exhaustive searches are exact either way).
  for (double fraction : {0.02, 0.3, 0.8, 1.0}) {
    std::vector<int64_t> allowed;
    for (int64_t id : kept_ids)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < fraction) allowed.push_back(id);
    const std::unique_ptr<SearchParams> filtered = all_lists(*history);
    SearchParams& fp = *filtered;
    fp.allowed = ArrayView<const int64_t>{allowed.data(), static_cast<int64_t>(allowed.size())};
    const std::string label = what + " allowed " + std::to_string(fraction);
    ScopedEnv scan("SIMKIT_FILTER_PLAN", "scan");
    const IndexSearchResult in_scan = history->search(ctx, Q.view(), 10, fp);
    ScopedEnv gather("SIMKIT_FILTER_PLAN", "gather");
    expect_same(in_scan, clean->search(ctx, Q.view(), 10, fp), label);
  }
  // Saved after the history and loaded back: the same index as the clean one's file.
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string a = (dir / ("simkit-writes-" + std::to_string(::getpid()) + "-a.simkit")).string();
  const std::string b = (dir / ("simkit-writes-" + std::to_string(::getpid()) + "-b.simkit")).string();
  history->save(a);
  clean->save(b);
  const auto loaded = load_index(a);
  EXPECT_EQ(loaded->size(), clean->size()) << what;
  expect_same(loaded->search(ctx, Q.view(), 10, sp), clean->search(ctx, Q.view(), 10, sp), what + " loaded");
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string bytes_a((std::istreambuf_iterator<char>(fa)), {}),
      bytes_b((std::istreambuf_iterator<char>(fb)), {});
  // Byte for byte unless the largest id ever stored was removed for good: next_id() differs then.
  if (history->next_id() == clean->next_id() && !kind.history_shapes) {
    EXPECT_TRUE(bytes_a == bytes_b) << what << ": the saved files differ";
  }
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST_P(IndexWrites, HistoryEqualsOneBuildInIdOrder) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  for (Metric metric : served({Metric::sqeuclidean, Metric::cosine, Metric::dot, Metric::l1})) {
    const std::string what = std::string(kind().name) + " " + to_string(metric) + " seed " + std::to_string(seed);
    check_history(context(), kind(), inputs_for(metric, 611, dim(19), seed + 1),
                  inputs_for(metric, 9, dim(19), seed + 2), metric, seed + 3, what + " random");
    check_history(context(), kind(), tied_rows(503, dim(6), seed + 4), tied_rows(11, dim(6), seed + 5), metric,
                  seed + 6, what + " ties");
  }
}

// Enough rows that the inverted file's arena fills with moved lists' blocks and is compacted
// (index/ivf_lists.hpp) during the history, and that the tree is built, grows a tail past its
// limit (max(1,024, 8 sqrt(n)) rows) and is rebuilt, and loses a third of its rows (index/tree/tree_index.cpp).
TEST_P(IndexWrites, LargerHistoryEqualsOneBuild) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  check_history(context(), kind(), random_matrix(9001, dim(4), seed + 7), random_matrix(7, dim(4), seed + 8),
                Metric::sqeuclidean, seed + 9, std::string(kind().name) + " larger seed " + std::to_string(seed));
}

// The allow-list as the scans test it: a bitmap for dense ids, a hash set for sparse ones
// (ids near INT64_MAX, as a server's hashed point ids are), negative ids allowing nothing.
TEST(IdFilter, DenseAndSparseIdsMarkTheSameRows) {
  std::mt19937_64 rng(test_seed());
  for (const int64_t scale : {int64_t(1), int64_t(1) << 50}) {
    std::vector<int64_t> stored(777);
    for (size_t i = 0; i < stored.size(); ++i) stored[i] = int64_t(i) * 3 * scale + 5;
    std::shuffle(stored.begin(), stored.end(), rng);
    std::vector<int64_t> allowed = {-7, -1};
    for (int64_t id : stored)
      if (rng() % 3 == 0) allowed.push_back(id);
    allowed.push_back(4);  // never stored
    std::sort(allowed.begin(), allowed.end());
    const detail::IdFilter filter(ArrayView<const int64_t>{allowed.data(), int64_t(allowed.size())});
    std::vector<uint64_t> mask((stored.size() + 10 + 63) / 64, 0);
    const int64_t marked = filter.mark(stored.data(), int64_t(stored.size()), 10, mask.data());
    int64_t want = 0;
    for (size_t i = 0; i < stored.size(); ++i) {
      const bool in = std::binary_search(allowed.begin(), allowed.end(), stored[i]);
      want += in ? 1 : 0;
      EXPECT_EQ(bool((mask[(i + 10) / 64] >> ((i + 10) % 64)) & 1), in) << "scale " << scale << " row " << i;
    }
    EXPECT_EQ(marked, want);
    EXPECT_EQ(int64_t(allowed.size()) - 3, want);
    for (size_t i = 0; i < 10; ++i) EXPECT_FALSE((mask[0] >> i) & 1) << "bits before `at` stay clear";
    EXPECT_FALSE(filter.allows(-1));
    EXPECT_FALSE(filter.allows(4 + 3 * scale));
  }
  const std::vector<int64_t> none;
  EXPECT_FALSE(detail::IdFilter(ArrayView<const int64_t>{none.data(), 0}).allows(0));
}

// The batch inversion every list scan starts from: pairs grouped by list, in pair order within.
TEST(ProbePairs, GroupsEveryPairUnderItsListInOrder) {
  std::mt19937_64 rng(test_seed());
  const int64_t nlist = 37, count = 1001;
  std::vector<int64_t> probes(count);
  for (int64_t& p : probes) p = int64_t(rng() % uint64_t(nlist - 5));  // the last lists stay empty
  std::vector<int64_t> start, pairs;
  detail::group_pairs_by_list(probes.data(), count, nlist, start, pairs);
  ASSERT_EQ(start.size(), size_t(nlist + 1));
  ASSERT_EQ(start.front(), 0);
  ASSERT_EQ(start.back(), count);
  std::vector<int64_t> seen;
  for (int64_t l = 0; l < nlist; ++l)
    for (int64_t i = start[size_t(l)]; i < start[size_t(l + 1)]; ++i) {
      const int64_t p = pairs[size_t(i)];
      EXPECT_EQ(probes[size_t(p)], l);
      if (i > start[size_t(l)]) {
        EXPECT_LT(pairs[size_t(i - 1)], p) << "pair order within a list";
      }
      seen.push_back(p);
    }
  std::sort(seen.begin(), seen.end());
  for (int64_t p = 0; p < count; ++p) ASSERT_EQ(seen[size_t(p)], p);
  for (int64_t l = nlist - 5; l < nlist; ++l) EXPECT_EQ(start[size_t(l)], start[size_t(l + 1)]);
}

}  // namespace
}  // namespace simkit::test
