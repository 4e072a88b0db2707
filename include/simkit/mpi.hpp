#pragma once
// Exact k-NN over MPI ranks (libsimkit_mpi; built when CMake finds MPI, SIMKIT_MPI=AUTO|ON|OFF).
//
// The base set is split into contiguous row slices, one per rank in rank order: rank r holds
// rows [offset_r, offset_r + n_r) of the whole base, with offset_0 = 0 and offset_{r+1} =
// offset_r + n_r (a rank may hold no rows). Every rank passes the same queries, k, metric and
// method. Each rank runs simkit::knn on its slice; the per-rank lists are gathered on `root`
// and merged by simkit's rule (float64 key, then the lower id), so the result is the one-process
// answer on the whole base: the same ids, the same float32 values, bit for bit, for every
// metric; see docs/ARCHITECTURE.md ("MPI ranks") for why and for pearson's one caveat.
//
// Link simkit::simkit_mpi. The caller owns MPI (MPI_Init / MPI_Finalize); every rank of `comm`
// must make the call (it is collective). The matrices must be in host memory.

#include <cstdint>

#include <mpi.h>

#include <simkit/context.hpp>
#include <simkit/knn.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::mpi {

/// The k best rows of the whole base for every row of Q (m x d), as simkit::knn on the
/// concatenation of the ranks' slices; ids are global row numbers (offset + local row).
///
/// `X_local` is this rank's slice (n_r x d, n_r >= 0) and `row_offset` its first global row.
/// Returns the m x k result on `root`, and 0 x 0 matrices on the other ranks. Collective: errors
/// are agreed on, so every rank throws (the same Error) or none does: Error(invalid_argument)
/// when the slices are not contiguous in rank order from row 0, when Q, k, the metric, the
/// method or d differ between ranks, when k > the total rows, or for anything simkit::knn
/// refuses on some rank's slice (that rank's message, prefixed with its rank).
KnnResult knn(const Context& ctx, MPI_Comm comm, MatrixView<const float> Q, MatrixView<const float> X_local,
              int64_t row_offset, int64_t k, Metric metric, KnnMethod method = KnnMethod::automatic, int root = 0);

/// Rank r's contiguous share of n rows split over `ranks`: the first n % ranks ranks get one row
/// more. Returns {first row, row count}.
struct RowSlice {
  int64_t first = 0;
  int64_t rows = 0;
};
RowSlice row_slice(int64_t n, int ranks, int rank);

}  // namespace simkit::mpi
