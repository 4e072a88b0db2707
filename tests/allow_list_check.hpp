#pragma once
// Allow-lists for index searches (SearchParams::allowed) and the check of a filtered answer:
// the float64 reference and simkit::knn over the allowed rows alone, then padding
// (test_index.cpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "index_check.hpp"
#include "reference.hpp"

namespace simkit::test {

/// A random `fraction` of the stored ids (at least `at_least` of them), plus `foreign` ids that
/// are not stored (a negative one among them), sorted: an allow-list.
inline std::vector<int64_t> pick_allowed(const std::vector<int64_t>& stored, double fraction, size_t at_least,
                                         int foreign, uint64_t seed) {
  std::vector<int64_t> pool = stored;
  std::shuffle(pool.begin(), pool.end(), std::mt19937_64(seed));
  pool.resize(std::min(pool.size(), std::max(at_least, size_t(fraction * double(stored.size())))));
  const std::set<int64_t> held(stored.begin(), stored.end());
  for (int64_t id = -7; foreign > 0; id = id < 0 ? 0 : id + 1)
    if (held.count(id) == 0) pool.push_back(id), --foreign;
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  return pool;
}

/// The rows of X whose ids (row r holds ids[r]) are allowed, in id order: what a filtered
/// search ranks.
struct AllowedSubset {
  Matrix<float> X;
  std::vector<int64_t> ids;
};
inline AllowedSubset allowed_subset(const Matrix<float>& X, const std::vector<int64_t>& ids,
                                    const std::vector<int64_t>& allowed) {
  std::vector<std::pair<int64_t, int64_t>> hits;  // (id, row)
  for (int64_t r = 0; r < X.rows(); ++r)
    if (std::binary_search(allowed.begin(), allowed.end(), ids[size_t(r)])) hits.emplace_back(ids[size_t(r)], r);
  std::sort(hits.begin(), hits.end());
  AllowedSubset s{Matrix<float>(int64_t(hits.size()), X.cols()), {}};
  for (size_t i = 0; i < hits.size(); ++i) {
    std::copy_n(&X(hits[i].second, 0), X.cols(), &s.X(int64_t(i), 0));
    s.ids.push_back(hits[i].first);
  }
  return s;
}

/// r against the float64 reference over the subset alone (ids exactly, values within the
/// promised tolerance) and against knn over it (bit for bit), then padding past its size.
inline void expect_allowed_result(const Context& ctx, const IndexSearchResult& r, const Matrix<float>& Q,
                                  const AllowedSubset& s, Metric metric, const std::string& label) {
  const int64_t k = r.ids.cols(), kept = std::min(k, s.X.rows());
  if (kept > 0) {
    const ReferenceKnn ref = reference_knn(Q, s.X, kept, metric);
    const KnnResult same = knn(ctx, Q.view(), s.X.view(), kept, metric);
    for (int64_t q = 0; q < Q.rows(); ++q)
      for (int64_t p = 0; p < kept; ++p) {
        const double want = ref.values[size_t(q)][size_t(p)];
        // l1 ranks its float32 sums (knn.hpp): where two float64 values lie within float32
        // rounding of each other the order may differ from float64's, and knn (below) is the
        // judge of the ids.
        const auto& row = ref.values[size_t(q)];
        const bool near_tie =
            metric == Metric::l1 &&
            ((p > 0 && std::abs(row[size_t(p - 1)] - want) <= tolerance(metric, want)) ||
             (p + 1 < int64_t(row.size()) && std::abs(row[size_t(p + 1)] - want) <= tolerance(metric, want)));
        if (!near_tie) {
          ASSERT_EQ(r.ids(q, p), s.ids[size_t(ref.ids[size_t(q)][size_t(p)])])
              << label << ": query " << q << " slot " << p;
        }
        ASSERT_LE(std::abs(r.values(q, p) - want), tolerance(metric, want)) << label << ": query " << q;
        ASSERT_EQ(r.ids(q, p), s.ids[size_t(same.ids(q, p))]) << label << ": query " << q << " slot " << p;
        ASSERT_EQ(std::memcmp(&r.values(q, p), &same.values(q, p), sizeof(float)), 0)
            << label << ": query " << q << " slot " << p;
      }
  }
  for (int64_t q = 0; q < Q.rows(); ++q)
    for (int64_t p = kept; p < k; ++p) {
      ASSERT_EQ(r.ids(q, p), -1) << label << ": query " << q << " slot " << p;
      ASSERT_EQ(r.values(q, p), larger_is_better(metric) ? -INFINITY : INFINITY) << label;
    }
}

/// An allow-list search in each kind's exhaustive mode (every list probed, every candidate
/// re-ranked, every bucket probed): exact whichever plan the index picks -- gathering the
/// allowed rows, or testing the list inside its scan (index.hpp).
inline std::unique_ptr<SearchParams> allowing(const Index& index, const std::vector<int64_t>& allowed) {
  std::unique_ptr<SearchParams> sp = all_lists(index);
  sp->allowed = allowed;
  return sp;
}

/// The same list with the index's default knobs: exact where the planner gathers (a selective
/// list), approximate like the unfiltered search where it scans.
inline SearchParams allowing_defaults(const std::vector<int64_t>& allowed) {
  SearchParams sp;
  sp.allowed = allowed;
  return sp;
}

}  // namespace simkit::test
