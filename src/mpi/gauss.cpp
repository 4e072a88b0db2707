// simkit::mpi::gauss_transform (include/simkit/mpi.hpp): every rank runs simkit::gauss_transform
// on its slice of the sources against all the targets, and root adds the ranks' partial sums in
// rank order, in float64. The transform is a sum over sources, so the split changes only how
// the sum is bracketed: the direct method's values are the one-process ones up to rounding; the
// IFGT's error bounds add up (below).

#include <simkit/error.hpp>
#include <simkit/mpi.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/backend.hpp"
#include "core/gauss_checks.hpp"
#include "core/ifgt_plan.hpp"
#include "mpi/collective.hpp"

namespace simkit::mpi {

namespace {

using mpi_detail::agree;
using mpi_detail::agree_on;
using mpi_detail::comm_rank;
using mpi_detail::comm_size;
constexpr const char* kWho = "simkit::mpi::gauss_transform";

using mpi_detail::bits_of;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// `automatic` decided once for all ranks: each rank holding sources plans its slice as the
/// one-process call would, and the IFGT runs only where every rank can run it and the slowest
/// rank's predicted IFGT beats the slowest rank's predicted direct sum (the ranks run side by
/// side, so the slowest sets the time). Every rank computes the same answer from the same
/// gathered predictions.
GaussMethod decide(const Context& ctx, MPI_Comm comm, MatrixView<const float> X, MatrixView<const float> Y, double h,
                   const GaussOptions& options, std::string& note) {
  double mine[4] = {0, 1, 0, 0};  // holds sources, feasible, IFGT seconds, direct seconds
  agree_on(comm, kWho, [&] {
    if (X.rows == 0) return;
    const detail::Backend& backend = detail::backend_for(ctx, {X.where, Y.where});
    const detail::IfgtChoice choice =
        detail::plan_ifgt(ctx, backend.device(), backend.ifgt_sample(ctx, X, Y), h, options);
    mine[0] = 1;
    mine[1] = choice.feasible ? 1 : 0;
    mine[2] = choice.ifgt_cost;
    mine[3] = choice.direct_cost;
  });
  const int ranks = comm_size(comm);
  std::vector<double> all(4 * static_cast<size_t>(ranks));
  MPI_Allgather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, comm);
  bool feasible = true;
  double ifgt = 0, direct = 0;
  for (int r = 0; r < ranks; ++r) {
    const double* p = all.data() + 4 * r;
    if (p[0] == 0) continue;
    feasible = feasible && p[1] != 0;
    ifgt = std::max(ifgt, p[2]);
    direct = std::max(direct, p[3]);
  }
  if (!feasible) {
    note = "auto: direct, the IFGT is infeasible on some rank's slice";
    return GaussMethod::direct;
  }
  const bool use_ifgt = ifgt < direct;
  note = std::string("auto: ") + (use_ifgt ? "ifgt" : "direct") + ", predicted IFGT " + num(ifgt) +
         (use_ifgt ? " s < direct " : " s >= direct ") + num(direct) + " s on the slowest rank";
  return use_ifgt ? GaussMethod::ifgt : GaussMethod::direct;
}

/// The ranks' reports as one: the method they agreed on; for the IFGT, every rank's clusters,
/// and the largest order, cut-off and bound (the bound that holds for the whole sum, since each
/// rank's error is at most its bound times its own sum|q|).
GaussReport combine(MPI_Comm comm, const GaussReport& mine, bool has_rows, GaussMethod method, double eps,
                    std::string note) {
  const int ranks = comm_size(comm);
  const double part[5] = {has_rows ? 1.0 : 0.0, double(mine.clusters), double(mine.order), mine.cutoff_radius,
                          mine.error_bound};
  std::vector<double> all(5 * static_cast<size_t>(ranks));
  MPI_Allgather(part, 5, MPI_DOUBLE, all.data(), 5, MPI_DOUBLE, comm);
  GaussReport r;
  r.method = method;
  r.note = std::move(note);
  for (int q = 0; q < ranks; ++q) {
    const double* p = all.data() + 5 * q;
    if (p[0] == 0) continue;
    r.clusters += int64_t(p[1]);
    r.order = std::max(r.order, int(p[2]));
    r.cutoff_radius = std::max(r.cutoff_radius, p[3]);
    r.error_bound = std::max(r.error_bound, p[4]);
  }
  if (method == GaussMethod::ifgt && r.error_bound > eps)
    r.note += std::string(r.note.empty() ? "" : "; ") + "the fixed order guarantees only " + num(r.error_bound) +
              " x sum|q|, above eps";
  return r;
}

/// Root adds the ranks' partial sums in rank order (the ranks without sources send nothing).
std::vector<double> sum_on_root(MPI_Comm comm, const std::vector<int64_t>& layout, std::vector<double> mine, int64_t m,
                                int root) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const bool has_rows = layout[2 * size_t(rank) + 1] > 0;
  if (rank != root) {
    if (has_rows) mpi_detail::send_all(mine.data(), m, MPI_DOUBLE, root, comm);
    return {};
  }
  std::vector<double> G, part(static_cast<size_t>(m));
  for (int r = 0; r < ranks; ++r) {
    if (layout[2 * size_t(r) + 1] == 0) continue;
    if (r != root) mpi_detail::recv_all(part.data(), m, MPI_DOUBLE, r, comm);
    const std::vector<double>& p = r == root ? mine : part;
    if (G.empty())
      G = p;
    else
      for (int64_t j = 0; j < m; ++j) G[size_t(j)] += p[size_t(j)];
  }
  return G;
}

}  // namespace

std::vector<double> gauss_transform(const Context& ctx, MPI_Comm comm, MatrixView<const float> X_local,
                                    int64_t row_offset, const std::vector<double>& q_local, MatrixView<const float> Y,
                                    double h, const GaussOptions& options, int root, GaussReport* report) {
  const int ranks = comm_size(comm);
  if (root < 0 || root >= ranks)
    throw Error(ErrorCode::invalid_argument, std::string(kWho) + ": root " + std::to_string(root) +
                                                 " is not a rank of the communicator (size " + std::to_string(ranks) +
                                                 ")");
  // 1. What must agree between ranks: the slices, the targets, h and the options.
  std::string local;
  if (X_local.where != Memory::host || Y.where != Memory::host)
    local = "the sources and the targets must be in host memory";
  else if (X_local.rows < 0 || row_offset < 0)
    local = "negative source rows or row offset";
  else if (X_local.rows > 0 && X_local.cols != Y.cols)
    local = "dimensions differ: targets have d = " + std::to_string(Y.cols) +
            ", the source slice d = " + std::to_string(X_local.cols);
  else if (!q_local.empty() && int64_t(q_local.size()) != X_local.rows)
    local = "the slice has " + std::to_string(X_local.rows) + " sources but " + std::to_string(q_local.size()) +
            " weights (pass one per source, or none for all ones)";
  agree(comm, kWho, ErrorCode::invalid_argument, local);
  const size_t y_bytes = Y.data != nullptr && Y.size() > 0 ? size_t(Y.size()) * sizeof(float) : 0;
  mpi_detail::check_same(comm, kWho,
                         {{"target rows", Y.rows},
                          {"target dimension", Y.cols},
                          {"target values", mpi_detail::fingerprint(Y.data, y_bytes)},
                          {"bandwidth", bits_of(h)},
                          {"method", static_cast<int64_t>(options.method)},
                          {"eps", bits_of(options.eps)},
                          {"ifgt_clusters", options.ifgt_clusters},
                          {"ifgt_order", options.ifgt_order}});
  int64_t n = 0;
  const std::vector<int64_t> layout = mpi_detail::contiguous_layout(comm, kWho, row_offset, X_local.rows, n);
  if (n == 0) throw Error(ErrorCode::invalid_argument, std::string(kWho) + ": no rank holds any sources");

  // 2. Each rank's checks as one process makes them, then the method, then the partial sums.
  const int64_t m = std::max<int64_t>(Y.rows, 0);
  std::vector<double> mine(static_cast<size_t>(m));
  const MatrixView<double> out(mine.data(), m, 1);
  agree_on(comm, kWho, [&] {
    if (X_local.rows > 0) detail::check_gauss_arguments(ctx, X_local, q_local, Y, h, out, options);
  });
  GaussOptions run = options;
  std::string note;
  if (options.method == GaussMethod::automatic) run.method = decide(ctx, comm, X_local, Y, h, options, note);
  GaussReport part;
  agree_on(comm, kWho, [&] {
    if (X_local.rows > 0) part = simkit::gauss_transform(ctx, X_local, q_local, Y, h, out, run);
  });
  // Collective, so made whether or not this rank asks for the report.
  const GaussReport combined = combine(comm, part, X_local.rows > 0, run.method, options.eps, std::move(note));
  if (report != nullptr) *report = combined;
  return sum_on_root(comm, layout, std::move(mine), m, root);
}

}  // namespace simkit::mpi
