// `simkit demo`: the README's run command. It needs no input file: it draws a clustered point set
// from a fixed seed (the same numbers on every machine), runs exact k-NN over it on the chosen
// device, prints the neighbours of a few queries as a table, and checks a spread of queries
// against a float64 brute force, so a first run both shows what simkit does and that it is right.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/metric.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "generate.hpp"

namespace simkit::cli {

namespace {

struct DemoOptions {
  int64_t rows = 100000;
  int64_t dim = 64;
  int64_t queries = 1000;
  int64_t k = 5;
  std::string metric = "sqeuclidean";
  int64_t clusters = 100;
  float std = 0.15f;
  uint64_t seed = 42;
  int64_t show = 3;
  int64_t check = 20;
  RunOptions run;
};

void print_table(MatrixView<const float> values, MatrixView<const int64_t> ids, int64_t show, int64_t first_row,
                 Metric metric) {
  std::printf("\nThe %lld nearest base rows of the first %lld queries (id, then %s; %s first):\n", (long long)ids.cols,
              (long long)show, to_string(metric), larger_is_better(metric) ? "largest" : "smallest");
  std::printf("  %-6s", "rank");
  for (int64_t q = 0; q < show; ++q) {
    const std::string head = "query " + std::to_string(q) + " (row " + with_commas(first_row + q) + ")";
    std::printf(q + 1 < show ? "  %-28s" : "  %s", head.c_str());
  }
  std::printf("\n");
  for (int64_t r = 0; r < ids.cols; ++r) {
    std::printf("  %-6lld", (long long)(r + 1));
    for (int64_t q = 0; q < show; ++q) {
      char cell[64];
      std::snprintf(cell, sizeof cell, "%9lld  %.6g", (long long)ids(q, r), double(values(q, r)));
      std::printf(q + 1 < show ? "  %-28s" : "  %s", cell);
    }
    std::printf("\n");
  }
}

// Compares each checked query's k values, rank by rank, with the float64 brute force. Ranks
// whose ids differ still agree when both candidates have the same float64 value to within fp32
// resolution (a tie the two precisions may order differently).
struct CheckResult {
  int64_t agree = 0, total = 0;
  double worst_error = 0;
};

CheckResult check_against_float64(MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
                                  MatrixView<const float> values, MatrixView<const int64_t> ids,
                                  const std::vector<int64_t>& rows, int threads) {
  CheckResult c;
  const bool relative = bench::uses_relative_error(metric);
  for (int64_t i : rows) {
    const std::vector<int64_t> expected = bench::reference_knn_row(Q.row(i), X, ids.cols, metric, threads);
    for (int64_t r = 0; r < ids.cols; ++r) {
      const double want = bench::reference_value(Q.row(i), X.row(expected[size_t(r)]), Q.cols, metric);
      const double mine = bench::reference_value(Q.row(i), X.row(ids(i, r)), Q.cols, metric);
      const double scale = relative ? std::max(std::fabs(want), 1.0) : 1.0;
      c.worst_error = std::max(c.worst_error, std::fabs(double(values(i, r)) - want) / scale);
      ++c.total;
      if (ids(i, r) == expected[size_t(r)] || std::fabs(mine - want) <= 1e-6 * scale) ++c.agree;
    }
  }
  return c;
}

void run_demo(const DemoOptions& o) {
  const Metric metric = parse_metric(o.metric);
  if (o.rows < 1 || o.queries < 1) bad("--rows and --queries must be at least 1");
  if (o.k < 1 || o.k > o.rows) bad("-k must be in 1.." + std::to_string(o.rows) + ", got " + std::to_string(o.k));
  if (o.show < 0 || o.check < 0) bad("--show and --check must be >= 0");
  ProgressBar bar("knn");
  Context ctx = make_context(o.run, bar.callback());

  GenSpec spec;
  spec.rows = o.rows + o.queries;
  spec.dim = o.dim;
  spec.distribution = Distribution::clustered;
  spec.clusters = o.clusters;
  spec.std = o.std;
  spec.seed = o.seed;
  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> all = generate(spec);
  const double gen_s = seconds_since(t0);
  const MatrixView<const float> X{all.data(), o.rows, o.dim};
  const MatrixView<const float> Q{all.data() + o.rows * o.dim, o.queries, o.dim};

  std::printf("simkit demo: exact k-nearest neighbours on a generated point set\n");
  std::printf(
      "  base:     %s x %lld float32: %lld clusters, centres uniform in [-1, 1)^%lld, N(0, %.3g^2) noise, "
      "seed %llu (%s)\n",
      with_commas(o.rows).c_str(), (long long)o.dim, (long long)o.clusters, (long long)o.dim, double(o.std),
      (unsigned long long)o.seed, format_duration(gen_s).c_str());
  std::printf("  queries:  %s more rows of the same draw (rows %s..)\n", with_commas(o.queries).c_str(),
              with_commas(o.rows).c_str());
  const std::string where = describe_device(ctx);
  std::fflush(stdout);

  t0 = std::chrono::steady_clock::now();
  const KnnResult r = knn(ctx, Q, X, o.k, metric);
  const double search_s = seconds_since(t0);
  bar.finish();
  std::printf("  search:   k = %lld, %s, on %s: %s, %.1f GFLOP/s\n", (long long)o.k, to_string(metric), where.c_str(),
              format_duration(search_s).c_str(), bench::gflops(o.queries, o.rows, o.dim, search_s * 1e3));

  const int64_t show = std::min(o.show, o.queries);
  if (show > 0) print_table(r.values.view(), r.ids.view(), show, o.rows, metric);

  // The shown queries plus an even spread over the rest.
  std::vector<int64_t> rows = bench::sample_rows(o.queries, o.check);
  for (int64_t i = 0; i < show; ++i) rows.push_back(i);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (rows.empty()) return;
  const unsigned hw = std::thread::hardware_concurrency();
  const CheckResult c = check_against_float64(Q, X, metric, r.values.view(), r.ids.view(), rows,
                                              o.run.threads > 0 ? o.run.threads : int(hw > 0 ? hw : 1));
  std::printf(
      "\nCheck against a float64 brute force on %zu queries: %s of %s neighbours agree, max %s error of "
      "the values %.2e\n",
      rows.size(), with_commas(c.agree).c_str(), with_commas(c.total).c_str(),
      bench::uses_relative_error(metric) ? "relative" : "absolute", c.worst_error);
  if (c.agree != c.total)
    throw Error(ErrorCode::device, "the float64 check found " + std::to_string(c.total - c.agree) +
                                       " neighbours that differ: please report this with `simkit info`");
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  auto* sub = app.add_subcommand("demo",
                                 "k-NN on a built-in generated clustered set (no input files): prints the neighbours "
                                 "of a few queries and checks a sample against float64");
  sub->add_option("--rows", o->rows, "base rows")->capture_default_str();
  sub->add_option("--dim", o->dim, "dimension")->capture_default_str();
  sub->add_option("--queries", o->queries, "queries (drawn after the base rows, from the same clusters)")
      ->capture_default_str();
  sub->add_option("-k,--k", o->k, "neighbours per query")->capture_default_str();
  sub->add_option("--metric", o->metric, "l2, sqeuclidean, l1, dot, cosine or pearson")->capture_default_str();
  sub->add_option("--clusters", o->clusters, "cluster centres")->capture_default_str();
  sub->add_option("--std", o->std, "noise around a centre")->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the draw")->capture_default_str();
  sub->add_option("--show", o->show, "queries to print")->capture_default_str();
  sub->add_option("--check", o->check, "queries to check against float64 (besides the shown ones)")
      ->capture_default_str();
  add_run_options(sub, o->run);
  sub->footer(
      "Examples:\n"
      "  simkit demo\n"
      "  simkit demo --device gpu --rows 1000000 --dim 128 --queries 10000 -k 10 --metric cosine");
  sub->callback([o] { run_demo(*o); });
}

}  // namespace simkit::cli
