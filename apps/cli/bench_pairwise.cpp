// `simkit bench pairwise`: the seed-0 workload (the similarity matrix of 1,000 queries against
// 10,000 base rows at d = 384, 768, 1024 under cosine, l2 and pearson), timed with inputs and
// output resident where the backend computes, and checked against float64.

#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>
#include <simkit/pairwise.hpp>

#include "bench_harness.hpp"
#include "generate.hpp"

namespace simkit::cli::bench {

namespace {

constexpr double kTolerance = 1e-5;  // DESIGN.md: fp32 results match float64 to ~1e-5
constexpr int64_t kSampleRows = 8;   // query rows checked against float64, each against every base row

TablePrinter pairwise_table() {
  return TablePrinter({{"case", 11, false},
                       {"metric", 7, false},
                       {"m x n x d", 18, false},
                       {"median ms", 10, true},
                       {"min ms", 9, true},
                       {"max ms", 9, true},
                       {"GFLOP/s", 9, true},
                       {"% FP32", 6, true},
                       {"GB/s", 7, true},
                       {"error", 9, true},
                       {"check", 5, false}});
}

}  // namespace

void run_pairwise_suite(const Options& o) {
  Setup s = prepare(o, "pairwise", /*gpu_repeat=*/20, /*cpu_repeat=*/10, /*gpu_warmup=*/3, /*cpu_warmup=*/3);
  const bool on_gpu = s.ctx.device == Device::gpu;
  const int64_t m = o.quick ? 100 : 1000, n = o.quick ? 1000 : 10000;
  const std::vector<int64_t> dims = {384, 768, 1024};
  const std::vector<Metric> metrics = {Metric::cosine, Metric::l2, Metric::pearson};

  std::printf("  workload:  %lld queries x %lld base rows, uniform in [-1, 1), seed %llu%s\n", (long long)m,
              (long long)n, (unsigned long long)o.seed,
              o.quick ? " (--quick: smoke-run sizes, not a measurement)" : "");
  std::printf(
      "  check:     max |error| vs float64 (l2: relative, |error| / max(|ref|, 1)) on %lld query rows x all\n"
      "             base rows; PASS at <= %.0e\n\n",
      (long long)kSampleRows, kTolerance);
  const TablePrinter table = pairwise_table();
  std::printf("%s\n", table.header().c_str());
  std::fflush(stdout);

  std::vector<Row> rows;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t d : dims) {
    GenSpec spec;
    spec.dim = d;
    spec.distribution = Distribution::uniform;
    spec.rows = m;
    spec.seed = o.seed * 1000003 + uint64_t(d) * 2 + 0;
    const Matrix<float> Q = generate(spec);
    spec.rows = n;
    spec.seed = o.seed * 1000003 + uint64_t(d) * 2 + 1;
    const Matrix<float> X = generate(spec);

    // Poison: every entry must be overwritten by the runs; a NaN left behind fails the check.
    const Matrix<float> poison(m, n, nan);
    Matrix<float> out(m, n, nan);
    std::optional<DeviceMatrix<float>> dQ, dX, dOut;
    MatrixView<const float> Qv = Q.view(), Xv = X.view();
    if (on_gpu) {
      dQ.emplace(s.ctx, Q.view());
      dX.emplace(s.ctx, X.view());
      Qv = dQ->view();
      Xv = dX->view();
    }

    for (const Metric metric : metrics) {
      MatrixView<float> outv = out.view();
      if (on_gpu) {
        dOut.emplace(s.ctx, poison.view());
        outv = dOut->view();
      } else {
        out = Matrix<float>(m, n, nan);
        outv = out.view();
      }
      const Context& ctx = s.ctx;
      const auto ms = time_runs(
          [&] {
            pairwise(ctx, Qv, Xv, metric, outv);
            synchronize(ctx);
          },
          s.warmup, s.repeat);
      if (on_gpu) dOut->copy_to_host(out.view());

      Row r;
      r.suite = "pairwise";
      r.case_name = "seed0-d" + std::to_string(d);
      r.metric = to_string(metric);
      r.m = m, r.n = n, r.d = d, r.k = 0;
      r.device = to_string(s.ctx.device);
      r.stats = summarize(ms);
      r.gflops = gflops(m, n, d, r.stats.median_ms);
      if (on_gpu && s.gpu->fp32_tflops > 0) r.pct_peak = 100.0 * r.gflops / (s.gpu->fp32_tflops * 1000.0);
      const int64_t unwritten = count_non_finite(out.view());
      r.error = max_error(Q.view(), X.view(), metric, out.view(), sample_rows(m, kSampleRows));
      r.check = unwritten == 0 && r.error <= kTolerance ? "PASS" : "FAIL";
      rows.push_back(r);

      const double bytes = 4.0 * double(m * d + n * d + m * n);
      const double gbs = bytes / (r.stats.median_ms * 1e-3) / 1e9;
      std::printf("%s\n", table
                              .row({r.case_name, r.metric,
                                    std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(d),
                                    format_number(r.stats.median_ms, 3), format_number(r.stats.min_ms, 3),
                                    format_number(r.stats.max_ms, 3), format_number(r.gflops, r.gflops < 100 ? 1 : 0),
                                    r.pct_peak ? format_number(*r.pct_peak, 1) : std::string("n/a"),
                                    format_number(gbs, gbs < 100 ? 1 : 0), format_error(r.error), r.check})
                              .c_str());
      if (unwritten > 0)
        std::printf("  ! %lld of %lld output entries are NaN/Inf after the runs (unwritten or overflowed)\n",
                    (long long)unwritten, (long long)(m * n));
      std::fflush(stdout);
    }
  }

  int failed = 0;
  for (const auto& r : rows) failed += r.check == "PASS" ? 0 : 1;
  std::printf(
      "\n%zu cases, %d failed the correctness check. GFLOP/s = 2 m n d / median time; GB/s counts the\n"
      "inputs read once and the m x n output written once.\n",
      rows.size(), failed);
  write_csv(o.csv, rows);
  if (failed > 0) throw std::runtime_error(std::to_string(failed) + " pairwise case(s) failed the correctness check");
}

}  // namespace simkit::cli::bench
