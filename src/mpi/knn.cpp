// simkit::mpi::knn (include/simkit/mpi.hpp): every rank runs simkit::knn on its slice, computes
// the float64 key of each of its k pairs with the re-score's own formula (core/exact_metric.hpp,
// compiled with libsimkit's flags), and root merges the per-rank lists by (key, global id).
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

#include "core/exact_metric.hpp"
#include "core/metric_plan.hpp"
#include "mpi/collective.hpp"

namespace simkit::mpi {

namespace {

using mpi_detail::agree;
using mpi_detail::comm_rank;
using mpi_detail::comm_size;
constexpr const char* kWho = "simkit::mpi::knn";

/// The float64 key simkit::knn ranked the pair (q, x) by: the re-score's exact key, or for l1
/// (ranked on its float32 values) the value itself.
double key_of(const detail::MetricPlan& plan, const float* q, const float* x, int64_t d, float value) {
  if (!plan.rescores()) return plan.negate ? -static_cast<double>(value) : static_cast<double>(value);
  return detail::exact_key(plan.exact, q, x, d);
}

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
  const std::vector<int64_t> layout = mpi_detail::contiguous_layout(comm, kWho, row_offset, X_local.rows, n);
  if (k < 1 || k > n)
    throw Error(ErrorCode::invalid_argument, "simkit::mpi::knn: k = " + std::to_string(k) +
                                                 " must be between 1 and the base size n = " + std::to_string(n));

  // 2. This rank's best min(k, n_r), and the float64 key of each pair.
  const int64_t m = Q.rows, d = Q.cols, kr = std::min(k, X_local.rows);
  const detail::MetricPlan plan = detail::plan_metric(metric);
  KnnResult part{Matrix<float>(m, kr), Matrix<int64_t>(m, kr)};
  std::vector<double> keys(static_cast<size_t>(m * kr));
  ErrorCode code = ErrorCode::invalid_argument;
  local.clear();
  if (kr > 0) {
    try {
      knn(ctx, Q, X_local, kr, metric, part.values.view(), part.ids.view(), method);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < kr; ++j) {
          const int64_t id = part.ids(i, j);
          const float value = part.values(i, j);
          const double key = key_of(plan, Q.row(i), X_local.row(id), d, value);
          // The key must be the one simkit::knn ranked by: it gives back the same value.
          if (plan.rescores() && static_cast<float>(plan.value_of_key(key)) != value)
            throw Error(ErrorCode::unsupported, "the float64 key of query " + std::to_string(i) + ", row " +
                                                    std::to_string(id + row_offset) +
                                                    " does not reproduce simkit::knn's value (a build mismatch)");
          keys[size_t(i * kr + j)] = key;
          part.ids(i, j) = id + row_offset;
        }
    } catch (const Error& e) {
      code = e.code();
      local = e.what();
    } catch (const std::exception& e) {
      local = e.what();
    }
  }
  agree(comm, kWho, code, local);

  // 3. Gather on root, a batch of queries at a time (MPI counts are int), and merge.
  KnnResult out{Matrix<float>(rank == root ? m : 0, rank == root ? k : 0),
                Matrix<int64_t>(rank == root ? m : 0, rank == root ? k : 0)};
  std::vector<int64_t> kk(static_cast<size_t>(ranks));
  int64_t all_k = 0;
  for (int r = 0; r < ranks; ++r) all_k += kk[size_t(r)] = std::min(k, layout[2 * size_t(r) + 1]);
  const int64_t batch = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, all_k));
  std::vector<int> counts(static_cast<size_t>(ranks)), displs(static_cast<size_t>(ranks));
  std::vector<double> g_keys;
  std::vector<int64_t> g_ids;
  std::vector<float> g_values;
  std::vector<int64_t> cursor(static_cast<size_t>(ranks));
  for (int64_t i0 = 0; i0 < m; i0 += batch) {
    const int64_t rows = std::min(batch, m - i0);
    int total = 0;
    for (int r = 0; r < ranks; ++r) {
      counts[size_t(r)] = static_cast<int>(rows * kk[size_t(r)]);
      displs[size_t(r)] = total;
      total += counts[size_t(r)];
    }
    if (rank == root) {
      g_keys.resize(size_t(total));
      g_ids.resize(size_t(total));
      g_values.resize(size_t(total));
    }
    const int send = static_cast<int>(rows * kr);
    MPI_Gatherv(keys.data() + i0 * kr, send, MPI_DOUBLE, g_keys.data(), counts.data(), displs.data(), MPI_DOUBLE, root,
                comm);
    MPI_Gatherv(part.ids.data() + i0 * kr, send, MPI_INT64_T, g_ids.data(), counts.data(), displs.data(), MPI_INT64_T,
                root, comm);
    MPI_Gatherv(part.values.data() + i0 * kr, send, MPI_FLOAT, g_values.data(), counts.data(), displs.data(), MPI_FLOAT,
                root, comm);
    if (rank != root) continue;
    // Rank r's row i sits at displs[r] + i * kk[r]; each is sorted by (key, id), so a P-way
    // merge by the same rule gives the whole base's order.
    for (int64_t i = 0; i < rows; ++i) {
      std::fill(cursor.begin(), cursor.end(), 0);
      for (int64_t j = 0; j < k; ++j) {
        int best = -1;
        size_t best_at = 0;
        for (int r = 0; r < ranks; ++r) {
          if (cursor[size_t(r)] >= kk[size_t(r)]) continue;
          const size_t at = size_t(displs[size_t(r)] + i * kk[size_t(r)] + cursor[size_t(r)]);
          if (best < 0 || g_keys[at] < g_keys[best_at] ||
              (g_keys[at] == g_keys[best_at] && g_ids[at] < g_ids[best_at])) {
            best = r;
            best_at = at;
          }
        }
        ++cursor[size_t(best)];
        out.values(i0 + i, j) = g_values[best_at];
        out.ids(i0 + i, j) = g_ids[best_at];
      }
    }
  }
  return out;
}

}  // namespace simkit::mpi
