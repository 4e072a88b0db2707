// `simkit kcenter --data X -k K --centers C.npy [--labels L.npy] [--seed S]`: farthest-point
// k-center (include/simkit/kmeans.hpp) on either backend. Options and output paths are checked
// before any file is read; both outputs are written, or neither; the last line on stdout is
// `radius = <value>`.

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

struct KcenterOptions {
  std::string data, centers, labels;
  int64_t k = 0;
  uint64_t seed = 0;
  RunOptions run;
};

void run_kcenter(const KcenterOptions& o) {
  if (o.k < 1) bad("-k must be at least 1, got " + std::to_string(o.k));
  ProgressBar bar("kcenter");
  Context ctx = make_context(o.run, bar.callback());
  const ClusterOutputs outputs{"--centers", o.centers, o.labels};
  outputs.check();

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.data, "--data");
  const double read_s = seconds_since(t0);
  if (o.k > X.rows()) bad("-k " + std::to_string(o.k) + " exceeds the " + with_commas(X.rows()) + " points in --data");

  t0 = std::chrono::steady_clock::now();
  const KcenterResult r = kcenter(ctx, X.view(), o.k, o.seed);
  const double run_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();
  outputs.write(r.centers.view(), r.labels.view());
  std::fprintf(stderr, "simkit kcenter: %s x %lld, k = %lld on %s: %s (read %s)\n", with_commas(X.rows()).c_str(),
               (long long)X.cols(), (long long)o.k, where.c_str(), format_duration(run_s).c_str(),
               format_duration(read_s).c_str());
  std::printf("radius = %s\n", number(r.radius).c_str());
}

}  // namespace

void add_kcenter_command(CLI::App& app) {
  auto o = std::make_shared<KcenterOptions>();
  auto* sub = app.add_subcommand("kcenter", "Pick k centers by farthest-point traversal (Gonzalez's k-center)");
  sub->add_option("--data", o->data, "points X (n x d): .npy (float16/32/64, ints), .fvecs, .bvecs or .ivecs")
      ->required();
  sub->add_option("-k", o->k, "number of centers")->required();
  sub->add_option("--seed", o->seed, "draws the first center")->capture_default_str();
  sub->add_option("--centers", o->centers,
                  "output centers, k x d float32 (rows of X, in the order chosen): .npy or "
                  ".fvecs")
      ->required();
  sub->add_option("--labels", o->labels, "also write each point's nearest center: .npy (int64) or .ivecs");
  add_run_options(sub, o->run);
  sub->footer(
      "Example:\n"
      "  simkit kcenter --data base.fvecs -k 256 --centers C.npy --labels L.npy\n"
      "Each center after the first (drawn with --seed) is the point farthest from those chosen before,\n"
      "which keeps the radius within twice the best possible. Prints `radius = <value>` last on stdout:\n"
      "the largest Euclidean distance from a point to its nearest center.");
  sub->callback([o] { run_kcenter(*o); });
}

}  // namespace simkit::cli
