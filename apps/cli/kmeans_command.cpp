// `simkit kmeans --data X -k K --centroids C.npy [--labels L.npy]`: Lloyd's k-means on either
// backend (include/simkit/kmeans.hpp). Options and output paths are checked before any file is
// read; both outputs are written, or neither; the last line on stdout is
// `inertia = <value> after <n> iterations`.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/kmeans.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

#if defined(SIMKIT_CLI_MPI)  // built with MPI (cmake/SimkitMPI.cmake): `mpirun -n P simkit kmeans`
#include "mpi_launch.hpp"
#endif

namespace simkit::cli {

namespace {

struct KmeansOptions {
  std::string data, metric = "sqeuclidean", init = "kmeans++", centroids, labels;
  int64_t k = 0, sample = 0;
  int iters = 25;
  double tol = 1e-4;
  uint64_t seed = 0;
  RunOptions run;
};

KmeansInit parse_init(const std::string& name) {
  if (name == "kmeans++") return KmeansInit::kmeans_plus_plus;
  if (name == "random") return KmeansInit::random;
  bad("--init: unknown " + simkit::quoted(name) + " (expected kmeans++ or random)");
}

/// The options as KmeansParams, checked (everything that needs no file).
KmeansParams kmeans_params(const KmeansOptions& o) {
  KmeansParams p;
  p.k = o.k;
  p.metric = parse_metric(o.metric);
  p.init = parse_init(o.init);
  p.max_iterations = o.iters;
  p.tolerance = o.tol;
  p.seed = o.seed;
  p.sample = o.sample;
  if (p.metric != Metric::sqeuclidean && p.metric != Metric::cosine)
    bad("--metric: k-means takes sqeuclidean or cosine (spherical), got " + o.metric);
  if (o.k < 1) bad("-k must be at least 1, got " + std::to_string(o.k));
  return p;
}

void check_k(const KmeansOptions& o, int64_t n) {
  if (o.k > n) bad("-k " + std::to_string(o.k) + " exceeds the " + with_commas(n) + " points in --data");
}

/// Progress from the iterations, where the bar is drawn.
void follow(KmeansParams& p, ProgressBar& bar, int iters) {
  if (bar.enabled())
    p.on_iteration = [&bar, iters](int it, double inertia) {
      bar.update(double(it) / double(std::max(1, iters)),
                 "iteration " + std::to_string(it) + "/" + std::to_string(iters) + ", inertia " + number(inertia));
    };
}

/// The outputs, then the summary on stderr and `inertia = ...` last on stdout.
void finish(const KmeansOptions& o, const KmeansParams& p, const KmeansResult& r, int64_t n, int64_t d,
            const std::string& where, double train_s, double read_s) {
  const ClusterOutputs outputs{"--centroids", o.centroids, o.labels};
  outputs.write(r.centroids.view(), r.labels.view());
  std::fprintf(
      stderr, "simkit kmeans: %s x %lld, k = %lld, %s on %s: %s (%s per iteration, read %s)%s\n",
      with_commas(n).c_str(), (long long)d, (long long)o.k, to_string(p.metric), where.c_str(),
      format_duration(train_s).c_str(), format_duration(train_s / double(std::max(1, r.iterations + 1))).c_str(),
      format_duration(read_s).c_str(),
      r.empty_reseeded > 0 ? (", " + std::to_string(r.empty_reseeded) + " empty clusters re-seeded").c_str() : "");
  std::printf("inertia = %s after %d iterations\n", number(r.inertia).c_str(), r.iterations);
}

#if defined(SIMKIT_CLI_MPI)

/// `mpirun -n P simkit kmeans ...`: rank r reads rows row_slice(n, P, r) of --data alone;
/// simkit::mpi::kmeans gives every rank the centroids and rank 0 the labels, and rank 0 writes
/// them: the files one process writes, byte for byte.
void run_kmeans_mpi(const KmeansOptions& o) {
  const MpiScope scope;
  const int rank = scope.rank, ranks = scope.ranks;
  KmeansParams p;
  Context ctx;
  BaseSlice data;
  const auto t0 = std::chrono::steady_clock::now();
  on_every_rank([&] {
    p = kmeans_params(o);
    ctx = rank_context(o.run);
    ClusterOutputs{"--centroids", o.centroids, o.labels}.check();
    data = read_base_slice(o.data, "--data", ranks, rank);
    check_k(o, data.rows);
  });
  const double read_s = seconds_since(t0);
  std::optional<ProgressBar> bar;
  if (rank == 0) follow(p, bar.emplace("kmeans"), o.iters);

  const auto t1 = std::chrono::steady_clock::now();
  const KmeansResult r = mpi::kmeans(ctx, MPI_COMM_WORLD, data.X.view(), data.slice.first, p, 0);
  const double train_s = seconds_since(t1);
  const std::string devices = rank_devices(ctx);
  if (rank != 0) return;
  bar->finish();
  std::fprintf(stderr, "simkit kmeans: %d MPI ranks, rows per rank %s%s\n", ranks,
               rows_per_rank(data.rows, ranks).c_str(), devices.c_str());
  finish(o, p, r, data.rows, data.cols, std::to_string(ranks) + " ranks", train_s, read_s);
}

#endif

void run_kmeans(const KmeansOptions& o) {
#if defined(SIMKIT_CLI_MPI)
  if (launched_by_mpi()) {
    run_kmeans_mpi(o);
    return;
  }
#endif
  KmeansParams p = kmeans_params(o);
  ProgressBar bar("kmeans");
  Context ctx = make_context(o.run);
  follow(p, bar, o.iters);
  ClusterOutputs{"--centroids", o.centroids, o.labels}.check();

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.data, "--data");
  const double read_s = seconds_since(t0);
  check_k(o, X.rows());

  t0 = std::chrono::steady_clock::now();
  const KmeansResult r = kmeans(ctx, X.view(), p);
  const double train_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();
  finish(o, p, r, X.rows(), X.cols(), where, train_s, read_s);
}

}  // namespace

void add_kmeans_command(CLI::App& app) {
  auto o = std::make_shared<KmeansOptions>();
  auto* sub = app.add_subcommand("kmeans", "Cluster a point set with k-means (Lloyd's iteration)");
  sub->add_option("--data", o->data, "points X (n x d): .npy (float16/32/64, ints), .fvecs, .bvecs or .ivecs")
      ->required();
  sub->add_option("-k", o->k, "number of clusters")->required();
  sub->add_option("--metric", o->metric, "sqeuclidean, or cosine for spherical k-means")->capture_default_str();
  sub->add_option("--init", o->init, "kmeans++ (batched D^2 sampling) or random")->capture_default_str();
  sub->add_option("--iters", o->iters, "Lloyd updates at most")->check(CLI::Range(0, 1000000))->capture_default_str();
  sub->add_option("--tol", o->tol, "stop once an iteration lowers the inertia by less than this fraction")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the seeding and the sample")->capture_default_str();
  sub->add_option("--sample", o->sample, "train on this many points drawn with the seed (0: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--centroids", o->centroids, "output centroids, k x d float32: .npy or .fvecs")->required();
  sub->add_option("--labels", o->labels, "also write each point's cluster: .npy (int64) or .ivecs");
  add_run_options(sub, o->run);
  sub->footer(
      "Example:\n"
      "  simkit kmeans --data base.fvecs -k 1024 --metric cosine --centroids C.npy --labels L.npy --device gpu\n"
      "Prints `inertia = <value> after <n> iterations` last on stdout: the sum of squared distances (cosine:\n"
      "of 1 - similarity) of every point to its centroid. Labels are each point's nearest centroid, ties to\n"
      "the lower id; the same seed gives the same result on any thread count.\n"
      "Under mpirun (a build with MPI), each of the P ranks reads its contiguous slice of --data and rank 0\n"
      "writes the same centroids and labels as one process, bit for bit (CPU ranks):\n"
      "  mpirun -n 4 simkit kmeans --data base.npy -k 256 --centroids C.npy --labels L.npy --device cpu");
  sub->callback([o] { run_kmeans(*o); });
}

}  // namespace simkit::cli
