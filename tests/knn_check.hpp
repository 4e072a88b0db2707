#pragma once
// Checking a k-NN answer against the float64 truth, on either backend (test_knn.cpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/knn.hpp>

#include "reference.hpp"

namespace simkit::test {

enum class Ties {
  near_ok,  // values within `near` of each other may come out in either order
  exact,    // additionally, identical rows (equal by construction) must come out in id order
};

struct KnnCheck {
  int64_t positions = 0, ids_checked = 0;
};

/// Checks r against the float64 truth for every query:
///  - ids are valid and distinct, values ordered best first;
///  - each value is within tolerance() of the reference value of its own id;
///  - the p-th returned row is as good as the true p-th best (within tolerance());
///  - where the true p-th value stands apart from its neighbours by more than
///    near_fraction x tolerance() -- or, with Ties::exact, its only equals are identical rows --
///    the id is the reference's (the lower id first among equals).
/// near_fraction is how far two computed values may each be off before their order may
/// legitimately differ from float64's: a few times the backend's measured error.
inline KnnCheck expect_knn_matches_reference(const Matrix<float>& Q, const Matrix<float>& X, int64_t k, Metric metric,
                                             const KnnResult& r, Ties ties, double near_fraction,
                                             const std::string& label) {
  KnnCheck st;
  const int64_t n = X.rows(), d = X.cols();
  const bool larger = larger_is_better(metric);
  EXPECT_EQ(r.ids.rows(), Q.rows()) << label;
  EXPECT_EQ(r.ids.cols(), k) << label;
  std::vector<double> ref(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  int failures = 0;
  auto fail = [&](int64_t i, int64_t p, const std::string& what) {
    if (failures++ < 8) ADD_FAILURE() << label << ": query " << i << ", position " << p << ": " << what;
  };
  auto same_row = [&](int64_t a, int64_t b) {
    return std::memcmp(&X(a, 0), &X(b, 0), static_cast<size_t>(d) * sizeof(float)) == 0;
  };
  for (int64_t i = 0; i < Q.rows() && failures < 8; ++i) {
    for (int64_t j = 0; j < n; ++j) ref[size_t(j)] = reference_metric(&Q(i, 0), &X(j, 0), d, metric);
    std::iota(order.begin(), order.end(), int64_t{0});
    auto better = [&](int64_t a, int64_t b) {
      const double va = ref[size_t(a)], vb = ref[size_t(b)];
      if (va != vb) return larger ? va > vb : va < vb;
      return a < b;
    };
    int64_t ranked = std::min(n, k + 1);
    std::partial_sort(order.begin(), order.begin() + ranked, order.end(), better);
    // A near-tie of the last positions may rank beyond k + 1 (behind a group of identical rows,
    // say): rank on while the next value is within reach, so that it excuses them.
    while (ranked < n) {
      const auto next = std::min_element(order.begin() + ranked, order.end(), better);
      const double last = ref[size_t(order[size_t(ranked - 1)])];
      if (!(std::abs(ref[size_t(*next)] - last) <= near_fraction * tolerance(metric, last))) break;
      std::iter_swap(order.begin() + ranked, next);
      ++ranked;
    }
    std::set<int64_t> seen;
    for (int64_t p = 0; p < k; ++p) {
      ++st.positions;
      const int64_t id = r.ids(i, p);
      const double v = r.values(i, p);
      if (id < 0 || id >= n) {
        fail(i, p, "id " + std::to_string(id) + " out of range");
        continue;
      }
      if (!seen.insert(id).second) fail(i, p, "id " + std::to_string(id) + " repeated");
      if (p > 0 && (larger ? v > r.values(i, p - 1) : v < r.values(i, p - 1)))
        fail(i, p, "values not best first: " + std::to_string(r.values(i, p - 1)) + " then " + std::to_string(v));
      const double own = ref[size_t(id)];
      if (!(std::abs(v - own) <= tolerance(metric, own)))
        fail(i, p,
             "value " + std::to_string(v) + " vs reference " + std::to_string(own) + " for id " + std::to_string(id));
      const int64_t want = order[size_t(p)];
      const double truth = ref[size_t(want)];
      if (!(std::abs(own - truth) <= tolerance(metric, truth)))
        fail(i, p,
             "id " + std::to_string(id) + " (reference " + std::to_string(own) + ") is not the " + std::to_string(p) +
                 "-th best (" + std::to_string(truth) + ", id " + std::to_string(want) + ")");
      // Distinct vectors whose float64 values happen to coincide may round apart in float32,
      // so only identical rows count as exact ties.
      const double near = near_fraction * tolerance(metric, truth);
      bool decidable = true;
      for (int64_t step : {int64_t{-1}, int64_t{1}})
        for (int64_t q = p + step; decidable && q >= 0 && q < ranked; q += step) {
          const double gap = std::abs(ref[size_t(order[size_t(q)])] - truth);
          if (gap > near) break;
          if (!(gap == 0 && ties == Ties::exact && same_row(order[size_t(q)], want))) decidable = false;
        }
      if (decidable) {
        ++st.ids_checked;
        if (id != want)
          fail(i, p,
               "id " + std::to_string(id) + ", reference id " + std::to_string(want) + " (value " +
                   std::to_string(truth) + ")");
      }
    }
  }
  return st;
}

/// Bitwise equality of two answers (ids and values).
inline void expect_same_bits(const KnnResult& a, const KnnResult& b, const std::string& label) {
  ASSERT_EQ(a.ids.size(), b.ids.size()) << label;
  EXPECT_EQ(std::memcmp(a.ids.data(), b.ids.data(), size_t(a.ids.size()) * sizeof(int64_t)), 0) << label << ": ids";
  EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), size_t(a.values.size()) * sizeof(float)), 0)
      << label << ": values";
}

}  // namespace simkit::test
