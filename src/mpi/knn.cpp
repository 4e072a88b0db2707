// simkit::mpi::knn (include/simkit/mpi.hpp): every rank runs simkit::knn on its slice, computes
// the float64 key of each of its k pairs with the re-score's own formula (core/exact_metric.hpp,
// compiled with libsimkit's flags), and root merges the per-rank lists by (key, global id) (mpi/merge.hpp).
//
// Why this is the one-process answer: simkit::knn's result is, per query, the best k pairs by
// (key, id), where a pair's key depends on the query and the row alone (the float64 re-score,
// or for l1 the float32 direct sum, whose per-pair order of operations does not depend on the
// row's place in a block). So a rank's list is the whole base's order restricted to its rows,
// the global best k lie among the union of the per-rank best k, and merging by (key, id) picks
// them in the one-process order, with the values simkit::knn gave for those very pairs.

#include <simkit/mpi.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/metric_plan.hpp"
#include "mpi/collective.hpp"
#include "mpi/merge.hpp"

namespace simkit::mpi {

namespace {

using mpi_detail::agree;
using mpi_detail::comm_rank;
using mpi_detail::comm_size;
constexpr const char* kWho = "simkit::mpi::knn";

}  // namespace

RowSlice row_slice(int64_t n, int ranks, int rank) {
  if (n < 0 || ranks < 1 || rank < 0 || rank >= ranks)
    throw Error(ErrorCode::invalid_argument,
                "row_slice: need n >= 0 and 0 <= rank < ranks, got n = " + std::to_string(n) + ", rank " +
                    std::to_string(rank) + " of " + std::to_string(ranks));
  const int64_t base = n / ranks, extra = n % ranks;
  return {rank * base + std::min<int64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

KnnResult knn(const Context& ctx, MPI_Comm comm, MatrixView<const float> Q, MatrixView<const float> X_local,
              int64_t row_offset, int64_t k, Metric metric, KnnMethod method, int root) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  if (root < 0 || root >= ranks)
    throw Error(ErrorCode::invalid_argument, "simkit::mpi::knn: root " + std::to_string(root) +
                                                 " is not a rank of the communicator (size " + std::to_string(ranks) +
                                                 ")");

  // 1. What must agree between ranks: the call's arguments and the slices' layout.
  std::string local;
  if (Q.where != Memory::host || X_local.where != Memory::host)
    local = "the queries and the base slice must be in host memory";
  else if (X_local.rows < 0 || row_offset < 0)
    local = "negative base rows or row offset";
  else if (X_local.rows > 0 && X_local.cols != Q.cols)
    local = "dimensions differ: queries have d = " + std::to_string(Q.cols) +
            ", the base slice d = " + std::to_string(X_local.cols);
  agree(comm, kWho, ErrorCode::invalid_argument, local);
  mpi_detail::check_same(
      comm, kWho,
      {{"query rows", Q.rows},
       {"query dimension", Q.cols},
       {"k", k},
       {"metric", static_cast<int64_t>(metric)},
       {"method", static_cast<int64_t>(method)},
       {"query values", mpi_detail::fingerprint(Q.data, static_cast<size_t>(Q.size()) * sizeof(float))}});
  int64_t n = 0;
  mpi_detail::contiguous_layout(comm, kWho, row_offset, X_local.rows, n);
  if (k < 1 || k > n)
    throw Error(ErrorCode::invalid_argument, "simkit::mpi::knn: k = " + std::to_string(k) +
                                                 " must be between 1 and the base size n = " + std::to_string(n));

  // 2. This rank's best min(k, n_r), and the float64 key of each pair.
  const int64_t m = Q.rows, d = Q.cols, kr = std::min(k, X_local.rows);
  const detail::MetricPlan plan = detail::plan_metric(metric);
  KnnResult part{Matrix<float>(m, kr), Matrix<int64_t>(m, kr)};
  mpi_detail::RankedLists mine(m, kr);
  ErrorCode code = ErrorCode::invalid_argument;
  local.clear();
  if (kr > 0) {
    try {
      knn(ctx, Q, X_local, kr, metric, part.values.view(), part.ids.view(), method);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < kr; ++j) {
          const int64_t id = part.ids(i, j);
          const float value = part.values(i, j);
          const double key = mpi_detail::key_of(plan, Q.row(i), X_local.row(id), d, value);
          // The key must be the one simkit::knn ranked by: it gives back the same value.
          if (!mpi_detail::key_gives_value(plan, key, value))
            throw Error(ErrorCode::unsupported, "the float64 key of query " + std::to_string(i) + ", row " +
                                                    std::to_string(id + row_offset) +
                                                    " does not reproduce simkit::knn's value (a build mismatch)");
          mine.keys[mine.at(i, j)] = key;
          mine.ids[mine.at(i, j)] = id + row_offset;
          mine.extra[mine.at(i, j)] = value;
        }
    } catch (const Error& e) {
      code = e.code();
      local = e.what();
    } catch (const std::exception& e) {
      local = e.what();
    }
  }
  agree(comm, kWho, code, local);

  // 3. The ranks' lists merged on root by (key, id) (mpi/merge.hpp).
  const mpi_detail::MergedLists merged = mpi_detail::merge_on_root(comm, root, mine, k);
  KnnResult out{Matrix<float>(rank == root ? m : 0, rank == root ? k : 0),
                Matrix<int64_t>(rank == root ? m : 0, rank == root ? k : 0)};
  if (rank != root) return out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) {
      out.values(i, j) = static_cast<float>(merged.extra[merged.at(i, j)]);
      out.ids(i, j) = merged.ids[merged.at(i, j)];
    }
  return out;
}

}  // namespace simkit::mpi
