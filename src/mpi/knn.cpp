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
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/exact_metric.hpp"
#include "core/metric_plan.hpp"

namespace simkit::mpi {

namespace {

int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int comm_size(MPI_Comm comm) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  return p;
}

/// Collective: when some rank has an error (a non-empty `message`), every rank throws the one of
/// the lowest such rank, prefixed with its rank; otherwise returns on every rank.
void agree(MPI_Comm comm, ErrorCode code, const std::string& message) {
  const int rank = comm_rank(comm);
  int mine = message.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int head[2] = {static_cast<int>(code), static_cast<int>(message.size())};
  MPI_Bcast(head, 2, MPI_INT, first, comm);
  std::string text(static_cast<size_t>(head[1]), '\0');
  if (rank == first) text = message;
  MPI_Bcast(text.data(), head[1], MPI_CHAR, first, comm);
  throw Error(static_cast<ErrorCode>(head[0]), "simkit::mpi::knn: rank " + std::to_string(first) + ": " + text);
}

/// FNV-1a over the bytes of Q, so that ranks can check that they hold the same queries.
int64_t fingerprint(MatrixView<const float> Q) {
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(Q.data);
  const size_t count = static_cast<size_t>(Q.size()) * sizeof(float);
  for (size_t i = 0; i < count; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  int64_t out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

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
  agree(comm, ErrorCode::invalid_argument, local);

  const int64_t same[6] = {Q.rows,        Q.cols, k, static_cast<int64_t>(metric), static_cast<int64_t>(method),
                           fingerprint(Q)};
  int64_t lo[6], hi[6];
  MPI_Allreduce(same, lo, 6, MPI_INT64_T, MPI_MIN, comm);
  MPI_Allreduce(same, hi, 6, MPI_INT64_T, MPI_MAX, comm);
  static const char* const kWhat[6] = {"query rows", "query dimension", "k", "metric", "method", "query values"};
  for (int i = 0; i < 6; ++i)
    if (lo[i] != hi[i])
      throw Error(ErrorCode::invalid_argument, std::string("simkit::mpi::knn: the ranks disagree on the ") + kWhat[i] +
                                                   " (every rank must pass the same)");

  std::vector<int64_t> layout(2 * static_cast<size_t>(ranks));
  const int64_t mine[2] = {row_offset, X_local.rows};
  MPI_Allgather(mine, 2, MPI_INT64_T, layout.data(), 2, MPI_INT64_T, comm);
  int64_t n = 0;
  for (int r = 0; r < ranks; ++r) {
    if (layout[2 * size_t(r)] != n)
      throw Error(ErrorCode::invalid_argument, "simkit::mpi::knn: rank " + std::to_string(r) + " starts at row " +
                                                   std::to_string(layout[2 * size_t(r)]) +
                                                   " but the slices before it end at row " + std::to_string(n) +
                                                   " (slices must be contiguous in rank order from row 0)");
    n += layout[2 * size_t(r) + 1];
  }
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
  agree(comm, code, local);

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
