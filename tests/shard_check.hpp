#pragma once
// What the multi-GPU tests (test_shards.cpp over CPU shard contexts, test_gpu_shards.cpp over
// GPUs) check: a split search gives the one-device answer, bit for bit, on awkward inputs.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "reference.hpp"

namespace simkit::test {

inline void expect_same_bits(const Matrix<float>& va, const Matrix<int64_t>& ia, const Matrix<float>& vb,
                             const Matrix<int64_t>& ib, const std::string& what) {
  ASSERT_EQ(va.rows(), vb.rows()) << what;
  ASSERT_EQ(va.cols(), vb.cols()) << what;
  for (int64_t i = 0; i < va.rows(); ++i)
    for (int64_t j = 0; j < va.cols(); ++j) {
      ASSERT_EQ(ia(i, j), ib(i, j)) << what << ": query " << i << ", rank " << j;
      ASSERT_EQ(std::memcmp(&va(i, j), &vb(i, j), sizeof(float)), 0)
          << what << ": query " << i << ", rank " << j << ": " << va(i, j) << " vs " << vb(i, j);
    }
}

/// Rows with exact ties: whole numbers in [0, 3) and every fifth row repeated.
inline Matrix<float> tied_rows(int64_t rows, int64_t d, uint64_t seed) {
  Matrix<float> X = integer_matrix(rows, d, 3, seed);
  for (int64_t i = 5; i < rows; i += 5) std::memcpy(X.data() + i * d, X.data() + (i - 5) * d, size_t(d) * 4);
  return X;
}

/// The split answer b against the one-device answer a, bit for bit. pearson's candidates are
/// not certified (context.hpp): where ties meet the float32 preselection one device may miss a
/// row of the exact answer that a shard keeps, so for pearson the guarantee -- the one-device
/// answer wherever that one is exact -- is checked on the rows where a equals the float64
/// reference over X (row r holding id ids[r], or r when ids is null).
inline void expect_split_answer(const Matrix<float>& va, const Matrix<int64_t>& ia, const Matrix<float>& vb,
                                const Matrix<int64_t>& ib, const Matrix<float>& Q, const Matrix<float>& X,
                                const std::vector<int64_t>* ids, Metric metric, const std::string& what) {
  if (metric != Metric::pearson) return expect_same_bits(va, ia, vb, ib, what);
  const int64_t k = ia.cols();
  const ReferenceKnn exact = reference_knn(Q, X, std::min(k, X.rows()), metric);
  for (int64_t i = 0; i < Q.rows(); ++i) {
    bool is_exact = true;
    for (size_t j = 0; j < exact.ids[size_t(i)].size(); ++j) {
      const int64_t r = exact.ids[size_t(i)][j];
      is_exact = is_exact && ia(i, int64_t(j)) == (ids ? (*ids)[size_t(r)] : r);
    }
    if (!is_exact) continue;
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(ia(i, j), ib(i, j)) << what << ": query " << i << ", rank " << j;
      ASSERT_EQ(std::memcmp(&va(i, j), &vb(i, j), sizeof(float)), 0) << what << ": query " << i << ", rank " << j;
    }
  }
}

/// knn on `split` (which names several GPUs or is split by ScopedShardContexts) against `one`.
inline void expect_split_knn(const Context& one, const Context& split, const Matrix<float>& Q, const Matrix<float>& X,
                             int64_t k, Metric metric, const std::string& what) {
  const KnnResult a = knn(one, Q.view(), X.view(), k, metric);
  const KnnResult b = knn(split, Q.view(), X.view(), k, metric);
  expect_split_answer(a.values, a.ids, b.values, b.ids, Q, X, nullptr, metric,
                      what + " " + to_string(metric) + " k=" + std::to_string(k));
}

/// The inverted files' split over GPUs (ivf_core.hpp's gpu_split) forced to `mode`, "rows" or
/// "queries", while one lives (SIMKIT_GPU_SPLIT).
struct ForcedSplit {
  explicit ForcedSplit(const char* mode) { setenv("SIMKIT_GPU_SPLIT", mode, 1); }
  ~ForcedSplit() { unsetenv("SIMKIT_GPU_SPLIT"); }
  ForcedSplit(const ForcedSplit&) = delete;
  ForcedSplit& operator=(const ForcedSplit&) = delete;
};

/// An index of `description` built once, searched on `one` and on `split` for every k and set of
/// parameters, before and after writes that leave its rows out of id order (removals, then
/// smaller ids added).
inline void expect_split_index(const Context& one, const Context& split, const std::string& description, Metric metric,
                               const Matrix<float>& X, const Matrix<float>& Q, const std::vector<int64_t>& ks,
                               const std::vector<const SearchParams*>& params) {
  const int64_t d = X.cols();
  auto index = make_index(description, d, metric);
  index->train(one, X.view());
  std::vector<int64_t> ids(size_t(X.rows()));
  for (int64_t i = 0; i < X.rows(); ++i) ids[size_t(i)] = 3 * i + 7;
  index->add(one, X.view(), ArrayView<const int64_t>(ids.data(), int64_t(ids.size())));
  // What the index holds, in id order (reference_knn breaks ties by the lower row).
  std::map<int64_t, const float*> held;
  for (int64_t i = 0; i < X.rows(); ++i) held[ids[size_t(i)]] = X.data() + i * d;
  const auto check = [&](const std::string& when) {
    Matrix<float> rows(int64_t(held.size()), d);
    std::vector<int64_t> row_ids;
    for (const auto& [id, row] : held) {
      std::memcpy(rows.data() + int64_t(row_ids.size()) * d, row, size_t(d) * sizeof(float));
      row_ids.push_back(id);
    }
    for (int64_t k : ks)
      for (size_t p = 0; p < params.size(); ++p) {
        const IndexSearchResult a = index->search(one, Q.view(), k, *params[p]);
        const IndexSearchResult b = index->search(split, Q.view(), k, *params[p]);
        expect_split_answer(
            a.values, a.ids, b.values, b.ids, Q, rows, &row_ids, metric,
            description + " " + to_string(metric) + " k=" + std::to_string(k) + " params #" + std::to_string(p) + when);
      }
  };
  check("");
  std::vector<int64_t> gone;
  for (int64_t i = 0; i < X.rows(); i += 4) gone.push_back(ids[size_t(i)]);
  index->remove(ArrayView<const int64_t>(gone.data(), int64_t(gone.size())));
  const Matrix<float> more = random_matrix(X.rows() / 3 + 1, d, 99);
  std::vector<int64_t> small(size_t(more.rows()));
  for (int64_t i = 0; i < more.rows(); ++i) small[size_t(i)] = 3 * i + 8;  // between the first ids
  index->add(one, more.view(), ArrayView<const int64_t>(small.data(), int64_t(small.size())));
  for (int64_t id : gone) held.erase(id);
  for (int64_t i = 0; i < more.rows(); ++i) held[small[size_t(i)]] = more.data() + i * d;
  check(" after writes");
}

}  // namespace simkit::test
