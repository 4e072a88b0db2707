#pragma once
// Exact k-NN over a chosen set of an index's rows: the flat index's search, and every index's
// search restricted to an allow-list (SearchParams::allowed).
//
// The rows are handed to the backend's k-NN in id order, so its tie rule (equal values by row)
// is the contract's (by id), and its row numbers become ids by one lookup. An allow-list is met
// on the host: its rows are gathered into a temporary matrix, which the GPU backend reads from
// host memory like any other base.

#include <cstdint>
#include <vector>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::detail {

/// The rows an allow-list selects: row `rows[i]` of the index holds id `ids[i]`; ids ascend.
struct AllowedRows {
  std::vector<int64_t> ids, rows;
};

/// Error(invalid_argument) unless `allowed` is in host memory, sorted ascending, without repeats.
void check_allowed(ArrayView<const int64_t> allowed);

/// The allowed rows where row r holds `stored[r]` and `stored` ascends (flat): one merge walk.
AllowedRows allowed_rows_sorted(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed);

/// The allowed rows where row r holds `stored[r]`, in any order (ivf_flat): a binary search per
/// row, then sorted by id.
AllowedRows allowed_rows_any(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed);

/// The k best rows of X for each query, as ids: row r of X holds id row_ids[r], ascending. X is
/// in host memory, or on the device when ctx runs on the GPU. The rows and Q were checked (finite)
/// before, so the backend's k-NN runs without knn()'s scan of the whole base on every search.
/// Pads past X.rows (an empty X pads everything, without asking for a backend) and hands the
/// result to values / ids wherever they live. `stats`, when given, counts every row a candidate
/// and every query short when X has fewer than k rows.
void search_rows(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric, MatrixView<const float> X,
                 const std::vector<int64_t>& row_ids, MatrixView<float> values, MatrixView<int64_t> ids,
                 SearchStats* stats = nullptr);

/// search_rows over the allowed rows of `stored` (host, row r of the index), gathered in id
/// order; used as they are when they are every row already in order.
void search_allowed(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric,
                    MatrixView<const float> stored, const AllowedRows& allowed, MatrixView<float> values,
                    MatrixView<int64_t> ids, SearchStats* stats = nullptr);

}  // namespace simkit::detail
