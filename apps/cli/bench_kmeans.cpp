// `simkit bench kmeans`: Lloyd's k-means through the public kmeans() call, on
//   synthetic  1,000,000 x 128 clustered points (1,000 Gaussian blobs), K = 1024, sqeuclidean
//   wordnet    the 117,659 x 384 MiniLM embeddings of ../shared/data/wordnet, K = 1024, cosine
//   small      100,000 x 128 clustered, K = 256 (the CPU comparison with FAISS)
//
// Per case: k-means++ seeding once (timed), then from those centroids the assignment alone
// (max_iterations = 0: upload + one assignment) and the full run (25). Time per iteration =
// (T(25) - T(0)) / iterations, medians over the repeats, so the upload and the first assignment
// are not counted; one iteration = the median time between two successive iterations' ends
// inside the full runs (the on_iteration callback, host clock). GFLOP/s counts the
// assignment's 2 n K d per iteration. The labels are checked on 200 points against a float64
// nearest-centroid search. --save DIR writes each case's points and initial centroids as .npy,
// so the peers (bench/peers/torch_kmeans.py, faiss_kmeans.py) start from the very same place.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/matrix.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "generate.hpp"

namespace simkit::cli::bench {

namespace {

constexpr int kCheckPoints = 200;

struct KmeansCase {
  std::string name;
  int64_t n = 0, d = 0, k = 0;
  Metric metric = Metric::sqeuclidean;
};

KmeansCase case_named(const std::string& name, bool quick) {
  if (name == "synthetic") return {name, quick ? 20000 : 1000000, 128, quick ? 64 : 1024, Metric::sqeuclidean};
  if (name == "small") return {name, quick ? 10000 : 100000, 128, quick ? 32 : 256, Metric::sqeuclidean};
  if (name == "wordnet") return {name, 0, 0, quick ? 64 : 1024, Metric::cosine};
  throw Error(ErrorCode::invalid_argument,
              "--cases: no kmeans case " + simkit::quoted(name) + " (synthetic, wordnet, small)");
}

Matrix<float> points_for(KmeansCase& c, const Options& o, bool quick) {
  if (c.name == "wordnet") {
    Matrix<float> X = read_matrix(o.data);
    if (quick) {
      Matrix<float> head(std::min<int64_t>(X.rows(), 20000), X.cols());
      std::copy_n(X.data(), head.size(), head.data());
      X = std::move(head);
    }
    c.n = X.rows(), c.d = X.cols();
    return X;
  }
  GenSpec spec;
  spec.rows = c.n;
  spec.dim = c.d;
  spec.distribution = Distribution::clustered;
  spec.clusters = 1000;
  spec.std = 0.4f;
  spec.seed = o.seed * 1000003 + uint64_t(c.n);
  return generate(spec);
}

double cost(const float* x, const float* c, int64_t d, Metric metric) {
  const double v = reference_value(x, c, d, metric);
  return metric == Metric::cosine ? 1.0 - v : v;
}

/// Points of `sample` whose label is not the float64 nearest centroid (ties within 1e-9 excused).
int64_t wrong_labels(MatrixView<const float> X, const KmeansResult& r, Metric metric) {
  int64_t wrong = 0;
  for (int64_t i : sample_rows(X.rows, kCheckPoints)) {
    double best = INFINITY;
    for (int64_t c = 0; c < r.centroids.rows(); ++c)
      best = std::min(best, cost(X.row(i), &r.centroids(c, 0), X.cols, metric));
    const double mine = cost(X.row(i), &r.centroids(r.labels(i, 0), 0), X.cols, metric);
    wrong += mine > best + 1e-9 * std::max(1.0, std::fabs(best));
  }
  return wrong;
}

}  // namespace

void run_kmeans_suite(const Options& o) {
  std::vector<KmeansCase> cases;
  for (const std::string& name : split_list(o.cases, "--cases")) cases.push_back(case_named(name, o.quick));
  Setup s = prepare(o, "kmeans", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1, /*cpu_warmup=*/0);
  const bool on_gpu = s.ctx.device == Device::gpu;
  const int iters = o.iterations;
  std::printf(
      "  workload:  k-means++ seeding (seed %llu), then Lloyd from those centroids: T(0) = upload + one\n"
      "             assignment, T(%d) the full run (tolerance 0); ms/iter = (T(%d) - T(0)) / iterations;\n"
      "             1 iter = median time of one iteration inside the full runs; GFLOP/s = 2 n K d per\n"
      "             iteration / ms/iter%s\n"
      "  check:     labels of %d points vs a float64 nearest-centroid search at the final centroids\n\n",
      (unsigned long long)o.seed, iters, iters, o.quick ? " (--quick: smoke sizes)" : "", kCheckPoints);
  if (on_gpu)
    std::printf(
        "  note:      the assignment's products run on half-precision tensor cores, certified in float64;\n"
        "             %% FP32 is against the FP32 (non-tensor) peak, as for the other suites\n\n");
  const TablePrinter table({{"case", 10, false},
                            {"n x d, K", 22, false},
                            {"seed ms", 9, true},
                            {"1 iter ms", 10, true},
                            {"ms/iter", 9, true},
                            {"GFLOP/s", 9, true},
                            {"% FP32", 6, true},
                            {"iters", 5, true},
                            {"inertia", 12, true},
                            {"exact %", 8, true},
                            {"check", 5, false}});
  std::vector<Row> rows;
  bool header = false;
  for (KmeansCase c : cases) {
    auto t0 = std::chrono::steady_clock::now();
    const Matrix<float> X = points_for(c, o, o.quick);
    std::printf("  %s: %lld x %lld ready in %.2f s\n", c.name.c_str(), (long long)c.n, (long long)c.d,
                seconds_since(t0));
    KmeansParams p;
    p.k = c.k;
    p.metric = c.metric;
    p.seed = o.seed;
    p.max_iterations = 0;
    t0 = std::chrono::steady_clock::now();
    const KmeansResult seeded = kmeans(s.ctx, X.view(), p);
    const double seed_ms = 1e3 * seconds_since(t0);
    if (!o.save.empty()) {
      write_matrix(o.save + "/" + c.name + "_X.npy", X.view());
      write_matrix(o.save + "/" + c.name + "_C0.npy", seeded.centroids.view());
    }
    p.init = KmeansInit::given;
    p.initial = seeded.centroids.view();
    p.tolerance = 0;
    KmeansResult full;
    // One Lloyd iteration (update, then assignment) is the gap between two successive
    // on_iteration calls of the timed full runs: the median of those, like the peers' median of
    // per-iteration times, without the per-call work (upload, checks) a difference of two
    // whole-call times carries as noise.
    std::vector<double> gaps;
    auto timed = [&](int max_iterations) {
      p.max_iterations = max_iterations;
      std::vector<double> ms;
      for (int r = -s.warmup; r < s.repeat; ++r) {
        auto last = std::chrono::steady_clock::now();
        p.on_iteration = [&](int it, double) {
          if (r >= 0 && it > 0) gaps.push_back(1e3 * seconds_since(last));
          last = std::chrono::steady_clock::now();
        };
        const auto t = std::chrono::steady_clock::now();
        KmeansResult res = kmeans(s.ctx, X.view(), p);
        if (r >= 0) ms.push_back(1e3 * seconds_since(t));
        if (max_iterations == iters) full = std::move(res);
      }
      p.on_iteration = nullptr;
      return summarize(ms);
    };
    const Stats t_zero = timed(0), t_full = timed(iters);
    const int done = std::max(1, full.iterations);
    const double per_iter = (t_full.median_ms - t_zero.median_ms) / done;
    const double one_iter = summarize(gaps).median_ms;
    const double gf = gflops(c.n, c.k, c.d, per_iter);
    const int64_t wrong = wrong_labels(X.view(), full, c.metric);
    Row row;
    row.suite = "kmeans";
    row.case_name = c.name;
    row.metric = to_string(c.metric);
    row.m = c.n, row.n = c.k, row.d = c.d, row.k = done;
    row.device = on_gpu ? s.gpu->name : "cpu";
    row.stats = Stats{per_iter, (t_full.min_ms - t_zero.median_ms) / done, (t_full.max_ms - t_zero.median_ms) / done,
                      t_full.runs};
    row.gflops = gf;
    if (on_gpu) row.pct_peak = 100.0 * gf / (1e3 * s.gpu->fp32_tflops);
    row.error = full.inertia;
    row.check = wrong == 0 ? "PASS" : "FAIL";
    if (!header) std::printf("%s\n", table.header().c_str()), header = true;
    const double exact = 100.0 * double(full.points_ranked_exactly) / double(std::max<int64_t>(1, full.assignments));
    std::printf("%s\n",
                table
                    .row({c.name, std::to_string(c.n) + " x " + std::to_string(c.d) + ", " + std::to_string(c.k),
                          format_number(seed_ms, 1), format_number(one_iter, 2), format_number(per_iter, 2),
                          format_number(gf, 0), on_gpu ? format_number(*row.pct_peak, 1) : "n/a", std::to_string(done),
                          format_number(full.inertia, 6), format_number(exact, 2), row.check})
                    .c_str());
    if (wrong)
      std::printf("    %lld of %d checked labels are not the nearest centroid\n", (long long)wrong, kCheckPoints);
    rows.push_back(row);
    std::fflush(stdout);
  }
  write_csv(o.csv, rows);
}

}  // namespace simkit::cli::bench
