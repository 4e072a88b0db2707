// `simkit bench knn`: exact k = 10 search (sqeuclidean unless --metric says otherwise) over 1,000,000 base rows, at d =
// 128 with 10,000 queries and at d = 768 with 1,000 queries. Inputs and outputs stay where the backend computes;
// recall@10 is checked on a sample of queries against an independent result (the CPU backend for a GPU run, a float64
// brute force for a CPU run).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "bench_harness.hpp"
#include "generate.hpp"

namespace simkit::cli::bench {

namespace {

constexpr int64_t kK = 10;
constexpr int64_t kGpuSample = 200;     // queries re-searched on the CPU backend after a GPU run
constexpr int64_t kCpuSample = 10;      // queries re-searched in float64 after a CPU run
constexpr double kTieTolerance = 1e-5;  // a "miss" this close to the k-th distance is a tie

struct Case {
  int64_t d, n, m;  // dimension, base rows, queries
};

Case case_for(int64_t d, bool quick) {
  if (d == 128) return quick ? Case{128, 20000, 500} : Case{128, 1000000, 10000};
  if (d == 768) return quick ? Case{768, 20000, 100} : Case{768, 1000000, 1000};
  throw Error(ErrorCode::invalid_argument,
              "--cases: no knn case with d = " + std::to_string(d) + " (the cases are 128 and 768)");
}

// The queries a CPU run times by default: the full d = 128 case is ~2.6 TFLOP.
int64_t default_cpu_queries(int64_t d) { return d == 128 ? 1000 : 100; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TablePrinter knn_table() {
  return TablePrinter({{"case", 10, false},
                       {"queries x base x d", 22, false},
                       {"k", 3, true},
                       {"median ms", 10, true},
                       {"min ms", 9, true},
                       {"max ms", 9, true},
                       {"GFLOP/s", 9, true},
                       {"% FP32", 6, true},
                       {"recall@k", 8, true},
                       {"check", 5, false}});
}

struct RecallReport {
  double recall = 0;     // hits / (rows x k)
  int64_t misses = 0;    // found ids absent from the reference
  int64_t ties = 0;      // of those, ones whose float64 distance ties the reference's k-th
  int64_t bad_rows = 0;  // rows with an id out of range, a repeated id or a non-finite value
};

// Compares rows `rows` of (ids, values) with the reference ids (one row per sampled query).
RecallReport compare(Metric metric, MatrixView<const float> Q, MatrixView<const float> X, const Matrix<int64_t>& ids,
                     const Matrix<float>& values, const std::vector<int64_t>& rows,
                     const std::vector<std::vector<int64_t>>& expected) {
  // Distances rank smallest first, similarities largest first: compare on the distance-like key.
  const double sign = larger_is_better(metric) ? -1.0 : 1.0;
  RecallReport rep;
  int64_t hits = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t i = rows[r];
    const int64_t* found = &ids(i, 0);
    const std::vector<int64_t>& want = expected[r];
    bool bad = false;
    for (int64_t a = 0; a < kK; ++a) {
      if (found[a] < 0 || found[a] >= X.rows || !std::isfinite(values(i, a))) bad = true;
      for (int64_t b = 0; b < a; ++b) bad = bad || found[a] == found[b];
    }
    if (bad) {
      ++rep.bad_rows;
      continue;
    }
    double kth = -std::numeric_limits<double>::infinity();
    for (int64_t id : want) kth = std::max(kth, sign * reference_value(Q.row(i), X.row(id), X.cols, metric));
    for (int64_t a = 0; a < kK; ++a) {
      if (std::find(want.begin(), want.end(), found[a]) != want.end()) {
        ++hits;
        continue;
      }
      ++rep.misses;
      const double got = sign * reference_value(Q.row(i), X.row(found[a]), X.cols, metric);
      if (got <= kth + kTieTolerance * std::max(std::fabs(kth), 1.0)) ++rep.ties;
    }
  }
  rep.recall = rows.empty() ? 0 : double(hits) / double(int64_t(rows.size()) * kK);
  return rep;
}

}  // namespace

void run_knn_suite(const Options& o) {
  const Metric metric = parse_metric(o.metric);
  std::vector<Case> cases;
  for (int64_t d : parse_int_list(o.cases, "--cases")) cases.push_back(case_for(d, o.quick));
  Setup s = prepare(o, "knn", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/2, /*cpu_warmup=*/1);
  const bool on_gpu = s.ctx.device == Device::gpu;

  std::printf("  workload:  k = %lld, %s, base and queries uniform in [-1, 1), seed %llu%s\n", (long long)kK,
              to_string(metric), (unsigned long long)o.seed,
              o.quick ? " (--quick: smoke-run sizes, not a measurement)" : "");
  if (on_gpu)
    std::printf(
        "  check:     recall@%lld of the GPU ids vs simkit::knn on the CPU, on %lld queries; misses that tie\n"
        "             the k-th distance within %.0e (float64) are reported and do not fail the check\n\n",
        (long long)kK, (long long)kGpuSample, kTieTolerance);
  else
    std::printf("  check:     recall@%lld vs a float64 brute force on %lld queries\n\n", (long long)kK,
                (long long)kCpuSample);
  const TablePrinter table = knn_table();
  std::vector<Row> rows;

  for (Case c : cases) {
    const int64_t full_m = c.m;
    if (o.queries > 0)
      c.m = o.queries;
    else if (!on_gpu && !o.quick)
      c.m = std::min(c.m, default_cpu_queries(c.d));
    if (c.m != full_m)
      std::printf("  note: d = %lld times %lld of the case's %lld queries%s; GFLOP/s counts the queries timed\n",
                  (long long)c.d, (long long)c.m, (long long)full_m,
                  o.queries > 0 ? " (--queries)" : " (CPU default; --queries N to change)");

    auto t0 = std::chrono::steady_clock::now();
    GenSpec spec;
    spec.dim = c.d;
    spec.distribution = Distribution::uniform;
    spec.rows = c.n;
    spec.seed = o.seed * 1000003 + uint64_t(c.d) * 2 + 1;
    const Matrix<float> X = generate(spec);
    spec.rows = c.m;
    spec.seed = o.seed * 1000003 + uint64_t(c.d) * 2 + 0;
    const Matrix<float> Q = generate(spec);
    std::printf("  d = %lld: generated %lld x %lld base + %lld queries in %.2f s\n", (long long)c.d, (long long)c.n,
                (long long)c.d, (long long)c.m, seconds_since(t0));

    // Poisoned outputs: NaN values and id -1 must all be overwritten.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Matrix<float> values(c.m, kK, nan);
    Matrix<int64_t> ids(c.m, kK, -1);
    std::optional<DeviceMatrix<float>> dQ, dX, dValues;
    std::optional<DeviceMatrix<int64_t>> dIds;
    MatrixView<const float> Qv = Q.view(), Xv = X.view();
    MatrixView<float> valuesv = values.view();
    MatrixView<int64_t> idsv = ids.view();
    if (on_gpu) {
      t0 = std::chrono::steady_clock::now();
      dX.emplace(s.ctx, X.view());
      dQ.emplace(s.ctx, Q.view());
      dValues.emplace(s.ctx, values.view());
      dIds.emplace(s.ctx, ids.view());
      synchronize(s.ctx);
      Qv = dQ->view();
      Xv = dX->view();
      valuesv = dValues->view();
      idsv = dIds->view();
      std::printf("  d = %lld: uploaded in %.2f s\n", (long long)c.d, seconds_since(t0));
    }
    std::fflush(stdout);

    const Context& ctx = s.ctx;
    const auto ms = time_runs(
        [&] {
          knn(ctx, Qv, Xv, kK, metric, valuesv, idsv);
          synchronize(ctx);
        },
        s.warmup, s.repeat);
    if (on_gpu) {
      dValues->copy_to_host(values.view());
      dIds->copy_to_host(ids.view());
    }

    // The independent result on a sample of queries.
    t0 = std::chrono::steady_clock::now();
    const std::vector<int64_t> sample = sample_rows(c.m, on_gpu ? kGpuSample : kCpuSample);
    std::vector<std::vector<int64_t>> expected;
    if (on_gpu) {
      Matrix<float> Qs(int64_t(sample.size()), c.d);
      for (size_t r = 0; r < sample.size(); ++r)
        std::copy(Q.view().row(sample[r]), Q.view().row(sample[r]) + c.d, Qs.view().row(int64_t(r)));
      Context cpu;
      cpu.device = Device::cpu;
      cpu.threads = o.threads;
      const KnnResult ref = knn(cpu, Qs.view(), X.view(), kK, metric);
      for (size_t r = 0; r < sample.size(); ++r)
        expected.emplace_back(&ref.ids(int64_t(r), 0), &ref.ids(int64_t(r), 0) + kK);
    } else {
      for (int64_t i : sample)
        expected.push_back(reference_knn_row(Q.view().row(i), X.view(), kK, metric, s.host_threads));
    }
    const double ref_s = seconds_since(t0);
    const RecallReport rep = compare(metric, Q.view(), X.view(), ids, values, sample, expected);

    Row r;
    r.suite = "knn";
    r.case_name = "1M-d" + std::to_string(c.d);
    if (c.n != 1000000) r.case_name = std::to_string(c.n) + "-d" + std::to_string(c.d);
    r.metric = to_string(metric);
    r.m = c.m, r.n = c.n, r.d = c.d, r.k = kK;
    r.device = to_string(s.ctx.device);
    r.stats = summarize(ms);
    r.gflops = gflops(c.m, c.n, c.d, r.stats.median_ms);
    if (on_gpu && s.gpu->fp32_tflops > 0) r.pct_peak = 100.0 * r.gflops / (s.gpu->fp32_tflops * 1000.0);
    r.error = rep.recall;
    r.check = rep.bad_rows == 0 && rep.misses == rep.ties ? "PASS" : "FAIL";
    rows.push_back(r);

    std::printf("  d = %lld: median %.2f ms, %s reference on %zu queries in %.2f s, recall@%lld %.4f", (long long)c.d,
                r.stats.median_ms, on_gpu ? "CPU backend" : "float64", sample.size(), ref_s, (long long)kK, rep.recall);
    if (rep.misses > 0) std::printf(" (%lld misses, %lld of them ties)", (long long)rep.misses, (long long)rep.ties);
    if (rep.bad_rows > 0)
      std::printf("; %lld rows with ids out of range, repeated or non-finite values", (long long)rep.bad_rows);
    std::printf("\n");
    std::fflush(stdout);
  }

  std::printf("\n%s\n", table.header().c_str());
  for (const Row& r : rows)
    std::printf(
        "%s\n",
        table
            .row({r.case_name, std::to_string(r.m) + " x " + std::to_string(r.n) + " x " + std::to_string(r.d),
                  std::to_string(r.k), format_number(r.stats.median_ms, 2), format_number(r.stats.min_ms, 2),
                  format_number(r.stats.max_ms, 2), format_number(r.gflops, r.gflops < 100 ? 1 : 0),
                  r.pct_peak ? format_number(*r.pct_peak, 1) : std::string("n/a"), format_number(r.error, 4), r.check})
            .c_str());

  int failed = 0;
  for (const auto& r : rows) failed += r.check == "PASS" ? 0 : 1;
  std::printf(
      "\n%zu cases, %d failed the recall check. GFLOP/s = 2 m n d / median time (the distance products;\n"
      "selection is not counted).\n",
      rows.size(), failed);
  write_csv(o.csv, rows);
  if (failed > 0) throw std::runtime_error(std::to_string(failed) + " knn case(s) failed the recall check");
}

}  // namespace simkit::cli::bench
