// `simkit gauss --sources X --targets Y [--weights q] --bandwidth h --out G.npy`: the discrete
// Gauss transform G(y_j) = sum_i q_i exp(-||y_j - x_i||^2 / h^2), written as float64 (m x 1).
// Every input is read and checked before the work, and the output is written atomically, so bad
// input exits with status 2 and leaves nothing behind.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "npy_f64.hpp"

#if defined(SIMKIT_CLI_MPI)  // built with MPI (cmake/SimkitMPI.cmake): `mpirun -n P simkit gauss`
#include "mpi_launch.hpp"
#endif

namespace simkit::cli {

namespace {

struct GaussCommandOptions {
  std::string sources, targets, weights, out, method = "auto";
  double bandwidth = 0, eps = 1e-6;
  int64_t clusters = 0;
  int order = 0;
  bool verbose = false;
  RunOptions run;
};

/// The options as GaussOptions, checked (everything that needs no file).
GaussOptions gauss_options(const GaussCommandOptions& o) {
  GaussOptions options;
  options.method = parse_gauss_method(o.method);
  if (!(o.eps > 0 && o.eps < 1)) bad("--eps must lie in (0, 1), got " + number(o.eps));
  options.eps = o.eps;
  if ((o.clusters > 0 || o.order > 0) && options.method != GaussMethod::ifgt)
    bad("--ifgt-clusters and --ifgt-order fix the IFGT's parameters: they need --method ifgt");
  options.ifgt_clusters = o.clusters;
  options.ifgt_order = o.order;
  if (!(std::isfinite(o.bandwidth) && o.bandwidth > 0))
    bad("--bandwidth must be a finite h > 0, got " + number(o.bandwidth));
  return options;
}

/// `n` weights from --weights (empty: none given); errors name the option.
std::vector<double> read_weights(const GaussCommandOptions& o, int64_t n) {
  if (o.weights.empty()) return {};
  std::vector<double> q = read_f64_vector(o.weights, "--weights");
  if (static_cast<int64_t>(q.size()) != n)
    bad("--weights: " + quoted_path(o.weights) + " holds " + std::to_string(q.size()) + " weights but --sources has " +
        std::to_string(n) + " rows");
  return q;
}

/// --verbose: the method that ran and the IFGT's parameters.
void print_report(const GaussReport& report) {
  std::printf("method: %s\n", to_string(report.method));
  if (report.method == GaussMethod::ifgt)
    std::printf(
        "ifgt: K = %lld clusters, p = %d (monomials of total degree < p), cut-off r = %s, "
        "bound |error| <= %s * sum|q|\n",
        (long long)report.clusters, report.order, number(report.cutoff_radius).c_str(),
        number(report.error_bound).c_str());
  if (!report.note.empty()) std::printf("note: %s\n", report.note.c_str());
}

#if defined(SIMKIT_CLI_MPI)

/// `mpirun -n P simkit gauss ...`: rank r reads rows row_slice(n, P, r) of --sources alone; rank
/// 0 reads --targets (broadcast to every rank) and --weights (each rank is sent its slice's);
/// simkit::mpi::gauss_transform adds the ranks' partial sums on rank 0, which writes --out.
void run_gauss_mpi(const GaussCommandOptions& o) {
  const MpiScope scope;
  const int rank = scope.rank, ranks = scope.ranks;
  GaussOptions options;
  Context ctx;
  BaseSlice sources;
  std::vector<double> all_q;
  auto t0 = std::chrono::steady_clock::now();
  on_every_rank([&] {
    options = gauss_options(o);
    ctx = rank_context(o.run);
    check_output_path(o.out, "--out", {".npy"});
    sources = read_base_slice(o.sources, "--sources", ranks, rank);
  });
  const Matrix<float> Y = read_points_on_root(o.targets, "--targets");
  on_every_rank([&] {
    if (Y.cols() != sources.cols)
      bad("dimension mismatch: --targets " + quoted_path(o.targets) + " has d = " + std::to_string(Y.cols()) +
          ", --sources " + quoted_path(o.sources) + " has d = " + std::to_string(sources.cols));
    if (rank == 0) all_q = read_weights(o, sources.rows);
  });
  const std::vector<double> q = o.weights.empty() ? std::vector<double>{} : scatter_slices(all_q, sources.rows);
  const double read_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  GaussReport report;
  const std::vector<double> G = mpi::gauss_transform(ctx, MPI_COMM_WORLD, sources.X.view(), sources.slice.first, q,
                                                     Y.view(), o.bandwidth, options, 0, &report);
  const double run_s = seconds_since(t0);
  const std::string devices = rank_devices(ctx);
  if (rank != 0) return;

  t0 = std::chrono::steady_clock::now();
  write_f64_column(o.out, G);
  const double write_s = seconds_since(t0);
  if (o.verbose) print_report(report);
  std::fflush(stdout);
  std::fprintf(stderr, "simkit gauss: %d MPI ranks, source rows per rank %s%s\n", ranks,
               rows_per_rank(sources.rows, ranks).c_str(), devices.c_str());
  std::fprintf(stderr,
               "simkit gauss: %s targets x %s sources, d = %lld, h = %s, %s over %d ranks: %s (read %s, write %s)\n",
               with_commas(Y.rows()).c_str(), with_commas(sources.rows).c_str(), (long long)sources.cols,
               number(o.bandwidth).c_str(), to_string(report.method), ranks, format_duration(run_s).c_str(),
               format_duration(read_s).c_str(), format_duration(write_s).c_str());
}

#endif

void run_gauss(const GaussCommandOptions& o) {
#if defined(SIMKIT_CLI_MPI)
  if (launched_by_mpi()) {
    run_gauss_mpi(o);
    return;
  }
#endif
  const GaussOptions options = gauss_options(o);
  ProgressBar bar("gauss");
  Context ctx = make_context(o.run, bar.callback());
  check_output_path(o.out, "--out", {".npy"});

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.sources, "--sources");
  const Matrix<float> Y = read_points(o.targets, "--targets");
  check_same_dimension(Y, "--targets", o.targets, X, "--sources", o.sources);
  const std::vector<double> q = read_weights(o, X.rows());
  const double read_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  GaussReport report;
  const std::vector<double> G = gauss_transform(ctx, X.view(), q, Y.view(), o.bandwidth, options, &report);
  const double run_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();

  t0 = std::chrono::steady_clock::now();
  write_f64_column(o.out, G);
  const double write_s = seconds_since(t0);

  if (o.verbose) print_report(report);
  std::fflush(stdout);
  std::fprintf(stderr, "simkit gauss: %s targets x %s sources, d = %lld, h = %s, %s on %s: %s (read %s, write %s)\n",
               with_commas(Y.rows()).c_str(), with_commas(X.rows()).c_str(), (long long)X.cols(),
               number(o.bandwidth).c_str(), to_string(report.method), where.c_str(), format_duration(run_s).c_str(),
               format_duration(read_s).c_str(), format_duration(write_s).c_str());
}

}  // namespace

void add_gauss_command(CLI::App& app) {
  auto o = std::make_shared<GaussCommandOptions>();
  auto* sub = app.add_subcommand(
      "gauss", "The discrete Gauss transform G(y_j) = sum_i q_i exp(-||y_j - x_i||^2 / h^2), float64 out");
  sub->add_option("--sources", o->sources, "sources X (n x d): .npy, .fvecs, .bvecs or .ivecs")->required();
  sub->add_option("--targets", o->targets, "targets Y (m x d), same formats")->required();
  sub->add_option("--weights", o->weights,
                  "weights q (n values: .npy float64/float32 read exactly, or any point-set format with one "
                  "column or one row); default all 1");
  sub->add_option("--bandwidth", o->bandwidth, "h > 0 (note: exp(-r^2 / h^2), so h = sqrt(2) sigma)")->required();
  sub->add_option("--method", o->method,
                  "direct (every pair), ifgt (error <= eps * sum|q|) or auto (ifgt where predicted faster)")
      ->capture_default_str();
  sub->add_option("--eps", o->eps, "ifgt/auto: guaranteed |error| as a fraction of sum|q|, in (0, 1)")
      ->capture_default_str();
  sub->add_option("--ifgt-clusters", o->clusters,
                  "ifgt: fix the number of clusters K instead of choosing it from --eps (e.g. to reproduce a "
                  "published run)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sub->add_option("--ifgt-order", o->order,
                  "ifgt: fix the order p (monomials of total degree < p); the error bound is then whatever K and "
                  "p give, printed by --verbose, and may exceed --eps")
      ->check(CLI::Range(1, 40));
  sub->add_option("--out,-o", o->out, "output G: m x 1 float64 .npy")->required();
  sub->add_flag("--verbose", o->verbose, "print the method that ran and, for ifgt, K, p, r and the error bound");
  add_run_options(sub, o->run);
  sub->footer(
      "Example:\n"
      "  simkit gauss --sources x.npy --targets y.npy --weights q.npy --bandwidth 0.5 --method ifgt \\\n"
      "               --eps 1e-6 --verbose --out g.npy\n"
      "  simkit gauss --sources x.npy --targets y.npy --bandwidth 1 --method ifgt --ifgt-clusters 3 \\\n"
      "               --ifgt-order 14 --verbose --out g.npy   # the seed's K = 3, p = 14\n"
      "Under mpirun (a build with MPI), each of the P ranks reads its contiguous slice of --sources and rank 0\n"
      "adds the ranks' partial sums (direct: the one-process values up to rounding; ifgt: the same bound):\n"
      "  mpirun -n 4 simkit gauss --sources x.npy --targets y.npy --bandwidth 0.5 --method direct --out g.npy");
  sub->callback([o] { run_gauss(*o); });
}

}  // namespace simkit::cli
