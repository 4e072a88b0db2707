// `simkit nbody accel --bodies B.npy [--targets T.npy] --out A.npy [--potential P.npy]`: the
// gravitational accelerations (and potentials) of softened point masses by the direct sum
// (simkit/nbody.hpp). Every input is read and checked before the work and the outputs are
// written together atomically, so bad input exits with status 2 and leaves nothing behind.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/nbody.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace simkit::cli {

namespace {

struct NbodyAccelOptions {
  std::string bodies, targets, out, potential, method = "direct";
  double G = 1.0, softening = 0.0;
  RunOptions run;
};

void run_accel(const NbodyAccelOptions& o) {
  if (o.method != "direct")
    bad("--method " + o.method + ": only direct is available in this version (every pair, exact to float32)");
  if (!(std::isfinite(o.G) && o.G > 0)) bad("--G must be a finite value > 0, got " + number(o.G));
  if (!(std::isfinite(o.softening) && o.softening >= 0))
    bad("--softening must be a finite value >= 0, got " + number(o.softening));
  ProgressBar bar("nbody");
  Context ctx = make_context(o.run, bar.callback());
  check_output_path(o.out, "--out", {".npy", ".fvecs"});
  if (!o.potential.empty()) check_output_path(o.potential, "--potential", {".npy", ".fvecs"});
  check_distinct_outputs({{"--out", o.out}, {"--potential", o.potential}});

  auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> B = read_points(o.bodies, "--bodies");
  if (B.cols() != 4)
    bad("--bodies " + quoted_path(o.bodies) + " is " + std::to_string(B.rows()) + " x " + std::to_string(B.cols()) +
        "; bodies are n x 4 rows (x, y, z, mass)" + (B.cols() == 3 ? ": add the masses as a fourth column" : ""));
  Matrix<float> T;
  if (!o.targets.empty()) {
    T = read_points(o.targets, "--targets");
    if (T.cols() != 3)
      bad("--targets " + quoted_path(o.targets) + " is " + std::to_string(T.rows()) + " x " + std::to_string(T.cols()) +
          "; targets are m x 3 rows (x, y, z)");
  }
  const double read_s = seconds_since(t0);
  const int64_t m = o.targets.empty() ? B.rows() : T.rows();
  Matrix<float> accel(m, 3), phi(o.potential.empty() ? 0 : m, 1);
  const ArrayView<float> phi_view = o.potential.empty() ? ArrayView<float>{} : ArrayView<float>(phi.view());
  const NbodyOptions options{o.G, o.softening};
  t0 = std::chrono::steady_clock::now();
  if (o.targets.empty())
    nbody_accel(ctx, B.view(), accel.view(), phi_view, options);
  else
    nbody_field(ctx, T.view(), B.view(), accel.view(), phi_view, options);
  const double work_s = seconds_since(t0);
  bar.finish();
  OutputSet outputs;
  write_matrix(outputs.stage(o.out), accel.view());
  if (!o.potential.empty()) write_matrix(outputs.stage(o.potential), phi.view());
  outputs.commit();
  const double pairs = double(m) * double(B.rows());
  std::printf("nbody accel: %s targets x %s bodies, direct on %s in %s (%.3g interactions/s), read in %s\n",
              with_commas(m).c_str(), with_commas(B.rows()).c_str(), describe_device(ctx).c_str(),
              format_duration(work_s).c_str(), pairs / work_s, format_duration(read_s).c_str());
}

}  // namespace

void add_nbody_command(CLI::App& app) {
  auto* nbody = app.add_subcommand("nbody", "Gravitational sums of softened point masses (simkit/nbody.hpp)");
  nbody->require_subcommand(1);
  auto o = std::make_shared<NbodyAccelOptions>();
  auto* sub = nbody->add_subcommand(
      "accel", "Accelerations a_i = G sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2), n x 3 float32 out");
  sub->add_option("--bodies", o->bodies, "bodies (n x 4: x, y, z, mass): .npy or .fvecs")->required();
  sub->add_option("--targets", o->targets,
                  "evaluate the bodies' field at these points (m x 3) instead of at the bodies themselves");
  sub->add_option("--method", o->method, "direct (every pair)")->capture_default_str();
  sub->add_option("--G", o->G, "the gravitational constant, > 0")->capture_default_str();
  sub->add_option("--softening", o->softening, "eps >= 0: distances become sqrt(r^2 + eps^2)")->capture_default_str();
  sub->add_option("--out,-o", o->out, "accelerations: m x 3 float32 (.npy or .fvecs)")->required();
  sub->add_option("--potential", o->potential, "also the potentials -G sum_j m_j / r: m x 1 float32");
  add_run_options(sub, o->run);
  sub->footer(
      "Pairs at distance zero (a body and itself) contribute nothing. Bad input (NaN, negative masses, n x 3\n"
      "without masses) exits 2 with one line and writes nothing.\n"
      "Example:\n"
      "  simkit nbody accel --bodies galaxy.npy --softening 0.01 --out accel.npy --potential phi.npy --device gpu");
  sub->callback([o] { run_accel(*o); });
}

}  // namespace simkit::cli
