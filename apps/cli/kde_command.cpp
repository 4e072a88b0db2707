// `simkit kde --data X --at Y [--bandwidth h|scott|silverman] [--weights w] -o D.npy`: Gaussian
// kernel density estimates (Parzen windows), normalised:
//
//     density(y) = sum_i w_i N(y; x_i, sigma^2 I),   sum_i w_i = 1,
//
// which is the Gauss transform with h = sqrt(2) sigma, times (2 pi sigma^2)^(-d/2). The same
// fail-fast, write-nothing-on-error contract as every command.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "npy_f64.hpp"

namespace simkit::cli {

namespace {

struct KdeOptions {
  std::string data, at, weights, out, bandwidth = "scott", method = "auto";
  double eps = 1e-6;
  bool verbose = false;
  RunOptions run;
};

// sigma given as a finite number > 0; empty for a rule's name (scott / silverman).
std::optional<double> parse_sigma(const std::string& text) {
  if (text == "scott" || text == "silverman") return std::nullopt;
  double sigma = 0;
  size_t used = 0;
  try {
    sigma = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    bad("--bandwidth: " + simkit::quoted(text) + " is neither a number nor scott / silverman");
  if (!(std::isfinite(sigma) && sigma > 0)) bad("--bandwidth must be a finite sigma > 0, got " + text);
  return sigma;
}

void run_kde(const KdeOptions& o) {
  GaussOptions options;
  options.method = parse_gauss_method(o.method);
  if (!(o.eps > 0 && o.eps < 1)) bad("--eps must lie in (0, 1), got " + number(o.eps));
  options.eps = o.eps;
  const std::optional<double> given = parse_sigma(o.bandwidth);
  ProgressBar bar("kde");
  Context ctx = make_context(o.run, bar.callback());
  check_output_path(o.out, "--out", {".npy"});

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.data, "--data");
  const Matrix<float> Y = read_points(o.at, "--at");
  check_same_dimension(Y, "--at", o.at, X, "--data", o.data);
  // Checked here so that the message names this command's options, not the library's.
  for (int64_t i = 0; i < X.size(); ++i)
    if (!std::isfinite(X.view().data[i])) bad("--data: " + quoted_path(o.data) + " holds NaN or Inf");
  for (int64_t i = 0; i < Y.size(); ++i)
    if (!std::isfinite(Y.view().data[i])) bad("--at: " + quoted_path(o.at) + " holds NaN or Inf");
  const int64_t n = X.rows(), d = X.cols();
  std::vector<double> w(static_cast<size_t>(n), 1.0 / double(n));
  if (!o.weights.empty()) {
    w = read_f64_vector(o.weights, "--weights");
    if (static_cast<int64_t>(w.size()) != n)
      bad("--weights: " + quoted_path(o.weights) + " holds " + std::to_string(w.size()) + " weights but --data has " +
          std::to_string(n) + " rows");
    double sum = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] < 0) bad("--weights: weight " + std::to_string(i) + " is negative (" + number(w[i]) + ")");
      sum += w[i];
    }
    if (!(sum > 0)) bad("--weights: the weights sum to 0");
    for (double& v : w) v /= sum;
  }
  const double sigma = given ? *given : kde_bandwidth(X.view(), parse_bandwidth_rule(o.bandwidth));
  const double read_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  GaussReport report;
  const double h = std::numbers::sqrt2 * sigma;
  std::vector<double> density = gauss_transform(ctx, X.view(), w, Y.view(), h, options, &report);
  // (2 pi sigma^2)^(-d/2), as exp of a log so that large d does not overflow an intermediate.
  const double norm = std::exp(-0.5 * double(d) * std::log(2.0 * std::numbers::pi * sigma * sigma));
  for (double& v : density) v *= norm;
  const double run_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();

  write_f64_column(o.out, density);

  if (o.verbose) {
    std::printf("sigma: %s (%s), Gauss transform h = sqrt(2) sigma = %s\n", number(sigma).c_str(),
                given ? "given" : o.bandwidth.c_str(), number(h).c_str());
    std::printf("method: %s\n", to_string(report.method));
    if (report.method == GaussMethod::ifgt)
      std::printf("ifgt: K = %lld clusters, p = %d, cut-off r = %s, bound |error| <= %s x (2 pi sigma^2)^(-d/2)\n",
                  (long long)report.clusters, report.order, number(report.cutoff_radius).c_str(),
                  number(report.error_bound).c_str());
    if (!report.note.empty()) std::printf("note: %s\n", report.note.c_str());
  }
  std::fflush(stdout);
  std::fprintf(stderr, "simkit kde: %s points x %s data rows, d = %lld, sigma = %s, %s on %s: %s (read %s)\n",
               with_commas(Y.rows()).c_str(), with_commas(n).c_str(), (long long)d, number(sigma).c_str(),
               to_string(report.method), where.c_str(), format_duration(run_s).c_str(),
               format_duration(read_s).c_str());
}

}  // namespace

void add_kde_command(CLI::App& app) {
  auto o = std::make_shared<KdeOptions>();
  auto* sub = app.add_subcommand("kde", "Gaussian kernel density estimates at given points, normalised, float64 out");
  sub->add_option("--data", o->data, "samples X (n x d): .npy, .fvecs, .bvecs or .ivecs")->required();
  sub->add_option("--at", o->at, "where to evaluate the density (m x d), same formats")->required();
  sub->add_option("--bandwidth", o->bandwidth,
                  "sigma, the kernel's standard deviation in every dimension, or scott / silverman")
      ->capture_default_str();
  sub->add_option("--weights", o->weights, "sample weights >= 0 (n values), normalised to sum 1; default 1/n");
  sub->add_option("--method", o->method, "direct, ifgt or auto (see `simkit gauss --help`)")->capture_default_str();
  sub->add_option("--eps", o->eps,
                  "ifgt/auto: guaranteed |error| <= eps x (2 pi sigma^2)^(-d/2) (the weights sum to 1), in (0, 1)")
      ->capture_default_str();
  sub->add_option("--out,-o", o->out, "output densities: m x 1 float64 .npy")->required();
  sub->add_flag("--verbose", o->verbose, "print sigma, h, the method that ran and the ifgt parameters");
  add_run_options(sub, o->run);
  sub->footer(
      "density(y) = sum_i w_i (2 pi sigma^2)^(-d/2) exp(-||y - x_i||^2 / (2 sigma^2)): the Gauss transform\n"
      "with h = sqrt(2) sigma. Bandwidth rules, with s = the mean over dimensions of the sample standard\n"
      "deviation (n - 1) of --data (unweighted):\n"
      "  scott      sigma = n^(-1/(d+4)) s\n"
      "  silverman  sigma = (4/(d+2))^(1/(d+4)) n^(-1/(d+4)) s\n"
      "Example:\n"
      "  simkit kde --data faithful.npy --at grid.npy --bandwidth silverman -o density.npy");
  sub->callback([o] { run_kde(*o); });
}

}  // namespace simkit::cli
