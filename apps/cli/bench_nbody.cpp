// `simkit bench nbody`: the direct gravitational sum over N bodies uniform in a cube, N = 2^s for
// each s of --sizes (default 14..20 on the GPU, 12..16 on the CPU): interactions per second, and
// on the GPU the share of the FP32 peak counting 20 floating-point operations per interaction
// (the convention of GPU Gems 3 ch. 31, the figure its peers quote); the accelerations of 64
// bodies checked against float64, relative to the sum of the pair magnitudes (simkit/nbody.hpp).

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

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
  write_csv(o.csv, rows);
}

}  // namespace simkit::cli::bench
