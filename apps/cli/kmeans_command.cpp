// `simkit kmeans --data X -k K --centroids C.npy [--labels L.npy]`: Lloyd's k-means on either
// backend (include/simkit/kmeans.hpp). Options and output paths are checked before any file is
// read; both outputs are written, or neither; the last line on stdout is
// `inertia = <value> after <n> iterations`.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/kmeans.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

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

void run_kmeans(const KmeansOptions& o) {
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
  ProgressBar bar("kmeans");
  Context ctx = make_context(o.run);
  if (bar.enabled())
    p.on_iteration = [&bar, &o](int it, double inertia) {
      bar.update(double(it) / double(std::max(1, o.iters)),
                 "iteration " + std::to_string(it) + "/" + std::to_string(o.iters) + ", inertia " + number(inertia));
    };
  const ClusterOutputs outputs{"--centroids", o.centroids, o.labels};
  outputs.check();

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.data, "--data");
  const double read_s = seconds_since(t0);
  if (o.k > X.rows()) bad("-k " + std::to_string(o.k) + " exceeds the " + with_commas(X.rows()) + " points in --data");

  t0 = std::chrono::steady_clock::now();
  const KmeansResult r = kmeans(ctx, X.view(), p);
  const double train_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();

  outputs.write(r.centroids.view(), r.labels.view());
  std::fprintf(
      stderr, "simkit kmeans: %s x %lld, k = %lld, %s on %s: %s (%s per iteration, read %s)%s\n",
      with_commas(X.rows()).c_str(), (long long)X.cols(), (long long)o.k, to_string(p.metric), where.c_str(),
      format_duration(train_s).c_str(), format_duration(train_s / double(std::max(1, r.iterations + 1))).c_str(),
      format_duration(read_s).c_str(),
      r.empty_reseeded > 0 ? (", " + std::to_string(r.empty_reseeded) + " empty clusters re-seeded").c_str() : "");
  std::printf("inertia = %s after %d iterations\n", number(r.inertia).c_str(), r.iterations);
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
      "the lower id; the same seed gives the same result on any thread count.");
  sub->callback([o] { run_kmeans(*o); });
}

}  // namespace simkit::cli
