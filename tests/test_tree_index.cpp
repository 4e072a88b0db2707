// The tree index (src/index/tree/) against the flat index given the same writes: the same ids,
// order and value bits on uniform, clustered and duplicate-heavy data in d = 2, 3 and 8, for
// k = 1, 10 and 100, through a history of batch and single adds and removals that takes the
// index across both rebuild limits (a tail of more than max(1,024, 8 sqrt(n)) rows, removals of
// more than a quarter of the rows) with searches between them; allow-lists of every density under both
// plans; k beyond the size; save and load; and the metrics and dimensions it refuses.

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "index_check.hpp"
#include "reference.hpp"
#include "scoped_env.hpp"

namespace simkit::test {
namespace {

enum class Shape { uniform, clustered, duplicates };
const char* name(Shape s) {
  return s == Shape::uniform ? "uniform" : s == Shape::clustered ? "clustered" : "duplicates";
}

/// Rows of the shape: uniform in [-1, 1)^d; tight Gaussian clusters around 8 centres; or the
/// points of a 5^d grid, so that many rows repeat and many distances tie exactly.
Matrix<float> points(Shape shape, int64_t n, int64_t d, uint64_t seed) {
  switch (shape) {
    case Shape::uniform: return random_matrix(n, d, seed);
    case Shape::clustered: return clustered(n, d, 8, 0.02, seed);
    case Shape::duplicates: {
      Matrix<float> X = integer_matrix(n, d, 5, seed);
      for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = X.data()[i] / 4 - 0.5f;
      return X;
    }
  }
  return {};
}

/// A tree index and a flat index of the same metric, given the same writes; row r of the pool
/// carries id ids[r], scattered so that no batch arrives in id order.
class Twins {
 public:
  Twins(const Context& ctx, const Matrix<float>& pool, Metric metric, uint64_t seed)
      : ctx_(ctx), pool_(pool), ids_(size_t(pool.rows())), live_(size_t(pool.rows()), false) {
    tree = make_index("tree", pool.cols(), metric);
    flat = make_index("flat", pool.cols(), metric);
    for (int64_t i = 0; i < pool.rows(); ++i) ids_[size_t(i)] = 7919 * (i + 3) % 1000003;
    std::shuffle(ids_.begin(), ids_.end(), std::mt19937_64(seed));
  }

  /// Adds pool rows [first, last).
  void add(int64_t first, int64_t last) {
    std::vector<int64_t> rows(size_t(last - first));
    std::iota(rows.begin(), rows.end(), first);
    add_rows(rows);
  }
  void add_rows(const std::vector<int64_t>& rows) {
    Matrix<float> X(int64_t(rows.size()), pool_.cols());
    std::vector<int64_t> ids;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::copy_n(&pool_(rows[i], 0), pool_.cols(), &X(int64_t(i), 0));
      ids.push_back(ids_[size_t(rows[i])]);
      live_[size_t(rows[i])] = true;
    }
    tree->add(ctx_, X.view(), ids);
    flat->add(ctx_, X.view(), ids);
  }
  /// Removes `count` live rows drawn with rng; returns their pool rows.
  std::vector<int64_t> remove_some(int64_t count, std::mt19937_64& rng) {
    std::vector<int64_t> held, rows;
    for (int64_t r = 0; r < pool_.rows(); ++r)
      if (live_[size_t(r)]) held.push_back(r);
    std::shuffle(held.begin(), held.end(), rng);
    held.resize(std::min(held.size(), size_t(count)));
    std::vector<int64_t> ids;
    for (int64_t r : held) ids.push_back(ids_[size_t(r)]), live_[size_t(r)] = false;
    EXPECT_EQ(tree->remove(ids), int64_t(ids.size()));
    EXPECT_EQ(flat->remove(ids), int64_t(ids.size()));
    return held;
  }
  std::vector<int64_t> live_ids() const {
    std::vector<int64_t> out;
    for (int64_t r = 0; r < pool_.rows(); ++r)
      if (live_[size_t(r)]) out.push_back(ids_[size_t(r)]);
    std::sort(out.begin(), out.end());
    return out;
  }

  void expect_same_search(const Matrix<float>& Q, const std::string& label,
                          const SearchParams& sp = SearchParams{}) const {
    ASSERT_EQ(tree->size(), flat->size()) << label;
    for (int64_t k : {int64_t(1), int64_t(10), int64_t(100)})
      expect_same(tree->search(ctx_, Q.view(), k, sp), flat->search(ctx_, Q.view(), k, sp),
                  label + " k=" + std::to_string(k));
  }

  std::unique_ptr<Index> tree, flat;

 private:
  Context ctx_;
  const Matrix<float>& pool_;
  std::vector<int64_t> ids_;
  std::vector<bool> live_;
};

class TreeIndex : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, TreeIndex, ::testing::ValuesIn(kBackends), BackendName{});

// 12,000 rows (a tree at once), then batches into the tail until it passes 1,024 rows (rebuilt),
// removals in both parts until a quarter of the rows is gone (rebuilt), rows given back, single
// writes; every few writes the searches must equal flat's.
TEST_P(TreeIndex, HistoryEqualsFlat) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  int variant = 0;
  for (Shape shape : {Shape::uniform, Shape::clustered, Shape::duplicates})
    for (int64_t d : {2, 3, 8}) {
      const Metric metric = variant++ % 2 ? Metric::sqeuclidean : Metric::l2;
      const std::string what = std::string(name(shape)) + " d=" + std::to_string(d) + " " + to_string(metric) +
                               " seed " + std::to_string(seed);
      const Matrix<float> pool = points(shape, 24000, d, seed + 1);
      // Queries from the same distribution (duplicates: on the grid, so they tie with rows).
      const Matrix<float> Q = points(shape, 40, d, seed + 2);
      std::mt19937_64 rng(seed + 3);
      Twins t(context(), pool, metric, seed + 4);
      t.add(0, 12000);
      t.expect_same_search(Q, what + " built");
      for (int b = 0; b < 6; ++b) {  // 6 x 900 rows: the tail passes its limit every second batch
        t.add(12000 + 900 * b, 12000 + 900 * (b + 1));
        t.remove_some(150, rng);
        if (b % 2 == 1) t.expect_same_search(Q, what + " tail batch " + std::to_string(b));
      }
      std::vector<int64_t> gone;
      for (int b = 0; b < 6; ++b) {  // 6 x 700 of ~16,500 rows: past a quarter at the fifth
        const std::vector<int64_t> some = t.remove_some(700, rng);
        gone.insert(gone.end(), some.begin(), some.end());
        if (b % 2 == 0) t.expect_same_search(Q, what + " removals " + std::to_string(b));
      }
      gone.resize(gone.size() / 3);
      t.add_rows(gone);
      t.add(17400, 18000);
      t.expect_same_search(Q, what + " given back");
      for (int64_t i = 0; i < 40; ++i) {  // single writes: one row in, one row out
        t.add(18000 + i, 18000 + i + 1);
        t.remove_some(1, rng);
      }
      t.expect_same_search(Q, what + " single writes");
    }
}

TEST_P(TreeIndex, AllowListsEqualFlat) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  for (Shape shape : {Shape::uniform, Shape::duplicates}) {
    const Matrix<float> pool = points(shape, 16000, 3, seed + 11), Q = points(shape, 30, 3, seed + 12);
    std::mt19937_64 rng(seed + 13);
    Twins t(context(), pool, Metric::l2, seed + 14);
    t.add(0, 10000);
    t.add(10000, 13000);  // a tail of 3,000
    t.remove_some(1500, rng);
    const std::vector<int64_t> live = t.live_ids();
    for (double fraction : {0.0, 0.0005, 0.01, 0.1, 0.5, 1.0}) {
      std::vector<int64_t> allowed;
      for (int64_t id : live)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < fraction) allowed.push_back(id);
      allowed.insert(allowed.begin(), -3);  // ids not stored are ignored
      allowed.push_back(2000000);
      SearchParams sp;
      sp.allowed = ArrayView<const int64_t>{allowed.data(), static_cast<int64_t>(allowed.size())};
      const std::string label = std::string(name(shape)) + " allowed " + std::to_string(fraction);
      for (const char* plan : {"", "scan", "gather"}) {
        std::unique_ptr<ScopedEnv> forced;
        if (*plan) forced = std::make_unique<ScopedEnv>("SIMKIT_FILTER_PLAN", plan);
        SearchStats stats;
        sp.stats = &stats;
        const IndexSearchResult got = t.tree->search(context(), Q.view(), 10, sp);
        sp.stats = nullptr;
        ScopedEnv gather("SIMKIT_FILTER_PLAN", "gather");  // flat's own exact gather is the judge
        expect_same(got, t.flat->search(context(), Q.view(), 10, sp), label + " plan '" + plan + "'");
        if (std::string(plan) == "gather") {
          EXPECT_EQ(stats.gathered, 1) << label;
        }
      }
    }
  }
}

TEST_P(TreeIndex, KBeyondSizeIsPadded) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> pool = points(Shape::uniform, 6000, 3, 21), Q = points(Shape::uniform, 5, 3, 22);
  std::mt19937_64 rng(23);
  Twins t(context(), pool, Metric::l2, 24);
  t.add(0, 5000);  // a tree
  t.remove_some(700, rng);
  t.add(5000, 5200);
  const int64_t n = t.tree->size(), k = n + 7;
  SearchStats stats;
  SearchParams sp;
  sp.stats = &stats;
  const IndexSearchResult r = t.tree->search(context(), Q.view(), k, sp);
  expect_same(r, t.flat->search(context(), Q.view(), k), "k beyond the size");
  EXPECT_EQ(stats.short_rows, Q.rows());
  for (int64_t q = 0; q < Q.rows(); ++q)
    for (int64_t p = n; p < k; ++p) {
      EXPECT_EQ(r.ids(q, p), -1);
      EXPECT_EQ(r.values(q, p), INFINITY);
    }
}

TEST_P(TreeIndex, SaveLoadRoundTrip) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const uint64_t seed = test_seed();
  const Matrix<float> pool = points(Shape::clustered, 9000, 5, seed + 31),
                      Q = points(Shape::clustered, 25, 5, seed + 32);
  std::mt19937_64 rng(seed + 33);
  Twins t(context(), pool, Metric::sqeuclidean, seed + 34);
  t.add(0, 6000);
  t.add(6000, 7000);
  t.remove_some(800, rng);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("simkit-tree-index-" + std::to_string(::getpid()) + ".simkit"))
          .string();
  t.tree->save(path);
  const std::unique_ptr<Index> loaded = load_index(path);
  std::filesystem::remove(path);
  EXPECT_EQ(loaded->type(), "tree");
  EXPECT_EQ(loaded->description(), "tree");
  EXPECT_EQ(loaded->metric(), Metric::sqeuclidean);
  EXPECT_EQ(loaded->dim(), 5);
  EXPECT_EQ(loaded->size(), t.tree->size());
  EXPECT_EQ(loaded->next_id(), t.tree->next_id());
  for (int64_t k : {int64_t(1), int64_t(10), int64_t(100)}) {
    const IndexSearchResult want = t.flat->search(context(), Q.view(), k);
    expect_same(loaded->search(context(), Q.view(), k), want, "loaded k=" + std::to_string(k));
    expect_same(t.tree->search(context(), Q.view(), k), want, "saved k=" + std::to_string(k));
  }
  // The loaded copy takes writes like the original.
  const Matrix<float> more = points(Shape::clustered, 300, 5, seed + 35);
  loaded->add(context(), more.view());
  t.flat->add(context(), more.view());
  expect_same(loaded->search(context(), Q.view(), 10), t.flat->search(context(), Q.view(), 10), "add after load");
}

TEST(TreeIndexRefusals, MetricsAndDimensionsItDoesNotServe) {
  for (Metric metric : {Metric::cosine, Metric::dot, Metric::pearson, Metric::l1}) {
    expect_error([&] { make_index("tree", 3, metric); }, ErrorCode::invalid_argument, "l2 and sqeuclidean");
    expect_error([&] { make_index("tree", 3, metric); }, ErrorCode::invalid_argument, "'flat'");
  }
  expect_error([] { make_index("tree", 9, Metric::l2); }, ErrorCode::invalid_argument, "d <= 8");
  expect_error([] { make_index("tree", 9, Metric::l2); }, ErrorCode::invalid_argument, "'flat'");
  expect_error([] { make_index("tree", 0, Metric::l2); }, ErrorCode::invalid_argument, "dimension");
  expect_error([] { make_index("tree,leaf=16", 3, Metric::l2); }, ErrorCode::invalid_argument, "no parameters");
  for (int64_t d = 1; d <= 8; ++d) EXPECT_EQ(make_index("tree", d, Metric::sqeuclidean)->type(), "tree");

  // A file whose header claims a tree the factory would refuse is refused too.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("simkit-tree-lying-" + std::to_string(::getpid()) + ".simkit"))
          .string();
  const std::vector<int64_t> ids = {0, 1};
  const std::vector<float> vectors(2 * 9, 0.25f);
  detail::IndexFileWriter w;
  w.add_text("type", "tree");
  w.add_text("metric", "l2");
  w.add_u64("dim", 9);
  w.add_u64("size", 2);
  w.add_u64("next_id", 2);
  w.add("ids", ids.data(), ids.size() * sizeof(int64_t));
  w.add("vectors", vectors.data(), vectors.size() * sizeof(float));
  w.write(path);
  expect_error([&] { load_index(path); }, ErrorCode::io, "d <= 8");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace simkit::test
