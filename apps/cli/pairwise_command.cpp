// `simkit pairwise --base X --queries Q --metric M --out S.npy`: the full m x n matrix of the
// metric between every query and every base row. Everything that can be checked without the
// work (metric, device, output path, shapes) is checked first, so bad input fails fast and
// leaves no file.

#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/metric.hpp>
#include <simkit/pairwise.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace simkit::cli {

namespace {

struct PairwiseOptions {
  std::string base, queries, metric, out;
  RunOptions run;
};

void run_pairwise(const PairwiseOptions& o) {
  const Metric metric = parse_metric(o.metric);
  ProgressBar bar("pairwise");
  Context ctx = make_context(o.run, bar.callback());
  check_output_path(o.out, "--out", {".npy", ".fvecs"});

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.base, "--base");
  const Matrix<float> Q = read_points(o.queries, "--queries");
  const double read_s = seconds_since(t0);
  if (Q.cols() != X.cols())
    throw Error(ErrorCode::invalid_argument, "dimension mismatch: --queries " + quoted_path(o.queries) +
                                                 " has d = " + std::to_string(Q.cols()) + ", --base " +
                                                 quoted_path(o.base) + " has d = " + std::to_string(X.cols()));

  Matrix<float> S;
  try {
    S = Matrix<float>(Q.rows(), X.rows());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::out_of_memory,
                "the " + with_commas(Q.rows()) + " x " + with_commas(X.rows()) + " output needs " +
                    format_gib(double(Q.rows()) * double(X.rows()) * sizeof(float)) + " of host memory");
  }
  t0 = std::chrono::steady_clock::now();
  pairwise(ctx, Q.view(), X.view(), metric, S.view());
  const double compute_s = seconds_since(t0);
  const std::string where = describe_device(ctx);  // after the input checks, as in knn_command.cpp
  bar.finish();

  t0 = std::chrono::steady_clock::now();
  write_matrix(o.out, S.view());
  const double write_s = seconds_since(t0);

  std::printf("wrote %s: %s x %s float32, %s(query i, base j)\n", o.out.c_str(), with_commas(Q.rows()).c_str(),
              with_commas(X.rows()).c_str(), to_string(metric));
  std::fprintf(stderr, "simkit pairwise: %s queries x %s base, d = %lld, %s on %s: %s (read %s, write %s)\n",
               with_commas(Q.rows()).c_str(), with_commas(X.rows()).c_str(), (long long)X.cols(), to_string(metric),
               where.c_str(), format_duration(compute_s).c_str(), format_duration(read_s).c_str(),
               format_duration(write_s).c_str());
}

}  // namespace

void add_pairwise_command(CLI::App& app) {
  auto o = std::make_shared<PairwiseOptions>();
  auto* sub =
      app.add_subcommand("pairwise", "Write the m x n matrix S(i, j) = metric(query i, base j) between two point sets");
  sub->add_option("--base", o->base, "base set X (n x d): .npy, .fvecs, .bvecs or .ivecs")->required();
  sub->add_option("--queries", o->queries, "query set Q (m x d), same formats")->required();
  sub->add_option("--metric", o->metric, "l2, sqeuclidean, l1, dot, cosine or pearson")->required();
  sub->add_option("--out", o->out, "output matrix, m x n float32: .npy or .fvecs")->required();
  add_run_options(sub, o->run);
  sub->footer(
      "Example:\n"
      "  simkit pairwise --base base.fvecs --queries queries.fvecs --metric cosine --out sim.npy --device auto\n"
      "Cosine with a zero row, and pearson with a constant row, give 0.");
  sub->callback([o] { run_pairwise(*o); });
}

}  // namespace simkit::cli
