// `simkit radius --base X --queries Q --radius R --offsets O.npy --ids I.npy [--distances D.npy]`:
// every base row within R of each query, nearest first (radius.hpp), written as CSR arrays --
// query i's neighbours are ids[offsets[i] .. offsets[i + 1]) -- all-or-nothing.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <simkit/io.hpp>
#include <simkit/metric.hpp>
#include <simkit/radius.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace simkit::cli {

namespace {

struct RadiusOptions {
  std::string base, queries, metric = "l2", offsets, ids, distances;
  double radius = -1;
  int64_t max_neighbors = 0;
  RunOptions run;
};

/// A column of n values as an n x 1 matrix (the .npy writers take matrices).
template <class T>
Matrix<T> column(const std::vector<T>& v) {
  Matrix<T> m(int64_t(v.size()), 1);
  std::copy(v.begin(), v.end(), m.data());
  return m;
}

void run_radius(const RadiusOptions& o) {
  const Metric metric = parse_metric(o.metric);
  if (metric != Metric::l2 && metric != Metric::sqeuclidean)
    bad("--metric " + o.metric + ": radius search serves l2 and sqeuclidean");
  if (!(o.radius >= 0 && std::isfinite(o.radius))) bad("--radius must be a finite value >= 0, got " + number(o.radius));
  if (o.max_neighbors < 0) bad("--max-neighbors must be >= 0 (0: no cap), got " + std::to_string(o.max_neighbors));
  for (const auto& [flag, path] : {std::pair{"--offsets", &o.offsets}, std::pair{"--ids", &o.ids}})
    check_output_path(*path, flag, {".npy"});
  if (!o.distances.empty()) check_output_path(o.distances, "--distances", {".npy"});
  check_distinct_outputs({{"--offsets", o.offsets}, {"--ids", o.ids}, {"--distances", o.distances}});
  Context ctx = make_context(o.run, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.base, "--base");
  const Matrix<float> Q = read_points(o.queries, "--queries");
  check_same_dimension(Q, "--queries", o.queries, X, "--base", o.base);
  const double read_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const RadiusResult r = radius_search(ctx, Q.view(), X.view(), o.radius, metric, o.max_neighbors);
  const double search_s = seconds_since(t0);
  {
    OutputSet outputs;
    write_ids(outputs.stage(o.offsets), column(r.offsets).view());
    write_ids(outputs.stage(o.ids), column(r.ids).view());
    if (!o.distances.empty()) write_matrix(outputs.stage(o.distances), column(r.values).view());
    outputs.commit();
  }
  const int64_t found = r.offsets.back();
  std::printf(
      "radius: %s queries x %s base, d = %lld, radius %g (%s): %s neighbours, %.2f per query, %s queries "
      "capped at %lld, in %s (read %s)\n",
      with_commas(Q.rows()).c_str(), with_commas(X.rows()).c_str(), (long long)X.cols(), o.radius, to_string(metric),
      with_commas(found).c_str(), double(found) / double(Q.rows()), with_commas(r.capped).c_str(),
      (long long)o.max_neighbors, format_duration(search_s).c_str(), format_duration(read_s).c_str());
}

}  // namespace

void add_radius_command(CLI::App& app) {
  auto o = std::make_shared<RadiusOptions>();
  auto* sub = app.add_subcommand(
      "radius",
      "Every base row within a radius of each query, nearest first (low dimensions: l2 / sqeuclidean, d <= 8)");
  sub->add_option("--base", o->base, "base set X (n x d, d <= 8): .npy, .fvecs, .bvecs or .ivecs")->required();
  sub->add_option("--queries", o->queries, "query set Q (m x d), same formats")->required();
  sub->add_option("--radius", o->radius, "the radius, >= 0, in the metric's units (sqeuclidean: squared)")->required();
  sub->add_option("--metric", o->metric, "l2 or sqeuclidean")->capture_default_str();
  sub->add_option("--max-neighbors", o->max_neighbors, "keep at most this many per query, the nearest (0: all)")
      ->capture_default_str();
  sub->add_option("--offsets", o->offsets, "output: m + 1 int64 offsets (.npy)")->required();
  sub->add_option("--ids", o->ids, "output: the neighbours' base rows, int64, query after query (.npy)")->required();
  sub->add_option("--distances", o->distances, "output: their distances, float32 (.npy)");
  add_run_options(sub, o->run);
  sub->footer(
      "Query i's neighbours are ids[offsets[i]:offsets[i+1]], sorted by distance, ties to the lower id; a query\n"
      "with more than --max-neighbors keeps its nearest and is counted as capped. Runs on the CPU or the GPU.\n"
      "Example:\n"
      "  simkit radius --base cloud.npy --queries probes.npy --radius 0.05 --offsets off.npy --ids ids.npy \\\n"
      "                --distances dist.npy --max-neighbors 64");
  sub->callback([o] { run_radius(*o); });
}

}  // namespace simkit::cli
