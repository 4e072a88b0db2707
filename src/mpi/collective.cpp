// src/mpi/collective.hpp: the agreement every simkit::mpi entry makes with the other ranks.

#include "mpi/collective.hpp"

#include <climits>
#include <cstring>

namespace simkit::mpi_detail {

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

void agree(MPI_Comm comm, const char* who, ErrorCode code, const std::string& message) {
  const int rank = comm_rank(comm);
  int mine = message.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int head[2] = {static_cast<int>(code), static_cast<int>(message.size())};
  MPI_Bcast(head, 2, MPI_INT, first, comm);
  std::string text(static_cast<size_t>(head[1]), '\0');
  if (rank == first) text = message;
  MPI_Bcast(text.data(), head[1], MPI_CHAR, first, comm);
  throw Error(static_cast<ErrorCode>(head[0]), std::string(who) + ": rank " + std::to_string(first) + ": " + text);
}

int64_t fingerprint(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  int64_t out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

void check_same(MPI_Comm comm, const char* who, const std::vector<Same>& values) {
  const int count = static_cast<int>(values.size());
  std::vector<int64_t> mine(values.size()), lo(values.size()), hi(values.size());
  for (size_t i = 0; i < values.size(); ++i) mine[i] = values[i].value;
  MPI_Allreduce(mine.data(), lo.data(), count, MPI_INT64_T, MPI_MIN, comm);
  MPI_Allreduce(mine.data(), hi.data(), count, MPI_INT64_T, MPI_MAX, comm);
  for (size_t i = 0; i < values.size(); ++i)
    if (lo[i] != hi[i])
      throw Error(ErrorCode::invalid_argument, std::string(who) + ": the ranks disagree on the " + values[i].what +
                                                   " (every rank must pass the same)");
}

std::vector<int64_t> contiguous_layout(MPI_Comm comm, const char* who, int64_t first, int64_t rows, int64_t& total) {
  const int ranks = comm_size(comm);
  std::vector<int64_t> layout(2 * static_cast<size_t>(ranks));
  const int64_t mine[2] = {first, rows};
  MPI_Allgather(mine, 2, MPI_INT64_T, layout.data(), 2, MPI_INT64_T, comm);
  total = 0;
  for (int r = 0; r < ranks; ++r) {
    if (layout[2 * size_t(r)] != total)
      throw Error(ErrorCode::invalid_argument, std::string(who) + ": rank " + std::to_string(r) + " starts at row " +
                                                   std::to_string(layout[2 * size_t(r)]) +
                                                   " but the slices before it end at row " + std::to_string(total) +
                                                   " (slices must be contiguous in rank order from row 0)");
    total += layout[2 * size_t(r) + 1];
  }
  return layout;
}

}  // namespace simkit::mpi_detail
