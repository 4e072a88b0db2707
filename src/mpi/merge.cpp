// src/mpi/merge.hpp: the ranks' ranked lists gathered and merged on the root by (key, id).

#include "mpi/merge.hpp"

#include <algorithm>
#include <limits>

#include "core/exact_metric.hpp"
#include "mpi/collective.hpp"

namespace simkit::mpi_detail {

RankedLists::RankedLists(int64_t r, int64_t w)
    : rows(r),
      width(w),
      keys(static_cast<size_t>(r * w), std::numeric_limits<double>::infinity()),
      extra(static_cast<size_t>(r * w), 0.0),
      ids(static_cast<size_t>(r * w), -1) {}

namespace {

/// Row i of every rank's batch: rank r's row sits at displs[r] + i * width[r]. Writes the best k
/// by (key, id) into row `out_row` of `out`.
void merge_row(const std::vector<double>& keys, const std::vector<int64_t>& ids, const std::vector<double>& extra,
               const std::vector<int>& displs, const std::vector<int64_t>& width, int64_t i, int64_t k,
               MergedLists& out, int64_t out_row, std::vector<int64_t>& cursor) {
  const int ranks = static_cast<int>(width.size());
  std::fill(cursor.begin(), cursor.end(), 0);
  for (int64_t j = 0; j < k; ++j) {
    int best = -1;
    size_t best_at = 0;
    for (int r = 0; r < ranks; ++r) {
      if (cursor[size_t(r)] >= width[size_t(r)]) continue;
      const size_t at = size_t(displs[size_t(r)] + i * width[size_t(r)] + cursor[size_t(r)]);
      if (ids[at] < 0) continue;  // the rest of this rank's row is absent
      if (best < 0 || keys[at] < keys[best_at] || (keys[at] == keys[best_at] && ids[at] < ids[best_at])) {
        best = r;
        best_at = at;
      }
    }
    if (best < 0) return;  // every list is spent: the row stays padded
    ++cursor[size_t(best)];
    const size_t o = out.at(out_row, j);
    out.keys[o] = keys[best_at];
    out.ids[o] = ids[best_at];
    out.extra[o] = extra[best_at];
    out.source[o] = best;
  }
}

}  // namespace

MergedLists merge_on_root(MPI_Comm comm, int root, const RankedLists& mine, int64_t k) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const bool at_root = rank == root;
  std::vector<int64_t> width(static_cast<size_t>(ranks));
  MPI_Allgather(&mine.width, 1, MPI_INT64_T, width.data(), 1, MPI_INT64_T, comm);
  int64_t all = 0;
  for (const int64_t w : width) all += w;
  const int64_t m = mine.rows;
  MergedLists out;
  static_cast<RankedLists&>(out) = RankedLists(at_root ? m : 0, at_root ? k : 0);
  out.source.assign(out.ids.size(), -1);

  const int64_t batch = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, all));
  std::vector<int> counts(static_cast<size_t>(ranks)), displs(static_cast<size_t>(ranks));
  std::vector<double> g_keys, g_extra;
  std::vector<int64_t> g_ids, cursor(static_cast<size_t>(ranks));
  for (int64_t i0 = 0; i0 < m; i0 += batch) {
    const int64_t rows = std::min(batch, m - i0);
    int total = 0;
    for (int r = 0; r < ranks; ++r) {
      counts[size_t(r)] = static_cast<int>(rows * width[size_t(r)]);
      displs[size_t(r)] = total;
      total += counts[size_t(r)];
    }
    if (at_root) {
      g_keys.resize(size_t(total));
      g_ids.resize(size_t(total));
      g_extra.resize(size_t(total));
    }
    const int send = static_cast<int>(rows * mine.width);
    const size_t from = mine.at(i0, 0);
    MPI_Gatherv(mine.keys.data() + from, send, MPI_DOUBLE, g_keys.data(), counts.data(), displs.data(), MPI_DOUBLE,
                root, comm);
    MPI_Gatherv(mine.ids.data() + from, send, MPI_INT64_T, g_ids.data(), counts.data(), displs.data(), MPI_INT64_T,
                root, comm);
    MPI_Gatherv(mine.extra.data() + from, send, MPI_DOUBLE, g_extra.data(), counts.data(), displs.data(), MPI_DOUBLE,
                root, comm);
    if (!at_root) continue;
    for (int64_t i = 0; i < rows; ++i) merge_row(g_keys, g_ids, g_extra, displs, width, i, k, out, i0 + i, cursor);
  }
  return out;
}

double key_of(const detail::MetricPlan& plan, const float* q, const float* x, int64_t d, float value) {
  if (!plan.rescores()) return plan.negate ? -static_cast<double>(value) : static_cast<double>(value);
  return detail::exact_key(plan.exact, q, x, d);
}

bool key_gives_value(const detail::MetricPlan& plan, double key, float value) {
  return !plan.rescores() || static_cast<float>(plan.value_of_key(key)) == value;
}

}  // namespace simkit::mpi_detail
