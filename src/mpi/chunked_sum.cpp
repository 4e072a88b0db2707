// src/mpi/chunked_sum.hpp: the pipeline of partial chunk sums from rank 0 to the last.

#include "mpi/chunked_sum.hpp"

#include <algorithm>

#include "core/centroid_sums.hpp"
#include "mpi/collective.hpp"

namespace simkit::mpi_detail {

std::vector<double> chained_chunk_sums(MPI_Comm comm, const ChunkedShare& share, const SumRuns& sum_runs,
                                       const ExtendRun& extend) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const int64_t groups = static_cast<int64_t>(share.count.size()), w = share.width, c = share.chunk;
  // The end of a group's head: its terms that continue the chunk left open by the ranks before.
  const auto head_end = [&](int64_t g) {
    const int64_t b = share.before[size_t(g)];
    return std::min(b + share.count[size_t(g)], (b + c - 1) / c * c);
  };

  // 1. Every chunk that starts on this rank, summed alone (before waiting on the rank before).
  std::vector<TermRun> runs;
  std::vector<size_t> first_run(static_cast<size_t>(groups + 1));
  for (int64_t g = 0; g < groups; ++g) {
    first_run[size_t(g)] = runs.size();
    const int64_t b = share.before[size_t(g)], e = b + share.count[size_t(g)];
    for (int64_t p = head_end(g); p < e; p += c) runs.push_back({g, p - b, std::min(p + c, e) - b});
  }
  first_run[size_t(groups)] = runs.size();
  std::vector<double> sums(runs.size() * static_cast<size_t>(w));
  if (!runs.empty()) sum_runs(runs, sums.data());

  // 2. Per group {closed chunks' total, open chunk's partial sum} from the rank before; the head
  // continues the open chunk, the chunks that close here are added in order, the last stays open.
  std::vector<double> state(static_cast<size_t>(2 * groups * w), 0.0);
  if (rank > 0) recv_all(state.data(), int64_t(state.size()), MPI_DOUBLE, rank - 1, comm);
  for (int64_t g = 0; g < groups; ++g) {
    double* closed = state.data() + 2 * g * w;
    double* open = closed + w;
    const int64_t b = share.before[size_t(g)], h = head_end(g);
    if (h > b) {
      extend({g, 0, h - b}, open);
      if (h % c == 0) {
        detail::add_chunk(closed, open, w);
        std::fill_n(open, w, 0.0);
      }
    }
    for (size_t i = first_run[size_t(g)]; i < first_run[size_t(g + 1)]; ++i) {
      const double* s = sums.data() + i * size_t(w);
      if ((b + runs[i].hi) % c == 0)
        detail::add_chunk(closed, s, w);
      else
        std::copy_n(s, w, open);  // the open chunk was empty: its sum from 0 is this one
    }
  }
  if (rank + 1 < ranks) {
    send_all(state.data(), int64_t(state.size()), MPI_DOUBLE, rank + 1, comm);
    return {};
  }

  // 3. The last rank closes each group's last chunk.
  std::vector<double> totals(static_cast<size_t>(groups * w));
  for (int64_t g = 0; g < groups; ++g) {
    double* total = totals.data() + g * w;
    std::copy_n(state.data() + 2 * g * w, w, total);
    if ((share.before[size_t(g)] + share.count[size_t(g)]) % c != 0)
      detail::add_chunk(total, state.data() + 2 * g * w + w, w);
  }
  return totals;
}

}  // namespace simkit::mpi_detail
