#pragma once
// What a command needs to split its work over MPI ranks (`mpirun -n P simkit <command>`): knowing
// it was launched so, MPI for the life of the command, errors agreed on by every rank, the Context
// of a rank (a GPU per rank), and a rank's contiguous slice of a base file. Built only with MPI
// (SIMKIT_CLI_MPI); main.cpp lists the commands that use it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include <simkit/error.hpp>
#include <simkit/matrix.hpp>
#include <simkit/mpi.hpp>

#include "cli_support.hpp"

namespace simkit::cli {

/// Launched by mpirun / mpiexec (Open MPI, or a PMIx / PMI launcher such as srun)?
bool launched_by_mpi();

/// MPI for the life of one command, finalized also when the command throws.
struct MpiScope {
  MpiScope();
  ~MpiScope();
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  int rank = 0, ranks = 1;
};

/// Throws on every rank the error of the lowest rank whose `message` is not empty (after
/// "rank r: " unless r is 0), so that no rank waits in a collective another has left.
void agree_on_error(int code, const std::string& message);

/// Runs `body` on every rank, then agrees on what it threw (agree_on_error).
template <class Body>
void on_every_rank(Body body) {
  std::string message;
  int code = static_cast<int>(ErrorCode::invalid_argument);
  try {
    body();
  } catch (const Error& e) {
    message = e.what();
    code = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    message = e.what();
  }
  agree_on_error(code, message);
}

/// make_context(options), where a GPU device is this rank's: rank r of a host takes GPU
/// r % (GPUs visible), so P ranks on a host with G GPUs share them round robin.
Context rank_context(const RunOptions& options);

/// Rank `rank` of `ranks`'s contiguous slice of the point file at `path` (mpi::row_slice of its
/// rows), read alone; the whole file's shape in `rows` and `cols`. Errors name `option`.
struct BaseSlice {
  Matrix<float> X;
  mpi::RowSlice slice;
  int64_t rows = 0, cols = 0;
};
BaseSlice read_base_slice(const std::string& path, std::string_view option, int ranks, int rank);

/// Rank 0 reads the point file at `path` (read_points: errors name `option`), and every rank
/// receives it: the queries are read once and broadcast, not read by every rank. Collective;
/// a read error is agreed on (every rank throws it).
Matrix<float> read_points_on_root(const std::string& path, std::string_view option);

/// Rank 0's `all` (n values, one per base row; ignored elsewhere) cut by mpi::row_slice: each rank
/// receives its slice's values (--weights). Collective.
std::vector<double> scatter_slices(const std::vector<double>& all, int64_t n);

/// "1,000, 1,000, 999" (the first eight ranks' rows, then "...").
std::string rows_per_rank(int64_t n, int ranks);

/// Where each rank runs, for rank 0's summary line: "" when every rank runs on the CPU, else
/// "; GPU per rank 0, 1, 0" (the first eight ranks; "cpu" for a rank without one) or, when
/// every rank splits over several GPUs, "; each rank over GPUs 0,1". Collective.
std::string rank_devices(const Context& ctx);

}  // namespace simkit::cli
