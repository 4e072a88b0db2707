// `ocean`: solve, check against the exact discrete solution, benchmark the two layouts, write
// or draw the field. ocean --help says what each option does.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <simkit/context.hpp>
#include <string>
#include <vector>

#include "field_output.hpp"
#include "ocean.hpp"
#include "options.hpp"

namespace ocean {
namespace {

constexpr double check_limit = 1e-6;

// --device gpu where this executable or this machine cannot serve it: exit status 3.
struct NoGpu : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require_gpu() {
  if (!gpu_solver_compiled())
    throw NoGpu("--device gpu: this build has no GPU solver (simkit was configured without CUDA: -DSIMKIT_CUDA=ON)");
  if (simkit::gpus().empty()) throw NoGpu("--device gpu: no usable GPU is visible");
}

SolveSettings settings_for(const Options& o, int n, Layout layout) {
  SolveSettings s;
  s.layout = layout;
  const int threads = o.threads ? o.threads : o.tiling ? o.tiling->threads() : omp_get_max_threads();
  s.tiling = o.tiling ? *o.tiling : default_tiling(threads);
  if (!o.gpu && (s.tiling.rows > n || s.tiling.cols > n))
    throw UsageError(std::to_string(threads) + " threads cut --n " + std::to_string(n) +
                     " into blocks with no rows or columns: use fewer --threads");
  s.omega = o.omega.value_or(optimal_omega(n));
  s.tol = o.tol;
  s.max_sweeps = o.max_sweeps;
  return s;
}

std::string describe_device(const Options& o, const SolveSettings& s, int n) {
  if (o.gpu) {
    const simkit::GpuInfo gpu = simkit::gpus().front();
    return "gpu 0 (" + gpu.name + "), blocks = tiles of " + gpu_tile_description();
  }
  return "cpu, " + std::to_string(s.tiling.threads()) + " threads, blocks " + std::to_string(s.tiling.rows) + " x " +
         std::to_string(s.tiling.cols) + " (about " + std::to_string(n / s.tiling.rows) + " x " +
         std::to_string(n / s.tiling.cols) + " points each)";
}

SolveResult solve(const Options& o, const Problem& problem, const SolveSettings& s) {
  return o.gpu ? solve_gpu(problem, s) : solve_cpu(problem, s);
}

// Prints the max error against the exact discrete solution; true when within check_limit.
bool check_against_reference(const Problem& problem, const std::vector<double>& field) {
  const int n = problem.n;
  const std::vector<double> reference = reference_solution(problem);
  double max_error = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      max_error = std::max(max_error, std::abs(field[static_cast<size_t>(i + 1) * (n + 2) + j + 1] -
                                               reference[static_cast<size_t>(i) * n + j]));
  const bool ok = max_error <= check_limit;  // false for NaN too
  std::printf(
      "check: max |u - u_ref| = %.3e over the interior (u_ref: the same discrete system solved by the "
      "discrete sine transform, float64): %s %.0e\n",
      max_error, ok ? "ok, <=" : "FAIL, >", check_limit);
  return ok;
}

int run_solve(const Options& o) {
  if (!o.plot_path.empty())
    if (const std::string problem = plotting_problem(); !problem.empty()) throw UsageError(problem);
  const Problem problem = make_problem(o.n);
  SolveSettings s = settings_for(o, o.n, o.layout);
  s.want_field = o.check || !o.field_path.empty() || !o.plot_path.empty();
  std::printf("ocean: -laplacian(u) = f on the unit square, n = %d (h = %.3e), 5-point stencil, float64\n", o.n,
              problem.h);
  std::printf("solver: red-black SOR, omega = %.6f (%s), stop at max |change| of a sweep <= %.1e\n", s.omega,
              o.omega ? (s.omega == 1 ? "Gauss-Seidel" : "--omega") : "optimal", s.tol);
  std::printf("layout %s-major, %s\n", to_string(s.layout), describe_device(o, s, o.n).c_str());
  std::fflush(stdout);

  const SolveResult r = solve(o, problem, s);
  int status = 0;
  const char* outcome = r.converged ? "converged after" : s.tol > 0 ? "NOT converged after" : "ran";
  std::printf("%s %lld sweeps (last max |change| %.2e) in %.3f s: %.4f ms a sweep\n", outcome,
              static_cast<long long>(r.sweeps), r.max_change, r.seconds,
              1e3 * r.seconds / std::max<int64_t>(r.sweeps, 1));
  if (!r.converged && s.tol > 0) status = 1;
  if (o.check && !check_against_reference(problem, r.field)) status = 1;
  if (!o.field_path.empty()) {
    write_npy(o.field_path, r.field, o.n + 2, o.n + 2);
    std::printf("field: wrote %s, %d x %d float64, boundary included, row 0 at y = 0\n", o.field_path.c_str(), o.n + 2,
                o.n + 2);
  }
  if (!o.plot_path.empty()) {
    plot_field(o.plot_path, r.field, o.n,
               "-laplacian(u) = f, n = " + std::to_string(o.n) + ", red-black SOR, " + to_string(s.layout) + " layout");
    std::printf("plot: wrote %s\n", o.plot_path.c_str());
  }
  return status;
}

// One (n, layout) cell of the benchmark: a warm-up, then `runs` runs of equal sweep counts in
// one solve (tol 0, so every run does the same work), timed sweep by sweep.
void bench_cell(const Options& o, const Problem& problem, Layout layout, double& median_ms) {
  const int n = problem.n, runs = 5;
  SolveSettings s = settings_for(o, n, layout);
  s.tol = 0, s.want_field = false, s.record_sweep_times = true;
  const double points_per_run = o.gpu ? 2e10 : 5e8;  // about 1 s a run on 2 CPU cores / an H100
  const int per_run = static_cast<int>(std::clamp(points_per_run / (double(n) * n), 4.0, 5000.0));
  const int warmup = std::max(2, per_run / 5);
  s.max_sweeps = warmup + int64_t{runs} * per_run;
  const SolveResult r = solve(o, problem, s);
  std::vector<double> ms;
  for (int k = 0; k < runs; ++k) {
    const size_t first = warmup + size_t(k) * per_run - 1, last = first + per_run;
    ms.push_back(1e3 * (r.sweep_end_seconds[last] - r.sweep_end_seconds[first]) / per_run);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  median_ms = sorted[runs / 2];
  std::printf("%6d  %-6s %7d  %10.4f  %8.4f..%-8.4f %9.1f", n, to_string(layout), per_run, median_ms, sorted.front(),
              sorted.back(), double(n) * n / (median_ms * 1e3));
}

int run_bench(const Options& o) {
  std::vector<int> sizes = {1024, 2048, 4096};
  if (o.gpu) sizes.push_back(8192);
  if (o.n_given) sizes = {o.n};
  const SolveSettings first = settings_for(o, sizes.front(), Layout::row_major);
  std::printf("ocean --bench: %s; omega %s\n", describe_device(o, first, sizes.front()).c_str(),
              o.omega ? "from --omega" : "optimal for each n");
  std::printf("a sweep = the red and the black half-sweep and the max |change| reduction%s\n",
              o.gpu ? " (simkit scan on the device, 8 bytes back, stream sync)" : " (two barriers)");
  std::printf("ms/sweep: median of 5 runs of `sweeps` sweeps each, after a warm-up; min..max over the 5\n\n");
  std::printf("%6s  %-6s %7s  %10s  %-18s %9s  %s\n", "n", "layout", "sweeps", "ms/sweep", "min..max", "Mpoint/s",
              "row/block");
  for (const int n : sizes) {
    const Problem problem = make_problem(n);
    double row_ms = 0, block_ms = 0;
    bench_cell(o, problem, Layout::row_major, row_ms);
    std::printf("\n");
    bench_cell(o, problem, Layout::block_major, block_ms);
    std::printf("  %.2fx\n", row_ms / block_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace ocean

int main(int argc, char** argv) {
  using namespace ocean;
  try {
    const Options o = parse_options(argc, argv);
    if (o.help) {
      std::fputs(help_text(), stdout);
      return 0;
    }
    if (o.gpu) require_gpu();
    return o.bench ? run_bench(o) : run_solve(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ocean: %s\n", e.what());
    return 2;
  } catch (const NoGpu& e) {
    std::fprintf(stderr, "ocean: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ocean: %s\n", e.what());
    return 1;
  }
}
