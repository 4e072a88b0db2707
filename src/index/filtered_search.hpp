#pragma once
// Filtered searches: the planner that chooses how an allow-list (SearchParams::allowed) is met,
// and the exact k-NN over a chosen set of an index's rows -- the flat index's search, and every
// index's search over the gathered rows of a selective allow-list.
//
// Rows handed to the backend's k-NN in id order keep its tie rule (equal values by row) the
// contract's (by id), and row numbers become ids by one lookup; rows in another order are
// re-ranked (search_rows). A gathered allow-list's rows are copied on the host into a temporary
// matrix, which the GPU backend reads from host memory like any other base.

#include <cstdint>
#include <vector>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "index/id_map.hpp"

namespace simkit::detail {

/// The rows an allow-list selects: row `rows[i]` of the index holds id `ids[i]`; ids ascend.
struct AllowedRows {
  std::vector<int64_t> ids, rows;
};

/// The planner of filtered searches: for an allow-list that selects `allowed` of an index's n
/// rows, true to test the filter inside the index's own scan (its usual cost, its usual
/// accuracy), false to gather the allowed rows and search them exactly (the cost of the gather
/// plus a search of `allowed` rows). An exact scan (flat: `probed` = n) is chosen by time; an
/// approximate one (the inverted files, which read `probed` rows a query: nprobe lists' worth)
/// by recall: its probed rows must still hold enough allowed ones around the k nearest.
/// SIMKIT_FILTER_PLAN=gather|scan forces one (benchmarks, tests).
bool filter_in_scan(Device device, int64_t allowed, int64_t n, int64_t probed, int64_t k);

/// The same choice for a search that prunes as it goes (the tree index's walk over n rows in d
/// dimensions): the walk reads about k n / allowed rows a query before its k allowed neighbours
/// bound it, the gather searches `allowed` rows a query, so the walk is chosen once allowed^2
/// reaches a measured multiple of k n (larger in more dimensions, where the tree prunes less).
/// SIMKIT_FILTER_PLAN forces one here too.
bool filter_in_walk(int64_t allowed, int64_t n, int64_t k, int64_t d);

/// The same choice for a graph walk (hnsw) over n nodes keeping `ef` with `links` per node on
/// its bottom layer: the walk passes about ef links / f nodes (f = allowed / n) before its ef
/// are allowed ones, each a random access, where the gather searches `allowed` rows in blocks.
/// `coded`: the walk reads one-byte codes (storage=sq8), a quarter of float32's bytes a node.
/// SIMKIT_FILTER_PLAN forces one here too.
bool filter_in_graph(int64_t allowed, int64_t n, int64_t ef, int64_t links, bool coded);

/// Error(invalid_argument) unless `allowed` is in host memory, sorted ascending, without repeats.
void check_allowed(ArrayView<const int64_t> allowed);

/// The allowed rows where row r holds `stored[r]` and `stored` ascends (flat): one merge walk.
AllowedRows allowed_rows_sorted(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed);

/// The allowed rows of an index that maps ids to rows (flat): one lookup per allowed id.
AllowedRows allowed_rows_mapped(const IdMap& stored, ArrayView<const int64_t> allowed);

/// Rows an exact search runs over: row r of `rows` holds id ids[r]. `host` is the same rows in
/// host memory (the same view when `rows` are there): ties are re-ranked from it.
struct IdRows {
  MatrixView<const float> rows, host;
  const int64_t* ids = nullptr;
  /// ids ascend with the rows, so knn's tie rule (equal keys by row) is already the contract's.
  bool ascending = true;
  /// When set, a filter inside the scan: only rows whose bit is set (bit r of word r / 64) are
  /// candidates, `allowed` of them.
  const uint64_t* mask = nullptr;
  int64_t allowed = 0;

  int64_t candidates() const noexcept { return mask ? allowed : rows.rows; }
};

/// The k best rows of X for each query, as ids, ranked by (key, id). X.rows is in host memory,
/// or on the device when ctx runs on the GPU. The rows and Q were checked (finite) before, so
/// the backend's k-NN runs without knn()'s scan of the whole base on every search. Pads past
/// X.rows (an empty X pads everything, without asking for a backend) and hands the result to
/// values / ids wherever they live. `stats`, when given, counts every row a candidate and every
/// query short when X has fewer than k rows.
///
/// Rows not in id order (an index that appends and fills holes) are searched for k + 1: a run of
/// equal values that reaches past the k-th place shows in the last one, and the search is then
/// repeated for that query with twice as many until the run ends inside the result. Runs of
/// equal values are re-ranked by their float64 keys (recomputed on the host), then by id.
void search_rows(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric, const IdRows& X,
                 MatrixView<float> values, MatrixView<int64_t> ids, SearchStats* stats = nullptr);

/// search_rows over the allowed rows of `stored` (host, row r of the index), gathered in id
/// order; used as they are when they are every row already in order.
void search_allowed(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric,
                    MatrixView<const float> stored, const AllowedRows& allowed, MatrixView<float> values,
                    MatrixView<int64_t> ids, SearchStats* stats = nullptr);

}  // namespace simkit::detail
