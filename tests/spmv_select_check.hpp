#pragma once
// CSR SpMV against a float64 reference and select_k against a stable sort, for either backend,
// with the matrix shapes that break naive SpMV: one row holding most non-zeros, every row
// empty, empty rows between long ones, and a power law.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <simkit/primitives.hpp>

#include "primitives_check.hpp"

namespace simkit::test {

template <class V, class I>
struct HostCsr {
  int64_t rows = 0, cols = 0;
  std::vector<I> offsets, indices;
  std::vector<V> values;
};

/// Row lengths of the named shape: "random" (geometric, mean 8), "powerlaw" (Pareto, with one
/// row of `big` entries), "huge" (one row of `big` entries, the rest empty), "empty" (no
/// entries at all), "gaps" (runs of empty rows between rows of 0..3000 entries).
inline std::vector<int64_t> row_lengths(const std::string& shape, int64_t rows, int64_t big, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> len(size_t(rows), 0);
  if (shape == "random") {
    std::geometric_distribution<int64_t> g(1.0 / 8);
    for (auto& l : len) l = g(rng);
  } else if (shape == "powerlaw") {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& l : len) l = std::min<int64_t>(100000, int64_t(2.0 / std::pow(1.0 - u(rng), 1.0 / 1.2)));
    if (rows > 0) len[size_t(rows / 3)] = big;
  } else if (shape == "huge") {
    if (rows > 0) len[size_t(rows / 2)] = big;
  } else if (shape == "gaps") {
    std::uniform_int_distribution<int64_t> u(0, 3000);
    for (int64_t r = 0; r < rows; r += 17) len[size_t(r)] = u(rng);
  }
  return len;
}

template <class V, class I>
HostCsr<V, I> make_csr(const std::string& shape, int64_t rows, int64_t cols, int64_t big, uint64_t seed) {
  HostCsr<V, I> A;
  A.rows = rows, A.cols = cols;
  const std::vector<int64_t> len = row_lengths(shape, rows, big, seed);
  A.offsets.assign(1, 0);
  for (int64_t l : len) A.offsets.push_back(I(int64_t(A.offsets.back()) + l));
  const int64_t nnz = int64_t(A.offsets.back());
  A.indices = random_ints<I>(nnz, 0, cols - 1, seed + 1);
  A.values = random_reals<V>(nnz, -1.0, 1.0, seed + 2);
  return A;
}

template <class V, class I>
void expect_spmv(const Context& ctx, Where where, const HostCsr<V, I>& A, const std::string& label, uint64_t seed) {
  const std::vector<V> x = random_reals<V>(A.cols, -1.0, 1.0, seed);
  Staged<I> off(ctx, A.offsets, where), idx(ctx, A.indices, where);
  Staged<V> val(ctx, A.values, where), xs(ctx, x, where);
  Staged<V> y(ctx, std::vector<V>(size_t(A.rows), V(-77)), where);
  CsrView<V, I> view{A.rows, A.cols, off.cview(), idx.cview(), val.cview()};
  spmv_csr(ctx, view, xs.cview(), y.view());
  const std::vector<V>& got = y.fetch();
  for (int64_t r = 0; r < A.rows; ++r) {
    double ref = 0, mag = 0;
    for (int64_t j = int64_t(A.offsets[size_t(r)]); j < int64_t(A.offsets[size_t(r + 1)]); ++j) {
      const double p = double(A.values[size_t(j)]) * double(x[size_t(A.indices[size_t(j)])]);
      ref += p, mag += std::fabs(p);
    }
    if (!(std::fabs(double(got[size_t(r)]) - ref) <= 1e-6 * mag)) {
      ADD_FAILURE() << label << ": row " << r << " (" << A.offsets[size_t(r + 1)] - A.offsets[size_t(r)]
                    << " entries) gives " << got[size_t(r)] << ", float64 " << ref << " (sum |a x| = " << mag << ")";
      return;
    }
  }
}

/// Floats with ties (values repeat), NaNs, and +-inf.
inline std::vector<float> select_input(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v = random_ints<float>(rows * cols, -500, 500, seed);
  std::mt19937_64 rng(seed + 3);
  for (auto& x : v) {
    const uint64_t r = rng() % 64;
    if (r == 0) x = std::numeric_limits<float>::quiet_NaN();
    if (r == 1) x = std::numeric_limits<float>::infinity();
    if (r == 2) x = -std::numeric_limits<float>::infinity();
    if (r >= 3 && r < 32) x = x * 1e-3f + float(rng() % 1000) * 1e-7f;
  }
  return v;
}

inline void expect_select(const Context& ctx, Where where, int64_t rows, int64_t cols, int64_t k, Order order,
                          uint64_t seed, std::vector<float> in = {}) {
  const std::string label = "select_k " + std::to_string(rows) + "x" + std::to_string(cols) +
                            " k=" + std::to_string(k) + " " + order_name(order);
  if (in.empty()) in = select_input(rows, cols, seed);
  std::vector<float> want_v(size_t(rows * k), std::numeric_limits<float>::quiet_NaN());
  std::vector<int64_t> want_i(size_t(rows * k), -1);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in.data() + r * cols;
    std::vector<int64_t> idx;
    for (int64_t c = 0; c < cols; ++c)
      if (!std::isnan(row[c])) idx.push_back(c);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return order == Order::ascending ? row[a] < row[b] : row[a] > row[b];
    });
    for (int64_t c = 0; c < k && c < int64_t(idx.size()); ++c)
      want_v[size_t(r * k + c)] = row[idx[size_t(c)]], want_i[size_t(r * k + c)] = idx[size_t(c)];
  }
  Staged<float> src(ctx, in, where), vals(ctx, std::vector<float>(size_t(rows * k)), where);
  Staged<int64_t> ids(ctx, std::vector<int64_t>(size_t(rows * k)), where);
  select_k(ctx, MatrixView<const float>(src.view().data, rows, cols, src.view().where), k, order,
           MatrixView<float>(vals.view().data, rows, k, vals.view().where),
           MatrixView<int64_t>(ids.view().data, rows, k, ids.view().where));
  expect_equal_arrays(ids.fetch(), want_i, label + " (ids)");
  expect_equal_arrays(vals.fetch(), want_v, label + " (values)");
}

}  // namespace simkit::test
