#pragma once
// A chunked float64 sum spread over MPI ranks, with the bits of the one-process sum.
//
// The rule (core/centroid_sums.hpp's centroid sums, core/kmeans_engine.hpp's inertia): a group's
// terms, in a fixed global order, are cut into chunks of `chunk` counted from its first term;
// each chunk is summed from 0, term after term, and the chunk sums are added in order to a total
// that starts at 0. Each rank holds a run of consecutive terms of each group, the runs in rank
// order. A rank can sum alone every chunk that starts on it; a chunk the rank before left open
// must be continued from that rank's partial sum, and the closed chunks must be added to the
// total in order. So the ranks form a pipeline, rank 0 to the last, passing per group the total
// of the chunks closed so far and the open chunk's partial sum: each rank continues the open
// chunk with its first terms, adds its own closed chunks in order, and leaves its last chunk
// open. The additions are the one-process ones, one for one, in the same order.

#include <cstdint>
#include <functional>
#include <vector>

#include <mpi.h>

namespace simkit::mpi_detail {

/// This rank's share of `count.size()` chunked sums of `width` values each.
struct ChunkedShare {
  int64_t chunk = 0, width = 0;
  std::vector<int64_t> before;  // per group: its terms on the ranks before this one
  std::vector<int64_t> count;   // per group: this rank's terms
};

/// Terms [lo, hi) of this rank's run of `group`.
struct TermRun {
  int64_t group = 0, lo = 0, hi = 0;
};

/// Sums each run from 0 into a row of `out` (runs.size() x width): in any order, in parallel.
using SumRuns = std::function<void(const std::vector<TermRun>& runs, double* out)>;
/// Continues `s` (width values) with the run's terms, one after the other.
using ExtendRun = std::function<void(const TermRun& run, double* s)>;

/// Collective. Returns on the last rank each group's sum (groups x width values; a group
/// without terms sums to 0), and nothing on the others.
std::vector<double> chained_chunk_sums(MPI_Comm comm, const ChunkedShare& share, const SumRuns& sum_runs,
                                       const ExtendRun& extend);

}  // namespace simkit::mpi_detail
