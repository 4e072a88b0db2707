#pragma once
// What the index suites (test_index.cpp, test_ivf_pq.cpp, test_lsh.cpp) compare results with:
// clustered data, recall against an exact k-NN, and result equality bit for bit.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "reference.hpp"

namespace simkit::test {

/// Clustered rows: `clusters` centres in [-1, 1)^d and Gaussian spread around them.
inline Matrix<float> clustered(int64_t n, int64_t d, int64_t clusters, double spread, uint64_t seed) {
  const Matrix<float> centres = random_matrix(clusters, d, seed);
  const Matrix<float> noise = random_matrix(n, d, seed + 1, Distribution::gaussian);
  std::mt19937_64 rng(seed + 2);
  Matrix<float> X(n, d);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(rng() % static_cast<uint64_t>(clusters));
    for (int64_t j = 0; j < d; ++j) X(i, j) = float(centres(c, j) + spread * noise(i, j));
  }
  return X;
}

/// The fraction of the truth's ids (per query, any order) found among the returned ones.
inline double recall(const IndexSearchResult& r, const KnnResult& truth) {
  int64_t hit = 0;
  for (int64_t q = 0; q < truth.ids.rows(); ++q) {
    const std::set<int64_t> want(&truth.ids(q, 0), &truth.ids(q, 0) + truth.ids.cols());
    for (int64_t p = 0; p < r.ids.cols(); ++p) hit += static_cast<int64_t>(want.count(r.ids(q, p)));
  }
  return double(hit) / double(truth.ids.size());
}

/// Same ids and the same value bits; with `rel` > 0 finite values may differ by that much
/// relative (l1 across backends: each matches its own k-NN, whose float32 sums fold differently).
inline void expect_same(const IndexSearchResult& a, const IndexSearchResult& b, const std::string& label,
                        double rel = 0) {
  ASSERT_EQ(a.ids.size(), b.ids.size()) << label;
  for (int64_t e = 0; e < a.ids.size(); ++e) {
    const int64_t q = e / a.ids.cols(), slot = e % a.ids.cols();
    ASSERT_EQ(a.ids.data()[e], b.ids.data()[e]) << label << ": query " << q << " slot " << slot;
    if (rel > 0 && std::isfinite(b.values.data()[e]))
      ASSERT_NEAR(a.values.data()[e], b.values.data()[e], rel * std::fabs(b.values.data()[e])) << label;
    else
      ASSERT_EQ(std::memcmp(a.values.data() + e, b.values.data() + e, sizeof(float)), 0)
          << label << ": query " << q << " slot " << slot << ": " << a.values.data()[e] << " vs " << b.values.data()[e];
  }
}

/// `index`'s own search parameters with those of `knobs` its type reads (the others dropped),
/// so that one contract test can run every type.
inline std::unique_ptr<SearchParams> params_for(const Index& index, SearchKnobs knobs) {
  const std::string type = index.type();
  if (type != "ivf_flat" && type != "ivf_pq") knobs.nprobe = 0;
  if (type != "ivf_pq") knobs.refine = 0;
  if (type != "lsh") knobs.probes = 0;
  if (type != "hnsw") knobs.ef = 0;
  return make_search_params(index, knobs);
}

/// Each type's exhaustive search: every list probed (clamped to nlist), every ivf_pq candidate
/// re-ranked (more than the lists hold), every lsh bucket of every table, an hnsw beam of every node.
inline std::unique_ptr<SearchParams> all_lists(const Index& index) {
  return params_for(index, SearchKnobs{1 << 20, 1 << 20, int64_t(1) << 30, int64_t(1) << 30});
}

}  // namespace simkit::test
