// `simkit nbody accel --bodies B.npy [--targets T.npy] --out A.npy [--potential P.npy]`: the
// gravitational accelerations (and potentials) of softened point masses by the direct sum
// (simkit/nbody.hpp); `simkit nbody run`: a leapfrog integration from generated initial
// conditions, reporting energy drift and momentum. Every input is read and checked before the work and the outputs are
// written together atomically, so bad input exits with status 2 and leaves nothing behind.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/nbody.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "embedded_python.hpp"
#include "nbody_plot_script.hpp"

namespace simkit::cli {

namespace {

struct NbodyAccelOptions {
  std::string bodies, targets, out, potential, method = "direct";
  double G = 1.0, softening = 0.0, theta = 0.5;
  bool quadrupole = false;
  RunOptions run;
};

void run_accel(const NbodyAccelOptions& o) {
  if (o.method != "direct" && o.method != "bh")
    bad("--method " + o.method + ": direct (every pair) or bh (Barnes-Hut)");
  if (!(std::isfinite(o.theta) && o.theta >= 0)) bad("--theta must be a finite value >= 0, got " + number(o.theta));
  if (!(std::isfinite(o.G) && o.G > 0)) bad("--G must be a finite value > 0, got " + number(o.G));
  if (!(std::isfinite(o.softening) && o.softening >= 0))
    bad("--softening must be a finite value >= 0, got " + number(o.softening));
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
  ProgressBar bar("nbody");
  Context ctx = make_context(o.run, bar.callback());
  const int64_t m = o.targets.empty() ? B.rows() : T.rows();
  Matrix<float> accel(m, 3), phi(o.potential.empty() ? 0 : m, 1);
  const ArrayView<float> phi_view = o.potential.empty() ? ArrayView<float>{} : ArrayView<float>(phi.view());
  NbodyOptions options{o.G, o.softening};
  if (o.method == "bh") options.method = NbodyMethod::barnes_hut, options.theta = o.theta;
  options.quadrupole = o.quadrupole;
  t0 = std::chrono::steady_clock::now();
  const NbodyReport report = o.targets.empty() ? nbody_accel(ctx, B.view(), accel.view(), phi_view, options)
                                               : nbody_field(ctx, T.view(), B.view(), accel.view(), phi_view, options);
  const double work_s = seconds_since(t0);
  bar.finish();
  OutputSet outputs;
  write_matrix(outputs.stage(o.out), accel.view());
  if (!o.potential.empty()) write_matrix(outputs.stage(o.potential), phi.view());
  outputs.commit();
  std::printf("nbody accel: %s targets x %s bodies, %s on %s in %s (%.3g interactions/s), read in %s\n",
              with_commas(m).c_str(), with_commas(B.rows()).c_str(), o.method.c_str(), describe_device(ctx).c_str(),
              format_duration(work_s).c_str(), double(report.interactions) / work_s, format_duration(read_s).c_str());
  if (o.method == "bh")
    std::printf("  %.1f interactions per target; thread work max/mean %.3f\n", double(report.interactions) / double(m),
                report.imbalance);
}

struct NbodyRunOptions {
  std::string init = "plummer", snapshots, plot, method = "direct";
  int64_t n = 4096, steps = 1000, every = 100;
  double dt = 1.0 / 256, softening = 0.01, theta = 0.5;
  uint64_t seed = 0;
  RunOptions run;
};

void run_simulation(const NbodyRunOptions& o) {
  if (!(std::isfinite(o.dt) && o.dt > 0)) bad("--dt must be a finite value > 0, got " + number(o.dt));
  if (!(std::isfinite(o.softening) && o.softening >= 0))
    bad("--softening must be a finite value >= 0, got " + number(o.softening));
  if (!(std::isfinite(o.theta) && o.theta >= 0)) bad("--theta must be a finite value >= 0, got " + number(o.theta));
  if (!o.snapshots.empty() && !std::filesystem::is_directory(o.snapshots))
    bad("--snapshots " + quoted_path(o.snapshots) + " is not a directory");
  if (!o.plot.empty()) {
    check_output_path(o.plot, "--plot", {".png", ".svg", ".pdf"});
    check_plotting();
  }
  Context ctx = make_context(o.run, nullptr);
  NbodySystem s = nbody_initial(o.init, o.n, o.seed);
  std::string report_csv = "step,time,kinetic,potential,drift,momentum\n";
  // The energies are always the exact float64 sums; the steps' forces come from --method, and
  // Barnes-Hut on the CPU keeps each body's work of the last step to split the next (cost zones).
  const NbodyOptions options{1.0, o.softening};
  std::vector<int64_t> costs;
  NbodyOptions forces = options;
  if (o.method == "bh") {
    costs.assign(size_t(o.n), 0);
    forces.method = NbodyMethod::barnes_hut, forces.theta = o.theta, forces.costs = ArrayView<int64_t>(costs);
  }
  const NbodyDiagnostics start = nbody_diagnostics(ctx, s.bodies.view(), s.velocities.view(), options);
  std::printf("nbody run: %s, %s bodies, %lld steps of dt = %g, softening %g, %s on %s\n", o.init.c_str(),
              with_commas(o.n).c_str(), (long long)o.steps, o.dt, o.softening,
              o.method == "bh" ? ("Barnes-Hut theta " + number(o.theta)).c_str() : "direct sum",
              describe_device(ctx).c_str());
  std::printf("  %8s %10s %14s %14s %14s %12s\n", "step", "time", "kinetic", "potential", "energy drift", "|momentum|");
  auto report = [&](int64_t step) {
    const NbodyDiagnostics d = nbody_diagnostics(ctx, s.bodies.view(), s.velocities.view(), options);
    const double p =
        std::sqrt(d.momentum[0] * d.momentum[0] + d.momentum[1] * d.momentum[1] + d.momentum[2] * d.momentum[2]);
    std::printf("  %8lld %10.4f %14.7f %14.7f %14.3e %12.3e\n", (long long)step, double(step) * o.dt, d.kinetic,
                d.potential, d.total / start.total - 1, p);
    char line[160];
    std::snprintf(line, sizeof line, "%lld,%.9g,%.9g,%.9g,%.6e,%.6e\n", (long long)step, double(step) * o.dt, d.kinetic,
                  d.potential, d.total / start.total - 1, p);
    report_csv += line;
    std::fflush(stdout);
    if (!o.snapshots.empty()) {
      char name[64];
      std::snprintf(name, sizeof name, "/bodies_%06lld.npy", (long long)step);
      write_matrix(o.snapshots + name, s.bodies.view());
    }
  };
  report(0);
  const auto t0 = std::chrono::steady_clock::now();
  nbody_leapfrog(ctx, s.bodies.view(), s.velocities.view(), o.dt, o.steps, forces, [&](int64_t step) {
    if (step % o.every == 0 || step == o.steps) report(step);
  });
  const double seconds = seconds_since(t0);
  std::printf("%lld steps in %s (%.3g interactions/s)\n", (long long)o.steps, format_duration(seconds).c_str(),
              double(o.steps) * double(o.n) * double(o.n) / seconds);
  if (!o.plot.empty()) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    const std::string csv = dir + "/simkit-nbody-report-" + std::to_string(::getpid()) + ".csv";
    const std::string npy = dir + "/simkit-nbody-bodies-" + std::to_string(::getpid()) + ".npy";
    {
      std::ofstream f(csv);
      f << report_csv;
    }
    write_matrix(npy, s.bodies.view());
    run_python_script(plot_nbody_py,
                      {"--report", csv, "--snapshot", npy, "--out", o.plot, "--title",
                       "simkit nbody run: " + o.init + ", " + with_commas(o.n) + " bodies"},
                      "--plot: drawing " + quoted_path(o.plot));
    std::filesystem::remove(csv);
    std::filesystem::remove(npy);
  }
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
  sub->add_option("--method", o->method, "direct (every pair) or bh (Barnes-Hut)")->capture_default_str();
  sub->add_option("--theta", o->theta,
                  "bh: the opening angle: smaller is more accurate and slower (0.5: median force error ~3e-4 on "
                  "the CPU, ~7e-4 on the GPU; each backend's rule in simkit/nbody.hpp)")
      ->capture_default_str();
  sub->add_flag("--quadrupole", o->quadrupole,
                "bh, CPU: cells act with their quadrupole too (3-7x smaller force error)");
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

  auto r = std::make_shared<NbodyRunOptions>();
  auto* run = nbody->add_subcommand(
      "run", "Integrate a system with leapfrog (kick-drift-kick), G = 1, printing energy drift and momentum");
  run->add_option("--init", r->init, "plummer (Henon units), uniform (a cold ball) or collision (two Plummer spheres)")
      ->check(CLI::IsMember({"plummer", "uniform", "collision"}))
      ->capture_default_str();
  run->add_option("--n", r->n, "bodies")->check(CLI::Range(int64_t{4}, int64_t{1} << 24))->capture_default_str();
  run->add_option("--steps", r->steps, "leapfrog steps")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  run->add_option("--dt", r->dt, "the step, > 0")->capture_default_str();
  run->add_option("--softening", r->softening, "eps >= 0")->capture_default_str();
  run->add_option("--method", r->method, "the forces of each step: direct (every pair) or bh (Barnes-Hut)")
      ->check(CLI::IsMember({"direct", "bh"}))
      ->capture_default_str();
  run->add_option("--theta", r->theta, "bh: the opening angle (smaller: more accurate, slower)")->capture_default_str();
  run->add_option("--seed", r->seed, "the initial conditions' seed")->capture_default_str();
  run->add_option("--every", r->every, "report (and snapshot) every K steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  run->add_option("--snapshots", r->snapshots, "write bodies_<step>.npy (n x 4) into this directory at each report");
  run->add_option("--plot", r->plot,
                  "draw the last state (x-y projection) and the energy drift over time (.png/.svg/.pdf; needs "
                  "python3 with matplotlib)");
  add_run_options(run, r->run);
  run->footer(
      "The energy drift is E / E0 - 1 against the start (energies summed exactly, in float64, whatever the\n"
      "method); the forces run on --device.\n"
      "Examples:\n  simkit nbody run --init plummer --n 16384 --steps 1000 --dt 0.001 --every 100 --device gpu\n"
      "  simkit nbody run --init collision --n 1000000 --steps 200 --dt 0.002 --method bh --theta 0.5 --device gpu "
      "--every 50"),
      run->callback([r] { run_simulation(*r); });
}

}  // namespace simkit::cli
