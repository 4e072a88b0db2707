// apps/cli/mpi_launch.hpp: MPI for the commands that split their work over ranks.

#include "mpi_launch.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/io.hpp>

namespace simkit::cli {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

MpiScope::MpiScope() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
}

MpiScope::~MpiScope() { MPI_Finalize(); }

void agree_on_error(int code, const std::string& message) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int mine = message.empty() ? std::numeric_limits<int>::max() : rank, first = 0;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == std::numeric_limits<int>::max()) return;
  int head[2] = {code, static_cast<int>(message.size())};
  MPI_Bcast(head, 2, MPI_INT, first, MPI_COMM_WORLD);
  std::string text = message;
  text.resize(static_cast<size_t>(head[1]));
  MPI_Bcast(text.data(), head[1], MPI_CHAR, first, MPI_COMM_WORLD);
  throw Error(static_cast<ErrorCode>(head[0]), (first == 0 ? "" : "rank " + std::to_string(first) + ": ") + text);
}

Context rank_context(const RunOptions& options) {
  Context ctx = make_context(options);
  if (ctx.device == Device::cpu || !ctx.gpu_ids.empty()) return ctx;  // gpu:0,1 splits within the rank
  // The launcher's local rank (Open MPI; else the PMIx / PMI one) picks among this host's GPUs.
  int local = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    if (const char* v = std::getenv(name)) {
      local = std::max(0, std::atoi(v));
      break;
    }
  const auto visible = gpus();
  if (!visible.empty()) ctx.gpu_id = visible[size_t(local) % visible.size()].id;
  return ctx;
}

BaseSlice read_base_slice(const std::string& path, std::string_view option, int ranks, int rank) {
  BaseSlice b;
  const std::string name(option);
  try {
    const MatrixShape shape = read_matrix_shape(path);
    b.rows = shape.rows;
    b.cols = shape.cols;
  } catch (const Error& e) {
    throw Error(e.code(), name + ": " + e.what());
  }
  if (b.rows == 0 || b.cols == 0)
    bad(name + ": " + quoted_path(path) + " holds no vectors (" + std::to_string(b.rows) + " x " +
        std::to_string(b.cols) + ")");
  b.slice = mpi::row_slice(b.rows, ranks, rank);
  try {
    b.X = read_matrix_rows(path, b.slice.first, b.slice.rows);
  } catch (const Error& e) {
    throw Error(e.code(), name + ": " + e.what());
  }
  return b;
}

Matrix<float> read_points_on_root(const std::string& path, std::string_view option) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Matrix<float> M;
  on_every_rank([&] {
    if (rank == 0) M = read_points(path, option);
  });
  int64_t shape[2] = {M.rows(), M.cols()};
  MPI_Bcast(shape, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (rank != 0) M = Matrix<float>(shape[0], shape[1]);
  // In pieces of at most 2^30 values: MPI counts are int.
  const int64_t total = M.size(), piece = int64_t{1} << 30;
  for (int64_t at = 0; at < total; at += piece)
    MPI_Bcast(M.data() + at, static_cast<int>(std::min(piece, total - at)), MPI_FLOAT, 0, MPI_COMM_WORLD);
  return M;
}

std::vector<double> scatter_slices(const std::vector<double>& all, int64_t n) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const mpi::RowSlice mine = mpi::row_slice(n, ranks, rank);
  std::vector<double> out(static_cast<size_t>(mine.rows));
  // Point to point in pieces of at most 2^30 values: MPI counts are int.
  const int64_t piece = int64_t{1} << 30;
  if (rank == 0) {
    std::copy_n(all.begin(), mine.rows, out.begin());
    for (int r = 1; r < ranks; ++r) {
      const mpi::RowSlice s = mpi::row_slice(n, ranks, r);
      for (int64_t at = 0; at < s.rows; at += piece)
        MPI_Send(all.data() + s.first + at, static_cast<int>(std::min(piece, s.rows - at)), MPI_DOUBLE, r, 0,
                 MPI_COMM_WORLD);
    }
  } else {
    for (int64_t at = 0; at < mine.rows; at += piece)
      MPI_Recv(out.data() + at, static_cast<int>(std::min(piece, mine.rows - at)), MPI_DOUBLE, 0, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  }
  return out;
}

std::string rank_devices(const Context& ctx) {
  const int mine = ctx.device != Device::cpu && resolve_device(ctx) == Device::gpu ? ctx.gpu_id : -1;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<int> all(static_cast<size_t>(rank == 0 ? ranks : 1));
  MPI_Gather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank != 0 || std::all_of(all.begin(), all.end(), [](int g) { return g < 0; })) return "";
  if (!ctx.gpu_ids.empty()) {
    std::string list;
    for (int g : ctx.gpu_ids) list += (list.empty() ? "" : ",") + std::to_string(g);
    return "; each rank over GPUs " + list;
  }
  std::string out = "; GPU per rank ";
  for (int p = 0; p < ranks && p < 8; ++p)
    out += (p > 0 ? ", " : "") + (all[size_t(p)] < 0 ? std::string("cpu") : std::to_string(all[size_t(p)]));
  if (ranks > 8) out += ", ...";
  return out;
}

std::string rows_per_rank(int64_t n, int ranks) {
  std::string rows;
  for (int p = 0; p < ranks && p < 8; ++p) rows += (p > 0 ? ", " : "") + with_commas(mpi::row_slice(n, ranks, p).rows);
  if (ranks > 8) rows += ", ...";
  return rows;
}

}  // namespace simkit::cli
