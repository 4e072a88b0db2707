// simkit::mpi::kmeans and simkit::mpi::gauss_transform under `mpirun -n P` (tests/CMakeLists.txt
// runs it with P = 3) against the one-process calls on the whole set:
//   kmeans: labels, centroids, inertia, history, iterations, re-seeds bit-identical, for both
//           metrics, every init, with a sample, with a cluster that empties, with k > 32
//           (batched k-means++), over even slices and lopsided ones (a rank with 0 rows,
//           chunks of the update and blocks of the inertia straddling ranks);
//   gauss:  direct within 1e-12 relative, ifgt within its bound, one method on every rank;
//   errors: k > n, ranks disagreeing on the params, NaN on one rank: every rank throws.
// Plain main: exit 0 or 1.

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/mpi.hpp>

namespace {

int rank = 0, ranks = 1, failures = 0;

void fail(const std::string& what) {
  std::printf("FAIL: rank %d: %s\n", rank, what.c_str());
  ++failures;
}

/// n points around `centres` blobs (d dims), with a few exact duplicates.
simkit::Matrix<float> blobs(int64_t n, int64_t d, int centres, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> c(size_t(centres * d));
  for (float& v : c) v = 6.0f * normal(gen);
  simkit::Matrix<float> X(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) X(i, j) = c[size_t((i % centres) * d + j)] + normal(gen);
  for (int64_t i = 5; i < n; i += 17) std::memcpy(X.view().row(i), X.view().row(i / 3), sizeof(float) * size_t(d));
  return X;
}

/// Slices: even (row_slice), or lopsided: rank 0 none, rank 1 a few, the last the rest.
simkit::mpi::RowSlice slice_of(int64_t n, bool lopsided) {
  if (!lopsided) return simkit::mpi::row_slice(n, ranks, rank);
  const int64_t few = std::min<int64_t>(n, 131);
  if (rank == 0) return {0, ranks == 1 ? n : 0};
  if (rank == 1) return {0, ranks == 2 ? n : few};
  const int64_t rest = n - few, base = rest / (ranks - 2);
  const int64_t first = few + (rank - 2) * base;
  return {first, rank == ranks - 1 ? n - first : base};
}

bool same_bits(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

void compare_kmeans(const std::string& name, const simkit::Matrix<float>& X, const simkit::KmeansParams& p,
                    bool lopsided) {
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;
  const simkit::mpi::RowSlice s = slice_of(X.rows(), lopsided);
  const simkit::MatrixView<const float> slice(X.data() + s.first * X.cols(), s.rows, X.cols());
  const simkit::KmeansResult got = simkit::mpi::kmeans(ctx, MPI_COMM_WORLD, slice, s.first, p);
  const simkit::KmeansResult want = simkit::kmeans(ctx, X.view(), p);
  const std::string what = name + (lopsided ? " (lopsided)" : "");
  if (!same_bits(got.centroids.data(), want.centroids.data(), sizeof(float) * size_t(want.centroids.size())))
    fail(what + ": centroids differ");
  if (!same_bits(&got.inertia, &want.inertia, sizeof(double)))
    fail(what + ": inertia " + std::to_string(got.inertia) + " vs " + std::to_string(want.inertia));
  if (got.iterations != want.iterations || got.empty_reseeded != want.empty_reseeded ||
      got.assignments != want.assignments || got.history.size() != want.history.size() ||
      !same_bits(got.history.data(), want.history.data(), sizeof(double) * want.history.size()))
    fail(what + ": iterations / history / re-seeds / assignments differ");
  if (rank == 0 && (got.labels.rows() != X.rows() ||
                    !same_bits(got.labels.data(), want.labels.data(), sizeof(int64_t) * size_t(X.rows()))))
    fail(what + ": labels differ");
  if (name == "reseed" && want.empty_reseeded == 0) fail("the reseed case re-seeded nothing");
}

void kmeans_cases() {
  const simkit::Matrix<float> X = blobs(1000, 6, 4, 11), small = blobs(7, 3, 2, 12);
  for (const bool lopsided : {false, true})
    for (const simkit::Metric metric : {simkit::Metric::sqeuclidean, simkit::Metric::cosine})
      for (const simkit::KmeansInit init : {simkit::KmeansInit::kmeans_plus_plus, simkit::KmeansInit::random}) {
        simkit::KmeansParams p;
        p.k = 5;
        p.metric = metric;
        p.init = init;
        p.seed = 3;
        p.tolerance = 0;
        p.max_iterations = 8;
        const std::string name =
            std::string(simkit::to_string(metric)) + (init == simkit::KmeansInit::random ? " random" : " kmeans++");
        compare_kmeans(name, X, p, lopsided);
        p.sample = 300;
        compare_kmeans(name + " sample", X, p, lopsided);
        p.sample = 0;
        p.k = 40;  // two centres per k-means++ round
        compare_kmeans(name + " k = 40", X, p, lopsided);
      }
  // A centroid far from every point: its cluster empties and takes the farthest point.
  simkit::Matrix<float> initial(3, 6);
  for (int64_t j = 0; j < 6; ++j) initial(0, j) = X(0, j), initial(1, j) = X(1, j), initial(2, j) = 1e4f;
  simkit::KmeansParams p;
  p.k = 3;
  p.init = simkit::KmeansInit::given;
  p.initial = initial.view();
  for (const bool lopsided : {false, true}) compare_kmeans("reseed", X, p, lopsided);
  // One column of +-1e17 and small values, one cluster: its sums cancel, so their rounding (the
  // order of the additions) shows in the float32 centroid and in the inertia.
  simkit::Matrix<float> cancel = blobs(900, 4, 3, 13);
  for (int64_t i = 0; i < cancel.rows(); ++i)
    if (i % 10 == 0 || i % 10 == 5) cancel(i, 3) = i % 10 == 0 ? 1e17f : -1e17f;
  p = simkit::KmeansParams{};
  p.k = 1;
  p.max_iterations = 2;
  for (const bool lopsided : {false, true}) compare_kmeans("cancelling sums", cancel, p, lopsided);
  p = simkit::KmeansParams{};
  p.k = 7;  // k = n: every point its own centre
  compare_kmeans("k = n = 7", small, p, false);
}

void gauss_cases() {
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;
  const simkit::Matrix<float> X = blobs(503, 3, 5, 21), Y = blobs(37, 3, 5, 22);
  std::vector<double> q(size_t(X.rows()));
  for (size_t i = 0; i < q.size(); ++i) q[i] = 0.5 + double(i % 7);
  double sum_q = 0;
  for (double v : q) sum_q += v;
  const double h = 4.0;
  for (const bool lopsided : {false, true}) {
    const simkit::mpi::RowSlice s = slice_of(X.rows(), lopsided);
    const simkit::MatrixView<const float> slice(X.data() + s.first * X.cols(), s.rows, X.cols());
    const std::vector<double> q_local(q.begin() + s.first, q.begin() + s.first + s.rows);
    simkit::GaussOptions direct;
    direct.method = simkit::GaussMethod::direct;
    const std::vector<double> want = simkit::gauss_transform(ctx, X.view(), q, Y.view(), h, direct);
    for (const simkit::GaussMethod method :
         {simkit::GaussMethod::direct, simkit::GaussMethod::ifgt, simkit::GaussMethod::automatic}) {
      simkit::GaussOptions o;
      o.method = method;
      o.eps = 1e-5;
      simkit::GaussReport report;
      const std::vector<double> got =
          simkit::mpi::gauss_transform(ctx, MPI_COMM_WORLD, slice, s.first, q_local, Y.view(), h, o, 0, &report);
      int methods[2] = {int(report.method), -int(report.method)};
      MPI_Allreduce(MPI_IN_PLACE, methods, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (methods[0] != -methods[1]) fail("the ranks report different methods");
      if (rank != 0) continue;
      if (got.size() != want.size()) {
        fail("gauss: wrong length");
        continue;
      }
      double worst = 0;
      for (size_t j = 0; j < want.size(); ++j) {
        const double err = std::abs(got[j] - want[j]);
        worst = std::max(worst, report.method == simkit::GaussMethod::direct ? err / std::abs(want[j]) : err / sum_q);
      }
      const double limit = report.method == simkit::GaussMethod::direct ? 1e-12 : report.error_bound;
      if (!(worst <= limit))
        fail(std::string("gauss ") + simkit::to_string(method) + ": error " + std::to_string(worst) + " > " +
             std::to_string(limit));
    }
  }
}

/// `call` must throw on every rank, with `needle` in the message.
template <class Call>
void expect_everywhere(const std::string& name, const std::string& needle, Call call) {
  try {
    call();
    fail(name + ": no error");
  } catch (const simkit::Error& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) fail(name + ": unexpected error: " + e.what());
  }
}

void error_cases() {
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;
  simkit::Matrix<float> X = blobs(30, 4, 2, 31);
  const simkit::mpi::RowSlice s = simkit::mpi::row_slice(X.rows(), ranks, rank);
  const simkit::MatrixView<const float> slice(X.data() + s.first * 4, s.rows, 4);
  simkit::KmeansParams p;
  p.k = 31;
  expect_everywhere("k > n", "exceeds the 30 points",
                    [&] { simkit::mpi::kmeans(ctx, MPI_COMM_WORLD, slice, s.first, p); });
  p.k = 3;
  p.seed = rank == ranks - 1 ? 9 : 0;
  if (ranks > 1)
    expect_everywhere("seeds differ", "disagree on the seed",
                      [&] { simkit::mpi::kmeans(ctx, MPI_COMM_WORLD, slice, s.first, p); });
  p.seed = 0;
  if (rank == ranks - 1) X(s.first + s.rows - 1, 2) = std::nanf("");
  expect_everywhere("NaN", "rank " + std::to_string(ranks - 1) + ": data contains NaN",
                    [&] { simkit::mpi::kmeans(ctx, MPI_COMM_WORLD, slice, s.first, p); });
  const simkit::Matrix<float> Y = blobs(4, 4, 1, 32);
  expect_everywhere("gauss NaN", "sources contains NaN",
                    [&] { simkit::mpi::gauss_transform(ctx, MPI_COMM_WORLD, slice, s.first, {}, Y.view(), 1.0); });
  X(s.first + s.rows - 1, 2) = 0.0f;
  if (ranks > 1)
    expect_everywhere("h differs", "disagree on the bandwidth", [&] {
      simkit::mpi::gauss_transform(ctx, MPI_COMM_WORLD, slice, s.first, {}, Y.view(), rank == 0 ? 1.0 : 2.0);
    });
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  kmeans_cases();
  gauss_cases();
  error_cases();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_gauss_kmeans_ranks: %d ranks, %d failures\n", ranks, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
