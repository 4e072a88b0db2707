#pragma once
// What every simkit::mpi entry needs from MPI before and after its own work: the rank and the
// size, errors agreed on by every rank (so no rank waits in a collective another has left),
// checks that the ranks were given the same arguments, and the contiguous row layout of the
// ranks' slices.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

#include <simkit/error.hpp>
#include <simkit/matrix.hpp>

namespace simkit::mpi_detail {

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

/// Collective: when some rank has an error (a non-empty `message`), every rank throws the one of
/// the lowest such rank as Error(code of that rank, "<who>: rank <r>: <message>"); otherwise
/// returns on every rank.
void agree(MPI_Comm comm, const char* who, ErrorCode code, const std::string& message);

/// Runs `body` on this rank, then agree()s on whatever it threw (Error keeps its code).
template <class Body>
void agree_on(MPI_Comm comm, const char* who, Body&& body) {
  ErrorCode code = ErrorCode::invalid_argument;
  std::string message;
  try {
    body();
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  }
  agree(comm, who, code, message);
}

/// The bits of v, for checks that ranks hold the very same double.
inline int64_t bits_of(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// FNV-1a over `bytes` bytes, so that ranks can check that they hold the same array.
int64_t fingerprint(const void* data, size_t bytes);

/// A value every rank must pass the same, with what to call it in the error.
struct Same {
  const char* what;
  int64_t value;
};
/// Collective: throws Error(invalid_argument) on every rank, naming the first value on which
/// the ranks differ.
void check_same(MPI_Comm comm, const char* who, const std::vector<Same>& values);

/// Collective: the ranks' slices {first row, rows}, gathered in rank order; throws
/// Error(invalid_argument) on every rank unless they are contiguous from row 0. Returns the
/// gathered layout (2 values per rank) and sets `total` to the rows of all of them.
std::vector<int64_t> contiguous_layout(MPI_Comm comm, const char* who, int64_t first, int64_t rows, int64_t& total);

/// The rank whose slice of `layout` (contiguous_layout's) holds global row `row` (< the total).
int owner_of(const std::vector<int64_t>& layout, int64_t row);

/// Collective: the columns of the ranks that hold rows (a rank with none may pass any); throws
/// Error(invalid_argument) on every rank when they differ. 0 when no rank holds rows.
int64_t common_cols(MPI_Comm comm, const char* who, int64_t rows, int64_t cols);

/// MPI_Send / MPI_Recv / MPI_Bcast of `count` values of `type` in pieces of at most 2^30 (MPI
/// counts are int).
void send_all(const void* data, int64_t count, MPI_Datatype type, int dest, MPI_Comm comm);
void recv_all(void* data, int64_t count, MPI_Datatype type, int source, MPI_Comm comm);
void bcast_all(void* data, int64_t count, MPI_Datatype type, int root, MPI_Comm comm);

/// The global rows `rows` (ascending) gathered on every rank, in that order, from the ranks
/// that hold them (`X_local`: this rank's slice of `layout`, d columns).
Matrix<float> gather_rows(MPI_Comm comm, const std::vector<int64_t>& layout, MatrixView<const float> X_local, int64_t d,
                          const std::vector<int64_t>& rows);

}  // namespace simkit::mpi_detail
