// `simkit knn --base X --queries Q -k K --metric M --ids I [--distances D] [--truth GT]`: exact
// k-nearest neighbours, best first, ties to the lower id. Every input (including the truth file)
// is read and checked before the search, and the outputs are written all-or-nothing, so a bad
// input or a failed write never leaves one output without the other.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/knn.hpp>
#include <simkit/metric.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "recall.hpp"

#if defined(SIMKIT_CLI_MPI)  // built with MPI (cmake/SimkitMPI.cmake): `mpirun -n P simkit knn`
#include "mpi_launch.hpp"
#endif

namespace simkit::cli {

namespace {

struct KnnOptions {
  std::string base, queries, metric, ids, distances, truth, method = "auto";
  int64_t k = 0;
  RunOptions run;
};

KnnMethod method_of(const KnnOptions& o, Metric metric, int64_t d) {
  const KnnMethod method = o.method == "tree"    ? KnnMethod::tree
                           : o.method == "brute" ? KnnMethod::brute
                                                 : KnnMethod::automatic;
  if (method == KnnMethod::tree && metric != Metric::l2 && metric != Metric::sqeuclidean)
    bad("--method tree serves --metric l2 and sqeuclidean (use --method brute for " + o.metric + ")");
  if (method == KnnMethod::tree && d > 8)
    bad("--method tree serves d <= 8, --base has d = " + std::to_string(d) + " (use --method brute)");
  return method;
}

// Writes --ids and --distances together (both or neither); returns the seconds it took.
double write_outputs(const KnnOptions& o, const KnnResult& r) {
  const auto t0 = std::chrono::steady_clock::now();
  OutputSet outputs;
  write_ids(outputs.stage(o.ids), r.ids.view());
  if (!o.distances.empty()) write_matrix(outputs.stage(o.distances), r.values.view());
  outputs.commit();
  return seconds_since(t0);
}

#if defined(SIMKIT_CLI_MPI)

/// `mpirun -n P simkit knn ...`: rank r reads rows row_slice(n, P, r) of --base alone, rank 0
/// reads --queries and broadcasts them, simkit::mpi::knn merges on rank 0, which writes the
/// outputs.
void run_knn_mpi(const KnnOptions& o) {
  const MpiScope scope;
  const int rank = scope.rank, ranks = scope.ranks;
  const bool root = rank == 0;

  Metric metric{};
  Context ctx;
  BaseSlice base;
  Matrix<float> Q;
  KnnMethod method{};
  std::optional<Matrix<int64_t>> truth;
  auto t0 = std::chrono::steady_clock::now();
  on_every_rank([&] {
    metric = parse_metric(o.metric);
    if (o.k < 1) bad("-k must be at least 1, got " + std::to_string(o.k));
    ctx = rank_context(o.run);
    check_output_path(o.ids, "--ids", {".npy", ".ivecs"});
    if (!o.distances.empty()) check_output_path(o.distances, "--distances", {".npy", ".fvecs"});
    check_distinct_outputs({{"--ids", o.ids}, {"--distances", o.distances}});
    base = read_base_slice(o.base, "--base", ranks, rank);
  });
  Q = read_points_on_root(o.queries, "--queries");
  on_every_rank([&] {
    const int64_t n = base.rows, d = base.cols;
    if (Q.cols() != d)
      bad("dimension mismatch: --queries " + quoted_path(o.queries) + " has d = " + std::to_string(Q.cols()) +
          ", --base " + quoted_path(o.base) + " has d = " + std::to_string(d));
    if (o.k > n)
      bad("-k " + std::to_string(o.k) + " exceeds the " + std::to_string(n) + " vectors in --base " +
          quoted_path(o.base));
    if (extension_of(o.ids) == ".ivecs" && n - 1 > std::numeric_limits<int32_t>::max())
      bad("--ids: .ivecs holds int32 ids but --base has " + with_commas(n) + " rows; use .npy (int64)");
    if (root && !o.truth.empty()) truth = read_truth(o.truth, Q.rows(), o.k);
    method = method_of(o, metric, d);
  });
  const double read_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  KnnResult r = mpi::knn(ctx, MPI_COMM_WORLD, Q.view(), base.X.view(), base.slice.first, o.k, metric, method, 0);
  const double search_s = seconds_since(t0);
  const std::string devices = rank_devices(ctx);
  if (!root) return;

  const double write_s = write_outputs(o, r);
  if (truth) print_recall(r.ids, *truth, o.k);
  std::fflush(stdout);
  const int64_t n = base.rows, d = base.cols;
  std::fprintf(stderr, "simkit knn: %d MPI ranks, base rows per rank %s%s\n", ranks, rows_per_rank(n, ranks).c_str(),
               devices.c_str());
  std::fprintf(
      stderr, "simkit knn: %s queries x %s base, d = %lld, k = %lld, %s over %d ranks: %s (read %s, write %s)\n",
      with_commas(Q.rows()).c_str(), with_commas(n).c_str(), (long long)d, (long long)o.k, to_string(metric), ranks,
      format_duration(search_s).c_str(), format_duration(read_s).c_str(), format_duration(write_s).c_str());
}

#endif

void run_knn(const KnnOptions& o) {
#if defined(SIMKIT_CLI_MPI)
  if (launched_by_mpi()) {
    run_knn_mpi(o);
    return;
  }
#endif
  // Everything that needs no file first.
  const Metric metric = parse_metric(o.metric);
  if (o.k < 1) bad("-k must be at least 1, got " + std::to_string(o.k));
  ProgressBar bar("knn");
  Context ctx = make_context(o.run, bar.callback());
  check_output_path(o.ids, "--ids", {".npy", ".ivecs"});
  if (!o.distances.empty()) check_output_path(o.distances, "--distances", {".npy", ".fvecs"});
  check_distinct_outputs({{"--ids", o.ids}, {"--distances", o.distances}});

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.base, "--base");
  const Matrix<float> Q = read_points(o.queries, "--queries");
  check_same_dimension(Q, "--queries", o.queries, X, "--base", o.base);
  if (o.k > X.rows())
    bad("-k " + std::to_string(o.k) + " exceeds the " + std::to_string(X.rows()) + " vectors in --base " +
        quoted_path(o.base));
  if (extension_of(o.ids) == ".ivecs" && X.rows() - 1 > std::numeric_limits<int32_t>::max())
    bad("--ids: .ivecs holds int32 ids but --base has " + with_commas(X.rows()) + " rows; use .npy (int64)");
  std::optional<Matrix<int64_t>> truth;
  if (!o.truth.empty()) truth = read_truth(o.truth, Q.rows(), o.k);
  const double read_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const KnnMethod method = method_of(o, metric, X.cols());
  KnnResult r = knn(ctx, Q.view(), X.view(), o.k, metric, method);
  const double search_s = seconds_since(t0);
  // After the search, which validates its input first: bad input fails with its own message
  // alone, with no device notice ahead of it.
  const std::string where = describe_device(ctx);
  bar.finish();

  const double write_s = write_outputs(o, r);

  if (truth) print_recall(r.ids, *truth, o.k);
  std::fflush(stdout);
  // describe_device resolved ctx.device (cpu or gpu): the route knn took.
  const bool tree =
      method == KnnMethod::tree || (method == KnnMethod::automatic && (ctx.device == Device::cpu || o.k <= 128) &&
                                    tree_knn_is_faster(ctx, Q.rows(), X.rows(), X.cols(), metric));
  std::fprintf(stderr, "simkit knn: %s queries x %s base, d = %lld, k = %lld, %s, %s on %s: %s (read %s, write %s)\n",
               with_commas(Q.rows()).c_str(), with_commas(X.rows()).c_str(), (long long)X.cols(), (long long)o.k,
               to_string(metric), tree ? "tree" : "brute force", where.c_str(), format_duration(search_s).c_str(),
               format_duration(read_s).c_str(), format_duration(write_s).c_str());
}

}  // namespace

void add_knn_command(CLI::App& app) {
  auto o = std::make_shared<KnnOptions>();
  auto* sub = app.add_subcommand(
      "knn", "Exact k-nearest neighbours of every query among the base rows: best first, ties to the lower id");
  sub->add_option("--base", o->base, "base set X (n x d): .npy, .fvecs, .bvecs or .ivecs")->required();
  sub->add_option("--queries", o->queries, "query set Q (m x d), same formats")->required();
  sub->add_option("-k,--k", o->k, "neighbours per query, 1 <= k <= n")->required();
  sub->add_option("--metric", o->metric, "l2, sqeuclidean, l1 (smallest first) or dot, cosine, pearson (largest first)")
      ->required();
  sub->add_option("--ids", o->ids, "output ids, m x k: .npy (int64) or .ivecs (int32)")->required();
  sub->add_option("--distances", o->distances, "also write the metric values, m x k float32: .npy or .fvecs");
  sub->add_option("--method", o->method,
                  "auto, brute (every pair) or tree (a bounding-volume hierarchy walked by packets of queries: l2 / "
                  "sqeuclidean, d <= 8, k <= 128 on the GPU; the same answer, far faster in low dimensions); auto "
                  "takes it for >= 256 queries where it was measured faster: on the CPU from 1,024 base rows; on "
                  "the GPU d <= 3 from 1,024, d <= 5 from 65,536, d <= 8 from 4,194,304")
      ->check(CLI::IsMember({"auto", "brute", "tree"}))
      ->capture_default_str();
  sub->add_option("--truth", o->truth,
                  "ground-truth ids (.ivecs or integer .npy, >= k per query): prints recall@k on stdout");
  add_run_options(sub, o->run);
  sub->footer(
      "Example:\n"
      "  simkit knn --base digits_base.fvecs --queries digits_query.fvecs -k 100 --metric sqeuclidean \\\n"
      "             --truth digits_groundtruth_sqeuclidean.ivecs --ids ids.ivecs --distances dist.npy\n"
      "  simkit knn --base cloud.npy --queries cloud.npy -k 16 --metric l2 --method tree --ids nn.npy --device cpu\n"
      "recall@k = the fraction of each query's first k truth ids found among its k ids, averaged.\n"
      "Under mpirun (a build with MPI), each of the P ranks reads its contiguous slice of --base and rank 0\n"
      "writes the same ids and distances as one process:\n"
      "  mpirun -n 4 simkit knn --base base.npy --queries q.npy -k 10 --metric l2 --ids ids.npy --device cpu");
  sub->callback([o] { run_knn(*o); });
}

}  // namespace simkit::cli
