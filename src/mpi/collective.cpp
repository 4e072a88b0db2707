// src/mpi/collective.hpp: the agreement every simkit::mpi entry makes with the other ranks.

#include "mpi/collective.hpp"

#include <algorithm>
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

int owner_of(const std::vector<int64_t>& layout, int64_t row) {
  // The last rank whose slice starts at or before `row` and holds rows: slices are contiguous.
  int owner = 0;
  for (size_t r = 0; 2 * r < layout.size(); ++r)
    if (layout[2 * r] <= row && layout[2 * r + 1] > 0) owner = static_cast<int>(r);
  return owner;
}

int64_t common_cols(MPI_Comm comm, const char* who, int64_t rows, int64_t cols) {
  // Minima of cols and -cols: the least and the greatest; a rank without rows is neutral.
  const int64_t mine[2] = {rows > 0 ? cols : INT64_MAX, rows > 0 ? -cols : INT64_MAX};
  int64_t agreed[2];
  MPI_Allreduce(mine, agreed, 2, MPI_INT64_T, MPI_MIN, comm);
  if (agreed[0] == INT64_MAX) return 0;
  if (agreed[0] != -agreed[1])
    throw Error(ErrorCode::invalid_argument, std::string(who) + ": the ranks' slices have different dimensions (" +
                                                 std::to_string(agreed[0]) + " and " + std::to_string(-agreed[1]) +
                                                 " columns)");
  return agreed[0];
}

namespace {
constexpr int64_t kPiece = int64_t{1} << 30;
constexpr int kTag = 35;

int64_t type_bytes(MPI_Datatype type) {
  int bytes = 0;
  MPI_Type_size(type, &bytes);
  return bytes;
}
}  // namespace

void send_all(const void* data, int64_t count, MPI_Datatype type, int dest, MPI_Comm comm) {
  const auto* p = static_cast<const char*>(data);
  for (int64_t at = 0; at < count; at += kPiece)
    MPI_Send(p + at * type_bytes(type), static_cast<int>(std::min(kPiece, count - at)), type, dest, kTag, comm);
}

void recv_all(void* data, int64_t count, MPI_Datatype type, int source, MPI_Comm comm) {
  auto* p = static_cast<char*>(data);
  for (int64_t at = 0; at < count; at += kPiece)
    MPI_Recv(p + at * type_bytes(type), static_cast<int>(std::min(kPiece, count - at)), type, source, kTag, comm,
             MPI_STATUS_IGNORE);
}

void bcast_all(void* data, int64_t count, MPI_Datatype type, int root, MPI_Comm comm) {
  auto* p = static_cast<char*>(data);
  for (int64_t at = 0; at < count; at += kPiece)
    MPI_Bcast(p + at * type_bytes(type), static_cast<int>(std::min(kPiece, count - at)), type, root, comm);
}

Matrix<float> gather_rows(MPI_Comm comm, const std::vector<int64_t>& layout, MatrixView<const float> X_local, int64_t d,
                          const std::vector<int64_t>& rows) {
  const int ranks = comm_size(comm), rank = comm_rank(comm);
  // `rows` ascending and the slices contiguous: rank r's share is one run of `rows`, and the
  // runs in rank order are `rows` in order. A row is one element of `row_type`, so the counts
  // are rows, not values.
  std::vector<int> counts(static_cast<size_t>(ranks)), displs(static_cast<size_t>(ranks));
  int at = 0;
  for (int r = 0; r < ranks; ++r) {
    const int64_t lo = layout[2 * size_t(r)], hi = lo + layout[2 * size_t(r) + 1];
    counts[size_t(r)] = static_cast<int>(std::lower_bound(rows.begin(), rows.end(), hi) -
                                         std::lower_bound(rows.begin(), rows.end(), lo));
    displs[size_t(r)] = at;
    at += counts[size_t(r)];
  }
  Matrix<float> out(static_cast<int64_t>(rows.size()), d);
  std::vector<float> mine(static_cast<size_t>(counts[size_t(rank)] * d));
  const int64_t first = layout[2 * size_t(rank)];
  for (int i = 0; i < counts[size_t(rank)]; ++i)
    std::copy_n(X_local.row(rows[size_t(displs[size_t(rank)] + i)] - first), d, mine.data() + i * d);
  MPI_Datatype row_type;
  MPI_Type_contiguous(static_cast<int>(d), MPI_FLOAT, &row_type);
  MPI_Type_commit(&row_type);
  MPI_Allgatherv(mine.data(), counts[size_t(rank)], row_type, out.data(), counts.data(), displs.data(), row_type, comm);
  MPI_Type_free(&row_type);
  return out;
}

}  // namespace simkit::mpi_detail
