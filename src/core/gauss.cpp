// The public Gauss transform: argument checks, device resolution and the choice between the
// direct sum and the IFGT. The backends (src/cpu/gauss/gauss_direct.cpp, src/cpu/ifgt*.cpp,
// src/cuda/gauss/gauss_direct.cu) assume everything checked here.
//
// Where things run. Both methods run on the resolved device. The IFGT's plan is made on the host
// (core/ifgt_plan.cpp) with that device's cost model, from a sample of the data that the device
// gathers where the data lives there. The GPU IFGT is compiled for d <= kIfgtMaxGpuDims: beyond that an explicit `ifgt`
// on the GPU is refused and `auto` keeps the direct sum.

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/gauss_checks.hpp"
#include "core/ifgt_plan.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

namespace detail {

void check_gauss_arguments(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                           MatrixView<const float> Y, double h, MatrixView<double> out, const GaussOptions& options) {
  check_points(X, "sources");
  check_points(Y, "targets");
  if (X.cols != Y.cols)
    fail("dimension mismatch: sources have d = " + std::to_string(X.cols) +
         ", targets have d = " + std::to_string(Y.cols));
  if (!q.empty() && static_cast<int64_t>(q.size()) != X.rows)
    fail("weights have " + std::to_string(q.size()) + " values but there are " + std::to_string(X.rows) +
         " sources (pass one weight per source, or none for all ones)");
  if (!std::isfinite(h) || h <= 0) fail("bandwidth h must be a positive finite number, got " + num(h));
  if (!std::isfinite(1.0 / (h * h))) fail("bandwidth h = " + num(h) + " is too small: 1 / h^2 overflows a double");
  if (!(options.eps > 0 && options.eps < 1)) fail("eps must lie in (0, 1), got " + num(options.eps));
  if (options.method != GaussMethod::direct && options.method != GaussMethod::ifgt &&
      options.method != GaussMethod::automatic)
    fail("unknown Gauss transform method");
  if (out.data == nullptr) fail("out has a null data pointer");
  if (out.size() != Y.rows || (out.rows != Y.rows && out.cols != Y.rows))
    fail("out must hold one value per target (" + std::to_string(Y.rows) + " x 1), got " + std::to_string(out.rows) +
         " x " + std::to_string(out.cols));
  for (size_t i = 0; i < q.size(); ++i)
    if (!std::isfinite(q[i])) fail("weights contain NaN or Inf (index " + std::to_string(i) + ")");
  // Host data is checked before the device is resolved, so bad input fails with its own
  // message alone (as in knn).
  check_host_finite(ctx, {{X, "sources"}, {Y, "targets"}});
}

}  // namespace detail

GaussMethod parse_gauss_method(const std::string& name) {
  if (name == "direct") return GaussMethod::direct;
  if (name == "ifgt") return GaussMethod::ifgt;
  if (name == "auto") return GaussMethod::automatic;
  throw Error(ErrorCode::invalid_argument,
              "unknown Gauss transform method " + simkit::quoted(name) + " (expected direct, ifgt or auto)");
}

const char* to_string(GaussMethod method) noexcept {
  switch (method) {
    case GaussMethod::direct: return "direct";
    case GaussMethod::ifgt: return "ifgt";
    case GaussMethod::automatic: return "auto";
  }
  return "unknown";
}

GaussReport gauss_transform(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                            MatrixView<const float> Y, double h, MatrixView<double> out, const GaussOptions& options) {
  const auto t_start = std::chrono::steady_clock::now();
  detail::check_gauss_arguments(ctx, X, q, Y, h, out, options);
  const detail::Backend& backend = detail::backend_for(ctx, {X.where, Y.where, out.where});
  detail::check_device_finite(ctx, {{X, "sources"}, {Y, "targets"}});

  std::vector<double> ones;
  const double* weights = q.data();
  if (q.empty()) {
    ones.assign(static_cast<size_t>(X.rows), 1.0);
    weights = ones.data();
  }

  GaussReport report;
  report.method = GaussMethod::direct;
  bool use_ifgt = false;
  detail::IfgtChoice choice;
  if (options.method != GaussMethod::direct) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::getenv("SIMKIT_IFGT_TRACE") != nullptr)
      std::fprintf(stderr, "ifgt trace: checks %.3f ms\n",
                   std::chrono::duration<double, std::milli>(t0 - t_start).count());
    const detail::IfgtSample sample = backend.ifgt_sample(ctx, X, Y);
    const auto t1 = std::chrono::steady_clock::now();
    choice = detail::plan_ifgt(ctx, backend.device(), sample, h, options);
    if (std::getenv("SIMKIT_IFGT_TRACE") != nullptr)  // with the phases of cuda/ifgt.cu
      std::fprintf(stderr, "ifgt trace: sample %.3f ms, plan %.3f ms (%s)\n",
                   std::chrono::duration<double, std::milli>(t1 - t0).count(),
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count(),
                   choice.why.c_str());
  }
  if (options.method == GaussMethod::ifgt) {
    if (!choice.feasible)
      fail("the IFGT cannot meet eps = " + num(options.eps) + ": " + choice.why + "; use --method direct or auto");
    use_ifgt = true;
  } else if (options.method == GaussMethod::automatic) {
    if (!choice.feasible) {
      report.note = "auto: direct, the IFGT is infeasible here: " + choice.why;
    } else if (choice.ifgt_cost < choice.direct_cost) {
      use_ifgt = true;
      report.note = "auto: ifgt, predicted " + num(choice.ifgt_cost) + " s < direct " + num(choice.direct_cost) + " s";
    } else {
      report.note =
          "auto: direct, predicted IFGT " + num(choice.ifgt_cost) + " s >= direct " + num(choice.direct_cost) + " s";
    }
  }

  const detail::GaussArgs args{X, weights, Y, h, out};
  if (use_ifgt) {
    const detail::IfgtFinal fin = backend.gauss_ifgt(ctx, args, choice);
    if (std::getenv("SIMKIT_IFGT_TRACE") != nullptr)
      std::fprintf(stderr, "ifgt trace: whole call %.3f ms\n",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count());
    report.method = GaussMethod::ifgt;
    report.clusters = choice.clusters;
    report.order = fin.order;
    report.cutoff_radius = choice.cutoff_radius;
    report.error_bound = fin.error_bound;
    if (choice.fixed_order && fin.error_bound > options.eps) {
      if (!report.note.empty()) report.note += "; ";
      report.note += "the fixed order p = " + std::to_string(fin.order) + " guarantees only " + num(fin.error_bound) +
                     " x sum|q|, above eps";
    }
  } else {
    backend.gauss_direct(ctx, args);
  }
  return report;
}

std::vector<double> gauss_transform(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                                    MatrixView<const float> Y, double h, const GaussOptions& options,
                                    GaussReport* report) {
  std::vector<double> out(Y.rows > 0 ? static_cast<size_t>(Y.rows) : 0);
  MatrixView<double> view(out.empty() ? nullptr : out.data(), Y.rows, 1);
  const GaussReport r = gauss_transform(ctx, X, q, Y, h, view, options);
  if (report != nullptr) *report = r;
  return out;
}

}  // namespace simkit
