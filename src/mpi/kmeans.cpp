// simkit::mpi::kmeans (include/simkit/mpi.hpp): the one-process k-means (core/kmeans.cpp) over
// points split in contiguous slices across ranks, with the same bits.
//
// Why the bits are the one-process ones: the code that draws the seeds and runs Lloyd's loop is
// the one-process code itself (core/kmeans_train.hpp), running on every rank with the same
// random sequence over the interfaces of mpi/kmeans_slice.hpp. Below those interfaces, a
// point's label and cost depend on that point and the centroids alone, so each rank's engine
// gives the one-process values for its points; every float64 sum that runs over points (the
// inertia, the centroid sums, k-means++'s cumulative weights) is continued from rank to rank in
// the one-process order of additions (mpi/chunked_sum.hpp); and every choice of points (a draw,
// the farthest points) is made by a total order on (value, global index) that no split changes.

#include <simkit/error.hpp>
#include <simkit/mpi.hpp>

#include <cstring>
#include <string>

#include "core/backend.hpp"
#include "core/kmeans_train.hpp"
#include "core/parallel.hpp"
#include "core/sample_rows.hpp"
#include "core/validate.hpp"
#include "mpi/collective.hpp"
#include "mpi/kmeans_slice.hpp"

namespace simkit::mpi {

namespace {

using mpi_detail::agree;
using mpi_detail::agree_on;
using mpi_detail::KmeansSlice;
constexpr const char* kWho = "simkit::mpi::kmeans";

using mpi_detail::bits_of;

/// Everything checked before any work, errors agreed on every rank: this rank's slice, the
/// arguments every rank must pass the same, the layout, the parameters against the total rows,
/// NaN / Inf anywhere. Fills the layout part of `s`.
void check_call(const Context& ctx, KmeansSlice& s, int64_t row_offset, const KmeansParams& p) {
  std::string local;
  if (s.X.where != Memory::host)
    local = "the data slice must be in host memory";
  else if (s.X.rows < 0 || row_offset < 0)
    local = "negative rows or row offset";
  else if (s.X.rows > 0 && (s.X.cols <= 0 || s.X.data == nullptr))
    local = "the data slice has rows but no columns or no data";
  agree(s.comm, kWho, ErrorCode::invalid_argument, local);
  s.d = mpi_detail::common_cols(s.comm, kWho, s.X.rows, s.X.cols);
  const bool given = p.init == KmeansInit::given;
  const bool initial_fits = given && p.initial.data != nullptr && p.initial.where == Memory::host &&
                            p.initial.rows == p.k && p.initial.cols == s.d;
  mpi_detail::check_same(
      s.comm, kWho,
      {{"k", p.k},
       {"metric", static_cast<int64_t>(p.metric)},
       {"init", static_cast<int64_t>(p.init)},
       {"max_iterations", p.max_iterations},
       {"tolerance", bits_of(p.tolerance)},
       {"seed", static_cast<int64_t>(p.seed)},
       {"sample", p.sample},
       {"initial centroids",
        initial_fits ? mpi_detail::fingerprint(p.initial.data, size_t(p.k * s.d) * sizeof(float)) : -1}});
  s.layout = mpi_detail::contiguous_layout(s.comm, kWho, row_offset, s.X.rows, s.n);
  s.first = row_offset;
  if (s.n == 0) throw Error(ErrorCode::invalid_argument, std::string(kWho) + ": no rank holds any rows");
  // The same n, d and parameters on every rank: the same outcome everywhere, no agreement needed.
  try {
    detail::check_kmeans_params(s.n, s.d, p, p.sample > 0 && p.sample < s.n ? p.sample : s.n);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(kWho) + ": " + e.what());
  }
  agree_on(s.comm, kWho, [&] {
    if (s.X.rows > 0) detail::check_finite(ctx, s.X, "data");
    if (given) detail::check_finite(ctx, p.initial, "initial centroids");
  });
}

/// Seeding and Lloyd's loop with the points where they are.
void train_spread(const Context& ctx, KmeansSlice& s, const KmeansParams& p, detail::SplitMix64& rng, KmeansResult& r) {
  switch (p.init) {
    case KmeansInit::given: r.centroids = detail::given_centroids(p, s.d); break;
    case KmeansInit::random:
      r.centroids = mpi_detail::gather_rows(s.comm, s.layout, s.X, s.d, detail::draw_sample_rows(s.n, p.k, rng));
      break;
    case KmeansInit::kmeans_plus_plus: {
      mpi_detail::SpreadSeedPoints points(s);
      r.centroids = detail::seed_plus_plus(points, p.k, s.d, rng);
      break;
    }
  }
  mpi_detail::SpreadPoints points(s);
  detail::lloyd(ctx, p, points, r);
  r.inertia = r.history.back();
  int64_t local[2] = {0, 0}, all[2];
  if (s.engine) local[0] = s.engine->stats().exact_fallbacks, local[1] = s.engine->stats().rows;
  MPI_Allreduce(local, all, 2, MPI_INT64_T, MPI_SUM, s.comm);
  r.points_ranked_exactly = all[0];
  r.assignments = all[1];
}

/// `p.sample` points drawn as one process draws them, gathered on every rank, trained on by the
/// one-process code on each (the same bits everywhere); then every point labelled where it is.
void train_sampled(const Context& ctx, const detail::Backend& backend, KmeansSlice& s, const KmeansParams& p,
                   detail::SplitMix64& rng, KmeansResult& r) {
  const Matrix<float> T =
      mpi_detail::gather_rows(s.comm, s.layout, s.X, s.d, detail::draw_sample_rows(s.n, p.sample, rng));
  detail::AssignStats trained;
  agree_on(s.comm, kWho, [&] { trained = detail::train_kmeans(ctx, backend, T.view(), p, rng, r)->stats(); });
  mpi_detail::assign_slice(s, r.centroids.view());
  r.inertia = mpi_detail::slice_inertia(s);
  int64_t local = s.engine ? s.engine->stats().exact_fallbacks : 0, all = 0;
  MPI_Allreduce(&local, &all, 1, MPI_INT64_T, MPI_SUM, s.comm);
  r.points_ranked_exactly = all + trained.exact_fallbacks;
  r.assignments = trained.rows + s.n;
}

/// The last assignment's labels, n x 1 on root in global order (0 x 0 elsewhere).
Matrix<int64_t> gather_labels(const KmeansSlice& s, int root) {
  std::vector<int64_t> mine(static_cast<size_t>(s.X.rows));
  if (s.engine) s.engine->labels(mine.data());
  if (s.rank != root) {
    mpi_detail::send_all(mine.data(), s.X.rows, MPI_INT64_T, root, s.comm);
    return Matrix<int64_t>(0, 0);
  }
  Matrix<int64_t> labels(s.n, 1);
  for (int r = 0; r < s.ranks; ++r) {
    int64_t* at = labels.data() + s.layout[2 * size_t(r)];
    if (r == root)
      std::copy(mine.begin(), mine.end(), at);
    else
      mpi_detail::recv_all(at, s.layout[2 * size_t(r) + 1], MPI_INT64_T, r, s.comm);
  }
  return labels;
}

}  // namespace

KmeansResult kmeans(const Context& ctx, MPI_Comm comm, MatrixView<const float> X_local, int64_t row_offset,
                    const KmeansParams& params, int root) {
  KmeansSlice s;
  s.comm = comm;
  s.rank = mpi_detail::comm_rank(comm);
  s.ranks = mpi_detail::comm_size(comm);
  if (root < 0 || root >= s.ranks)
    throw Error(ErrorCode::invalid_argument, std::string(kWho) + ": root " + std::to_string(root) +
                                                 " is not a rank of the communicator (size " + std::to_string(s.ranks) +
                                                 ")");
  s.X = X_local;
  check_call(ctx, s, row_offset, params);
  s.spherical = params.metric == Metric::cosine;
  s.threads = detail::cpu_threads(ctx);
  const detail::Backend* backend = nullptr;
  agree_on(comm, kWho, [&] {
    backend = &detail::backend_for(ctx, {Memory::host});
    if (s.X.rows > 0) s.engine = backend->kmeans_engine(ctx, s.X, s.spherical);
  });

  detail::SplitMix64 rng(params.seed);
  KmeansResult r;
  if (params.sample > 0 && params.sample < s.n)
    train_sampled(ctx, *backend, s, params, rng, r);
  else
    train_spread(ctx, s, params, rng, r);
  r.labels = gather_labels(s, root);
  if (ctx.progress) ctx.progress(1.0);
  return r;
}

}  // namespace simkit::mpi
