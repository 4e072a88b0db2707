// src/mpi/kmeans_slice.hpp: core/kmeans_train.hpp's interfaces over MPI ranks. Each keeps the
// one-process arithmetic (the same additions in the same order); what crosses ranks is partial
// sums passed down the ranks, rows broadcast from their owners, and draws resolved by owners.

#include "mpi/kmeans_slice.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/centroid_sums.hpp"
#include "mpi/chunked_sum.hpp"
#include "mpi/collective.hpp"

namespace simkit::mpi_detail {

namespace {
constexpr const char* kWho = "simkit::mpi::kmeans";
}

void assign_slice(KmeansSlice& s, MatrixView<const float> C) {
  agree_on(s.comm, kWho, [&] {
    if (!s.engine) return;
    s.engine->assign(C);
    s.costs.resize(static_cast<size_t>(s.X.rows));
    s.engine->costs(s.costs.data());
  });
}

double slice_inertia(const KmeansSlice& s) {
  // One group, one value: the costs in global point order, in the CPU engine's blocks.
  const ChunkedShare share{detail::kCostBlock, 1, {s.first}, {s.X.rows}};
  const std::vector<double> total = chained_chunk_sums(
      s.comm, share,
      [&](const std::vector<TermRun>& runs, double* out) {
        for (size_t i = 0; i < runs.size(); ++i) {
          double sum = 0;
          for (int64_t p = runs[i].lo; p < runs[i].hi; ++p) sum += s.costs[size_t(p)];
          out[i] = sum;
        }
      },
      [&](const TermRun& run, double* sum) {
        for (int64_t p = run.lo; p < run.hi; ++p) *sum += s.costs[size_t(p)];
      });
  double inertia = total.empty() ? 0.0 : total[0];
  MPI_Bcast(&inertia, 1, MPI_DOUBLE, s.ranks - 1, s.comm);
  return inertia;
}

void fetch_row(const KmeansSlice& s, int64_t row, float* out) {
  const int owner = owner_of(s.layout, row);
  if (owner == s.rank) std::copy_n(s.X.row(row - s.first), s.d, out);
  MPI_Bcast(out, static_cast<int>(s.d), MPI_FLOAT, owner, s.comm);
}

double SpreadPoints::assign(MatrixView<const float> C) {
  assign_slice(s_, C);
  return slice_inertia(s_);
}

std::vector<int64_t> SpreadPoints::update(Matrix<float>& C) {
  const int64_t k = C.rows(), d = s_.d;
  // Cluster c's points on this rank, in point order, and where they fall among all of c's:
  // after `before[c]` on the ranks before.
  detail::LabelOrder sorted;
  agree_on(s_.comm, kWho, [&] {
    std::vector<int64_t> wide(static_cast<size_t>(s_.X.rows));
    if (s_.engine) s_.engine->labels(wide.data());
    const std::vector<int32_t> labels(wide.begin(), wide.end());
    sorted = detail::sort_by_label(labels.data(), s_.X.rows, k);
  });
  std::vector<int64_t> count(static_cast<size_t>(k)), before(static_cast<size_t>(k), 0), total(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) count[size_t(c)] = sorted.start[size_t(c + 1)] - sorted.start[size_t(c)];
  MPI_Exscan(count.data(), before.data(), static_cast<int>(k), MPI_INT64_T, MPI_SUM, s_.comm);
  if (s_.rank == 0) std::fill(before.begin(), before.end(), 0);  // MPI_Exscan leaves rank 0's undefined
  MPI_Allreduce(count.data(), total.data(), static_cast<int>(k), MPI_INT64_T, MPI_SUM, s_.comm);

  const ChunkedShare share{detail::kSumChunk, d, before, count};
  const int64_t* order = sorted.order.data();
  const std::vector<double> sums = chained_chunk_sums(
      s_.comm, share,
      [&](const std::vector<TermRun>& runs, double* out) {
        std::vector<detail::ChunkSpan> spans(runs.size());
        for (size_t i = 0; i < runs.size(); ++i) {
          const int64_t at = sorted.start[size_t(runs[i].group)];
          spans[i] = {at + runs[i].lo, at + runs[i].hi};
        }
        detail::chunk_sums_host(s_.X, order, spans, out, s_.threads);
      },
      [&](const TermRun& run, double* sum) {
        const int64_t at = sorted.start[size_t(run.group)];
        detail::add_points(s_.X, order, at + run.lo, at + run.hi, sum);
      });
  if (s_.rank == s_.ranks - 1)
    for (int64_t c = 0; c < k; ++c)
      if (total[size_t(c)] > 0)
        detail::centroid_row(sums.data() + c * d, total[size_t(c)], s_.spherical, d, C.data() + c * d);
  bcast_all(C.data(), k * d, MPI_FLOAT, s_.ranks - 1, s_.comm);
  std::vector<int64_t> empty;
  for (int64_t c = 0; c < k; ++c)
    if (total[size_t(c)] == 0) empty.push_back(c);
  return empty;
}

void SpreadPoints::reseed(const std::vector<int64_t>& empty, Matrix<float>& C) {
  // Each rank's best `e` by (cost descending, global index ascending), then the best of those:
  // the order is total (indices differ), so the pick is the one-process one.
  const auto farther = [](double ca, int64_t a, double cb, int64_t b) { return ca != cb ? ca > cb : a < b; };
  const int e = static_cast<int>(empty.size());
  std::vector<int64_t> mine(static_cast<size_t>(s_.X.rows));
  std::iota(mine.begin(), mine.end(), int64_t{0});
  const size_t here = std::min(size_t(e), mine.size());
  std::partial_sort(mine.begin(), mine.begin() + std::ptrdiff_t(here), mine.end(),
                    [&](int64_t a, int64_t b) { return farther(s_.costs[size_t(a)], a, s_.costs[size_t(b)], b); });
  std::vector<double> cost(size_t(e), -std::numeric_limits<double>::infinity()), all_cost(size_t(e) * size_t(s_.ranks));
  std::vector<int64_t> row(size_t(e), -1), all_row(size_t(e) * size_t(s_.ranks));
  for (size_t i = 0; i < here; ++i) cost[i] = s_.costs[size_t(mine[i])], row[i] = mine[i] + s_.first;
  MPI_Allgather(cost.data(), e, MPI_DOUBLE, all_cost.data(), e, MPI_DOUBLE, s_.comm);
  MPI_Allgather(row.data(), e, MPI_INT64_T, all_row.data(), e, MPI_INT64_T, s_.comm);
  std::vector<size_t> candidates;
  for (size_t i = 0; i < all_row.size(); ++i)
    if (all_row[i] >= 0) candidates.push_back(i);
  const size_t take = std::min(size_t(e), candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + std::ptrdiff_t(take), candidates.end(),
                    [&](size_t a, size_t b) { return farther(all_cost[a], all_row[a], all_cost[b], all_row[b]); });
  for (size_t i = 0; i < take; ++i) fetch_row(s_, all_row[candidates[i]], C.data() + empty[i] * s_.d);
}

SpreadSeedPoints::SpreadSeedPoints(KmeansSlice& s)
    : s_(s),
      taken_here_(size_t(s.X.rows), 0),
      cost_(size_t(s.X.rows), 0.0),
      cumulative_(size_t(s.X.rows)),
      after_(size_t(s.ranks)) {}

void SpreadSeedPoints::take(int64_t i) {
  taken_.insert(i);
  if (i >= s_.first && i < s_.first + s_.X.rows) taken_here_[size_t(i - s_.first)] = 1;
}

bool SpreadSeedPoints::is_taken(int64_t i) const { return taken_.count(i) != 0; }

double SpreadSeedPoints::weigh(MatrixView<const float> fresh, bool first) {
  assign_slice(s_, fresh);
  for (size_t i = 0; i < cost_.size(); ++i) {
    const double c = std::max(0.0, s_.costs[i]);
    cost_[i] = first ? c : std::min(cost_[i], c);
  }
  // The running total goes down the ranks: rank r continues it over its points in order.
  double total = 0;
  if (s_.rank > 0) MPI_Recv(&total, 1, MPI_DOUBLE, s_.rank - 1, 36, s_.comm, MPI_STATUS_IGNORE);
  for (size_t i = 0; i < cost_.size(); ++i) cumulative_[i] = total += taken_here_[i] ? 0.0 : cost_[i];
  if (s_.rank + 1 < s_.ranks) MPI_Send(&total, 1, MPI_DOUBLE, s_.rank + 1, 36, s_.comm);
  MPI_Allgather(&total, 1, MPI_DOUBLE, after_.data(), 1, MPI_DOUBLE, s_.comm);
  return after_.back();
}

int64_t SpreadSeedPoints::find(double u) {
  // The cumulative weights rise along the ranks: the first point above u lies on the first rank
  // (holding points) whose last weight is above u.
  int owner = -1;
  for (int r = 0; r < s_.ranks && owner < 0; ++r)
    if (s_.layout[2 * size_t(r) + 1] > 0 && after_[size_t(r)] > u) owner = r;
  if (owner < 0) return s_.n;
  int64_t i = 0;
  if (owner == s_.rank)
    i = s_.first + (std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
  MPI_Bcast(&i, 1, MPI_INT64_T, owner, s_.comm);
  return i;
}

int64_t SpreadSeedPoints::first_free() {
  int64_t i = 0;
  for (auto it = taken_.begin(); it != taken_.end() && *it == i; ++it) ++i;
  return i;
}

}  // namespace simkit::mpi_detail
