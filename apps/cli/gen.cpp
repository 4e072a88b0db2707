// `simkit gen`: synthetic point sets, reproducible from the seed alone (see generate.cpp), for
// tests, benchmarks and trying the other commands. With --queries the same draw is split into a
// base file and a query file, so the queries come from the same clusters as the base.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "generate.hpp"

namespace simkit::cli {

namespace {

struct GenOptions {
  int64_t rows = 0;
  int64_t dim = 0;
  std::string distribution = "uniform";
  int64_t clusters = 16;
  float std = 0.1f;
  bool normalize = false;
  uint64_t seed = 0;
  std::string out;
  int64_t queries = 0;
  std::string queries_out;
};

Distribution parse_distribution(const std::string& name) {
  if (name == "uniform") return Distribution::uniform;
  if (name == "gaussian") return Distribution::gaussian;
  if (name == "clustered") return Distribution::clustered;
  throw Error(ErrorCode::invalid_argument,
              "unknown distribution " + simkit::quoted(name) + " (expected uniform, gaussian or clustered)");
}

MatrixView<const float> row_range(const Matrix<float>& m, int64_t first, int64_t count) {
  return {m.data() + first * m.cols(), count, m.cols()};
}

void run_gen(const GenOptions& o) {
  GenSpec spec;
  spec.distribution = parse_distribution(o.distribution);
  spec.rows = o.rows;
  spec.dim = o.dim;
  spec.clusters = o.clusters;
  spec.std = o.std;
  spec.normalize = o.normalize;
  spec.seed = o.seed;

  if (o.queries < 0)
    throw Error(ErrorCode::invalid_argument, "--queries must be >= 0, got " + std::to_string(o.queries));
  const bool split = o.queries > 0;
  if (split != !o.queries_out.empty())
    throw Error(ErrorCode::invalid_argument, "--queries N and --queries-out FILE go together");
  if (spec.rows < 1)
    throw Error(ErrorCode::invalid_argument, "--rows must be at least 1, got " + std::to_string(o.rows));
  check_output_path(o.out, "--out", {".npy", ".fvecs"});
  if (split) {
    check_output_path(o.queries_out, "--queries-out", {".npy", ".fvecs"});
    check_distinct_outputs({{"--out", o.out}, {"--queries-out", o.queries_out}});
    spec.rows += o.queries;
  }

  const auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> all = generate(spec);
  const double gen_s = seconds_since(t0);

  OutputSet outputs;
  write_matrix(outputs.stage(o.out), row_range(all, 0, o.rows));
  if (split) write_matrix(outputs.stage(o.queries_out), row_range(all, o.rows, o.queries));
  outputs.commit();

  std::printf("wrote %s: %s x %lld (%s%s, seed %llu)\n", o.out.c_str(), with_commas(o.rows).c_str(), (long long)o.dim,
              o.distribution.c_str(), o.normalize ? ", unit norm" : "", (unsigned long long)o.seed);
  if (split)
    std::printf("wrote %s: %s x %lld (rows %s.. of the same draw)\n", o.queries_out.c_str(),
                with_commas(o.queries).c_str(), (long long)o.dim, with_commas(o.rows).c_str());
  std::fprintf(stderr, "simkit gen: generated in %s\n", format_duration(gen_s).c_str());
}

}  // namespace

void add_gen_command(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  auto* sub = app.add_subcommand("gen",
                                 "Generate a synthetic point set (uniform, gaussian or clustered), the same for "
                                 "the same seed whatever the thread count");
  sub->add_option("--rows", o->rows, "number of vectors")->required();
  sub->add_option("--dim", o->dim, "dimension of each vector")->required();
  sub->add_option("--distribution", o->distribution,
                  "uniform: coordinates in [-1, 1); gaussian: standard normal; clustered: --clusters centres "
                  "uniform in [-1, 1)^dim, each row a random centre plus N(0, std^2) noise")
      ->capture_default_str();
  sub->add_option("--clusters", o->clusters, "number of cluster centres (clustered only)")->capture_default_str();
  sub->add_option("--std", o->std, "standard deviation of the noise around a centre (clustered only)")
      ->capture_default_str();
  sub->add_flag("--normalize", o->normalize, "scale every row to unit L2 norm (a zero row stays zero)");
  sub->add_option("--seed", o->seed, "seed; the same seed gives the same file")->capture_default_str();
  sub->add_option("--out", o->out, "output file: .npy (float32) or .fvecs")->required();
  sub->add_option("--queries", o->queries,
                  "also draw N more rows (after the --rows base rows, same clusters) and write them to --queries-out");
  sub->add_option("--queries-out", o->queries_out, "output file for the --queries rows: .npy or .fvecs");
  sub->footer(
      "Examples:\n"
      "  simkit gen --rows 100000 --dim 128 --distribution clustered --clusters 64 --std 0.1 --seed 7 \\\n"
      "             --out base.fvecs --queries 1000 --queries-out queries.fvecs\n"
      "  simkit gen --rows 5000 --dim 384 --distribution gaussian --normalize --out x.npy");
  sub->callback([o] { run_gen(*o); });
}

}  // namespace simkit::cli
