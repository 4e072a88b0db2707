#pragma once
// k-NN, the Gauss transform and k-means over MPI ranks (libsimkit_mpi; built when CMake finds
// MPI, SIMKIT_MPI=AUTO|ON|OFF).
//
// The base set is split into contiguous row slices, one per rank in rank order: rank r holds
// rows [offset_r, offset_r + n_r) of the whole base, with offset_0 = 0 and offset_{r+1} =
// offset_r + n_r (a rank may hold no rows). Every rank passes the same queries, k, metric and
// method. Each rank runs simkit::knn on its slice; the per-rank lists are gathered on `root`
// and merged by simkit's rule (float64 key, then the lower id), so the result is the one-process
// answer on the whole base: the same ids, the same float32 values, bit for bit, for every
// metric; see docs/ARCHITECTURE.md ("MPI ranks") for why and for pearson's one caveat.
//
// gauss_transform and kmeans split their sources / points the same way (below).
//
// Link simkit::simkit_mpi. The caller owns MPI (MPI_Init / MPI_Finalize); every rank of `comm`
// must make the call (it is collective). The matrices must be in host memory. Errors are agreed
// on: every rank throws the same Error, or none does.

#include <cstdint>

#include <mpi.h>

#include <vector>

#include <simkit/context.hpp>
#include <simkit/gauss.hpp>
#include <simkit/kmeans.hpp>
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

/// The Gauss transform of the whole source set (simkit::gauss_transform) at every row of Y.
///
/// `X_local` is this rank's slice of the sources (n_r x d, n_r >= 0, from global row
/// `row_offset`) and `q_local` its n_r weights (or empty: all ones). Every rank passes the same
/// targets Y, h and options. Each rank with sources runs simkit::gauss_transform on its slice
/// (a rank without any contributes nothing), and root adds the partial sums in rank order, in
/// float64. Returns the m values on root, an empty vector elsewhere.
///
/// What holds: direct gives the one-process values up to the rounding of that last sum (within
/// 1e-12 relative where the terms do not cancel). ifgt keeps its guarantee, |error| <= eps *
/// sum|q|, since each rank's error is at most eps * its own sum|q| and those add up; its values
/// are not the one-process ones (each slice has its own clusters). automatic is decided once
/// for all ranks: the IFGT where every rank's slice can run it and the slowest rank's predicted
/// IFGT time beats its predicted direct time. `report` (every rank's the same) gives the method
/// that ran and, for ifgt, all ranks' clusters and the largest order, cut-off and bound.
///
/// Errors (collective): Error(invalid_argument) when the slices are not contiguous, when Y, h
/// or the options differ between ranks, when no rank holds sources, or for anything
/// simkit::gauss_transform refuses on some rank's slice (that rank's message, with its rank).
std::vector<double> gauss_transform(const Context& ctx, MPI_Comm comm, MatrixView<const float> X_local,
                                    int64_t row_offset, const std::vector<double>& q_local, MatrixView<const float> Y,
                                    double h, const GaussOptions& options = {}, int root = 0,
                                    GaussReport* report = nullptr);

/// simkit::kmeans on the whole point set, split in slices: `X_local` is this rank's (n_r x d,
/// n_r >= 0, from global row `row_offset`); every rank passes the same params.
///
/// The result is simkit::kmeans's on the concatenation of the slices, bit for bit, for any
/// number of ranks, on CPU ranks (Context::device cpu): the same labels, centroids, inertia,
/// history, iterations and empty_reseeded (points_ranked_exactly, a statistic of the fast
/// path, may differ). The centroids, inertia and history are returned on every rank; the labels
/// (n x 1, global order) on root, 0 x 0 elsewhere. on_iteration and ctx.progress are called on
/// every rank. Why the bits are the same: docs/ARCHITECTURE.md ("MPI ranks").
///
/// GPU ranks: each rank's GPU assigns its points (the same labels as the CPU, by the shared
/// rule) and the sums run on the host by the CPU's rules, so the centroids follow the labels;
/// but one GPU process sums its inertia on the device in an order of its own, so no bit-for-bit
/// claim is made against a one-process GPU run.
///
/// With params.sample, the sampled rows (the ones one process draws) are gathered on every rank
/// and each rank trains on them with the one-process code; every rank then labels its own
/// points. Errors (collective): as simkit::kmeans's (k > the total rows, NaN / Inf on any rank,
/// ...), and Error(invalid_argument) when the slices are not contiguous or have different
/// dimensions, or when the params differ between ranks.
KmeansResult kmeans(const Context& ctx, MPI_Comm comm, MatrixView<const float> X_local, int64_t row_offset,
                    const KmeansParams& params, int root = 0);

/// Rank r's contiguous share of n rows split over `ranks`: the first n % ranks ranks get one row
/// more. Returns {first row, row count}.
struct RowSlice {
  int64_t first = 0;
  int64_t rows = 0;
};
RowSlice row_slice(int64_t n, int ranks, int rank);

}  // namespace simkit::mpi
