#include "index/filtered_search.hpp"

#include <algorithm>
#include <utility>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "index/index_support.hpp"

namespace simkit::detail {

void check_allowed(ArrayView<const int64_t> allowed) {
  SIMKIT_EXPECTS(allowed.where == Memory::host, invalid_argument, "search: the allowed ids must be in host memory");
  SIMKIT_EXPECTS(allowed.size >= 0 && (allowed.data != nullptr || allowed.size == 0), invalid_argument,
                 "search: the allowed ids have no data");
  for (int64_t i = 1; i < allowed.size; ++i)
    SIMKIT_EXPECTS(allowed[i - 1] < allowed[i], invalid_argument,
                   "search: the allowed ids must be sorted ascending without repeats; position ", i, " holds ",
                   allowed[i], " after ", allowed[i - 1]);
}

AllowedRows allowed_rows_sorted(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed) {
  AllowedRows out;
  size_t r = 0;
  int64_t a = 0;
  while (r < stored.size() && a < allowed.size) {
    if (stored[r] < allowed[a]) {
      ++r;
    } else if (allowed[a] < stored[r]) {
      ++a;
    } else {
      out.ids.push_back(stored[r]);
      out.rows.push_back(static_cast<int64_t>(r));
      ++r, ++a;
    }
  }
  return out;
}

AllowedRows allowed_rows_any(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed) {
  std::vector<std::pair<int64_t, int64_t>> found;  // (id, row)
  const int64_t* begin = allowed.data;
  const int64_t* end = allowed.data + allowed.size;
  for (size_t r = 0; r < stored.size(); ++r)
    if (std::binary_search(begin, end, stored[r])) found.emplace_back(stored[r], static_cast<int64_t>(r));
  std::sort(found.begin(), found.end());
  AllowedRows out;
  out.ids.reserve(found.size());
  out.rows.reserve(found.size());
  for (const auto& [id, row] : found) out.ids.push_back(id), out.rows.push_back(row);
  return out;
}

void search_rows(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric, MatrixView<const float> X,
                 const std::vector<int64_t>& row_ids, MatrixView<float> values, MatrixView<int64_t> ids,
                 SearchStats* stats) {
  SearchOutput out(values, ids);
  const int64_t n = X.rows;
  if (stats) {  // every row is a candidate of every query
    stats->candidates += Q.rows * n;
    if (n < k) stats->short_rows += Q.rows;
  }
  if (n == 0) {
    out.pad_all(metric);
    out.deliver(ctx);
    return;
  }
  const Backend& backend = backend_for(ctx, {Q.where, values.where}, "search");
  const MetricPlan plan = plan_metric(metric);
  // Ascending distinct ids from 0 to n - 1 are 0 .. n - 1: the rows are their own ids.
  const bool identity = row_ids.front() == 0 && row_ids.back() == n - 1;
  if (k <= n) {
    if (identity && values.where == Memory::device) {
      backend.knn(ctx, KnnArgs{Q, X, k, plan, values, ids});  // straight into the caller's device outputs
      return;
    }
    backend.knn(ctx, KnnArgs{Q, X, k, plan, out.values(), out.ids()});
  } else {
    // The backends take 1 <= k <= n: rank all n rows, then pad.
    Matrix<float> v(Q.rows, n);
    Matrix<int64_t> r(Q.rows, n);
    backend.knn(ctx, KnnArgs{Q, X, n, plan, v.view(), r.view()});
    out.pad_all(metric);
    for (int64_t q = 0; q < Q.rows; ++q) {
      std::copy_n(v.data() + q * n, n, out.values().row(q));
      std::copy_n(r.data() + q * n, n, out.ids().row(q));
    }
  }
  if (!identity)
    for (int64_t e = 0; e < out.ids().size(); ++e)
      if (out.ids().data[e] >= 0) out.ids().data[e] = row_ids[static_cast<size_t>(out.ids().data[e])];
  out.deliver(ctx);
}

void search_allowed(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric,
                    MatrixView<const float> stored, const AllowedRows& allowed, MatrixView<float> values,
                    MatrixView<int64_t> ids, SearchStats* stats) {
  const int64_t a = static_cast<int64_t>(allowed.rows.size()), d = stored.cols;
  // Distinct rows of [0, n), as many as n and ascending, are every row in order: no copy.
  if (a == stored.rows && std::is_sorted(allowed.rows.begin(), allowed.rows.end()))
    return search_rows(ctx, Q, k, metric, stored, allowed.ids, values, ids, stats);
  Matrix<float> gathered(a, d);
  for (int64_t i = 0; i < a; ++i)
    std::copy_n(stored.row(allowed.rows[static_cast<size_t>(i)]), d, gathered.data() + i * d);
  search_rows(ctx, Q, k, metric, gathered.view(), allowed.ids, values, ids, stats);
}

}  // namespace simkit::detail
