// `simkit bench nbody`: the direct gravitational sum over N bodies uniform in a cube, N = 2^s for
// each s of --sizes (default 14..20 on the GPU, 12..16 on the CPU): interactions per second, and
// on the GPU the share of the FP32 peak counting 20 floating-point operations per interaction
// (the convention of GPU Gems 3 ch. 31, the figure its peers quote); the accelerations of 64
// bodies checked against float64, relative to the sum of the pair magnitudes (simkit/nbody.hpp).
// Then Barnes-Hut on a Plummer sphere for each s of --bh-sizes (default 14..22 on the GPU, 12..20
// on the CPU) at theta 0.3, 0.5, 0.7, 1.0 (on the CPU with and without quadrupoles): time, tree
// build and walk time, interactions per body, and the median and 99th-percentile relative force
// error against the direct sum at 256 bodies (nbody_field at those bodies).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/nbody.hpp>

#include "bench_harness.hpp"

namespace simkit::cli::bench {

namespace {

constexpr double kFlopsPerInteraction = 20.0;
constexpr double kTolerance = 1e-5;
constexpr double kSoftening = 1e-3;

/// The worst error of `accel` at `checked` bodies against float64.
double max_error(const Matrix<float>& B, const Matrix<float>& accel, const std::vector<int64_t>& checked) {
  double worst = 0;
  for (int64_t i : checked) {
    double a[3] = {0, 0, 0}, scale = 0;
    for (int64_t j = 0; j < B.rows(); ++j) {
      const double d[3] = {double(B(j, 0)) - B(i, 0), double(B(j, 1)) - B(i, 1), double(B(j, 2)) - B(i, 2)};
      const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (d2 == 0) continue;
      const double r2 = d2 + kSoftening * kSoftening, w = B(j, 3) / (r2 * std::sqrt(r2));
      for (int c = 0; c < 3; ++c) a[c] += w * d[c];
      scale += B(j, 3) / r2;
    }
    double e = 0;
    for (int c = 0; c < 3; ++c) e += (accel(i, c) - a[c]) * (accel(i, c) - a[c]);
    worst = std::max(worst, std::sqrt(e) / scale);
    if (std::isnan(accel(i, 0))) return NAN;
  }
  return worst;
}

/// Relative force errors at the sampled bodies: sorted, one per body.
std::vector<double> force_errors(const Matrix<float>& accel, const Matrix<float>& truth,
                                 const std::vector<int64_t>& sample) {
  std::vector<double> err;
  for (size_t r = 0; r < sample.size(); ++r) {
    double d = 0, t = 0;
    for (int c = 0; c < 3; ++c) {
      const double want = truth(int64_t(r), c);
      d += (accel(sample[r], c) - want) * (accel(sample[r], c) - want), t += want * want;
    }
    err.push_back(std::sqrt(d / t));
  }
  std::sort(err.begin(), err.end());
  return err;
}

/// Barnes-Hut rows: per N and theta (and, on the CPU, with and without quadrupoles), time, the
/// tree build / walk split, and the force errors at 256 sampled bodies against the direct sum.
/// On the GPU the bodies and accelerations stay on the device, so a row times one force
/// evaluation as a simulation step would call it.
void run_barnes_hut(const Setup& s, const std::vector<int64_t>& sizes, const Options& o, std::vector<Row>& rows) {
  const bool gpu = s.ctx.device == Device::gpu;
  std::printf("\n  Barnes-Hut, Plummer sphere, softening %g: error = |a - a_direct| / |a_direct| at 256 bodies\n",
              kSoftening);
  std::printf("  %10s %6s %5s %12s %10s %10s %12s %12s %10s %10s\n", "N", "theta", "quad", "median ms", "build ms",
              "walk ms", "inter./body", "median err", "p99 err", gpu ? "group size" : "imbalance");
  for (int64_t log_n : sizes) {
    if (log_n < 4 || log_n > 26) throw Error(ErrorCode::invalid_argument, "--bh-sizes: log2 N in 4 .. 26");
    const int64_t n = int64_t(1) << log_n;
    const NbodySystem sys = nbody_initial("plummer", n, o.seed + uint64_t(log_n));
    const std::vector<int64_t> sample = sample_rows(n, 256);
    Matrix<float> targets(int64_t(sample.size()), 3), truth(int64_t(sample.size()), 3), accel(n, 3);
    for (size_t r = 0; r < sample.size(); ++r)
      for (int c = 0; c < 3; ++c) targets(int64_t(r), c) = sys.bodies(sample[r], c);
    nbody_field(s.ctx, targets.view(), sys.bodies.view(), truth.view(), {}, NbodyOptions{1.0, kSoftening});
    std::optional<DeviceMatrix<float>> bodies_d, accel_d;
    if (gpu) bodies_d.emplace(s.ctx, sys.bodies.view()), accel_d.emplace(s.ctx, n, 3);
    std::vector<int64_t> costs(static_cast<size_t>(n), 0);
    for (double theta : {0.3, 0.5, 0.7, 1.0})
      for (bool quadrupole : {false, true}) {
        if (gpu && quadrupole) continue;  // monopoles only on the GPU
        NbodyOptions opt{1.0, kSoftening, NbodyMethod::barnes_hut, theta, ArrayView<int64_t>(costs), quadrupole};
        if (gpu) opt.costs = {};
        NbodyReport report;
        std::vector<double> build, walk;
        const Stats st = summarize(time_runs(
            [&] {
              if (gpu) {
                report = nbody_accel(s.ctx, bodies_d->view(), accel_d->view(), {}, opt);
              } else {
                report = nbody_accel(s.ctx, sys.bodies.view(), accel.view(), {}, opt);
              }
              build.push_back(report.build_ms), walk.push_back(report.walk_ms);
            },
            s.warmup, s.repeat));
        if (gpu) accel_d->copy_to_host(accel.view());
        const std::vector<double> err = force_errors(accel, truth, sample);
        const double median = err[err.size() / 2], p99 = err[std::min(err.size() - 1, err.size() * 99 / 100)];
        std::sort(build.begin(), build.end()), std::sort(walk.begin(), walk.end());
        const double build_ms = build[build.size() / 2], walk_ms = walk[walk.size() / 2];
        const double last = gpu ? double(n) / double(std::max<int64_t>(report.groups, 1)) : report.imbalance;
        std::printf("  %10lld %6.1f %5s %12.3f %10.3f %10.3f %12.1f %12.2e %12.2e %10.*f\n", (long long)n, theta,
                    quadrupole ? "yes" : "no", st.median_ms, build_ms, walk_ms, double(report.interactions) / double(n),
                    median, p99, gpu ? 1 : 3, last);
        std::fflush(stdout);
        Row r;
        r.suite = "nbody", r.case_name = std::string("barnes_hut") + (quadrupole ? "_quadrupole" : "");
        r.metric = "theta=" + format_number(theta, 1), r.m = n, r.n = n, r.d = 3, r.device = gpu ? "gpu" : "cpu";
        r.stats = st, r.gflops = double(report.interactions) / (st.median_ms * 1e-3) * kFlopsPerInteraction / 1e9;
        r.error = median;
        r.check = "median; p99 " + format_error(p99) + "; build " + format_number(build_ms, 3) + " ms; walk " +
                  format_number(walk_ms, 3) + " ms";
        rows.push_back(r);
      }
  }
}

}  // namespace

void run_nbody_suite(const Options& o) {
  const Setup s = prepare(o, "nbody", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1, /*cpu_warmup=*/1);
  const bool gpu = s.ctx.device == Device::gpu;
  const std::vector<int64_t> sizes = parse_int_list(
      o.sizes.empty() ? (gpu ? (o.quick ? "12,14" : "14,16,18,20") : (o.quick ? "10,12" : "12,14,16")) : o.sizes,
      "--sizes", "14,16,18");
  std::printf(
      "  workload:  N bodies uniform in [-1, 1)^3, masses in [0.5, 1.5), softening %g; direct sum;\n"
      "             %g flops per interaction; error at 64 bodies vs float64 (tolerance %.0e)\n\n",
      kSoftening, kFlopsPerInteraction, kTolerance);
  std::printf("  %10s %12s %16s %10s %10s %10s\n", "N", "median ms", "interactions/s", "TFLOP/s", "% peak", "error");
  std::vector<Row> rows;
  for (int64_t log_n : sizes) {
    if (log_n < 1 || log_n > 26) throw Error(ErrorCode::invalid_argument, "--sizes: log2 N in 1 .. 26");
    const int64_t n = int64_t(1) << log_n;
    std::mt19937_64 rng(o.seed + uint64_t(log_n));
    std::uniform_real_distribution<float> pos(-1.f, 1.f), mass(0.5f, 1.5f);
    Matrix<float> B(n, 4), accel(n, 3);
    for (int64_t i = 0; i < n; ++i) B(i, 0) = pos(rng), B(i, 1) = pos(rng), B(i, 2) = pos(rng), B(i, 3) = mass(rng);
    const NbodyOptions options{1.0, kSoftening};
    const Stats st =
        summarize(time_runs([&] { nbody_accel(s.ctx, B.view(), accel.view(), {}, options); }, s.warmup, s.repeat));
    Row r;
    r.suite = "nbody", r.case_name = "direct", r.metric = "gravity", r.m = n, r.n = n, r.d = 3;
    r.device = gpu ? "gpu" : "cpu";
    r.stats = st;
    const double interactions = double(n) * double(n) / (st.median_ms * 1e-3);
    r.gflops = interactions * kFlopsPerInteraction / 1e9;
    if (gpu) r.pct_peak = 100.0 * r.gflops / (s.gpu->fp32_tflops * 1e3);
    r.error = max_error(B, accel, sample_rows(n, 64));
    r.check = r.error <= kTolerance ? "PASS" : "FAIL";
    std::printf("  %10lld %12.3f %16.3e %10.2f %10s %10.2e %s\n", (long long)n, st.median_ms, interactions,
                r.gflops / 1e3, r.pct_peak ? format_number(*r.pct_peak, 1).c_str() : "-", r.error, r.check.c_str());
    std::fflush(stdout);
    rows.push_back(r);
  }
  const char* bh_default = gpu ? (o.quick ? "12,14" : "14,16,18,20,22") : (o.quick ? "10,12" : "12,14,16,18,20");
  run_barnes_hut(s, parse_int_list(o.bh_sizes.empty() ? bh_default : o.bh_sizes, "--bh-sizes", "12,16,20"), o, rows);
  write_csv(o.csv, rows);
}

}  // namespace simkit::cli::bench
