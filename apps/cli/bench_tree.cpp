// `simkit bench tree`: exact low-dimensional k-NN and fixed-radius search through the point tree
// (simkit/tree.hpp), against simkit's own brute-force knn on the same inputs, and what query
// packets buy.
//
// For each d of --dims: n base points and m queries uniform in [0, 1)^d (float32, seeded), on the
// GPU resident in device memory (no transfers timed), then
//   tree     knn_tree at each packet size of --packets: build and search time, queries/s, node
//            fetches and distance pairs per query, and on the GPU the share of a packet's lanes
//            that scan at a leaf (1 - divergence)
//   brute    knn(method = brute) on the first --brute-queries queries (0: all m), its time scaled
//            to m (brute force is linear in m), the tree's speed-up over it, and the ids of those
//            queries compared with the tree's (equal expected: both rank by the same float64 keys)
//   radius   radius_search at the radius that gives --neighbours neighbours a query on average
//            (calibrated on 2,000 queries), at the default packet (32 lanes on the GPU, 64 queries
//            on the CPU)
// --crossover adds, at m = min(m, 20,000), brute force and the tree for n = 2^10 .. 2^22 (2^18 on
// the CPU): where the automatic route should switch.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/knn.hpp>
#include <simkit/radius.hpp>
#include <simkit/tree.hpp>

#include "bench_harness.hpp"

namespace simkit::cli::bench {

namespace {

Matrix<float> uniform_points(int64_t rows, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Matrix<float> P(rows, d);
  for (int64_t i = 0; i < P.size(); ++i) P.data()[i] = u(rng);
  return P;
}

/// The inputs of one dimension, on the device for a GPU run.
struct Inputs {
  Matrix<float> X, Q;
  DeviceMatrix<float> dX, dQ;
  bool gpu = false;
  MatrixView<const float> x() const { return gpu ? dX.view() : MatrixView<const float>(X.view()); }
  MatrixView<const float> q(int64_t rows) const {
    const MatrixView<const float> all = gpu ? dQ.view() : MatrixView<const float>(Q.view());
    return {all.data, std::min(rows, all.rows), all.cols, all.where};
  }
};

/// Outputs of knn for `rows` queries: on the device for a GPU run, read back by host().
struct Outputs {
  Matrix<float> values;
  Matrix<int64_t> ids;
  DeviceMatrix<float> dv;
  DeviceMatrix<int64_t> di;
  bool gpu;
  Outputs(const Context& ctx, int64_t rows, int64_t k, bool on_gpu) : values(rows, k), ids(rows, k), gpu(on_gpu) {
    if (gpu) dv = DeviceMatrix<float>(ctx, rows, k), di = DeviceMatrix<int64_t>(ctx, rows, k);
  }
  MatrixView<float> v() { return gpu ? dv.view() : values.view(); }
  MatrixView<int64_t> i() { return gpu ? di.view() : ids.view(); }
  void host() {
    if (gpu) dv.copy_to_host(values.view()), di.copy_to_host(ids.view());
  }
};

struct TreeRow {
  std::string part;
  int64_t d = 0, n = 0, m = 0, k = 0, packet = 0;
  double build_s = 0, search_s = 0, total_s = 0, queries_per_s = 0, fetches = 0, pairs = 0, lanes_busy = 0;
  double speedup = 0;  // over brute force (brute rows: the queries it ran)
  std::string note;
};

void print_row(const TreeRow& r) {
  std::printf("  %-7s %2lld %10lld %9lld %4lld %6lld %9.4f %9.4f %9.4f %13.0f %9.1f %9.1f %6.2f %8.1f  %s\n",
              r.part.c_str(), (long long)r.d, (long long)r.n, (long long)r.m, (long long)r.k, (long long)r.packet,
              r.build_s, r.search_s, r.total_s, r.queries_per_s, r.fetches, r.pairs, r.lanes_busy, r.speedup,
              r.note.c_str());
}

void write_rows(const std::string& path, const std::string& device, const std::vector<TreeRow>& rows) {
  if (path.empty()) return;
  std::ofstream f(path);
  f << "part,device,d,n,m,k,packet,build_s,search_s,total_s,queries_per_s,node_fetches_per_query,pairs_per_query,"
       "lanes_busy,speedup_over_brute,note\n";
  for (const TreeRow& r : rows)
    f << r.part << ',' << device << ',' << r.d << ',' << r.n << ',' << r.m << ',' << r.k << ',' << r.packet << ','
      << r.build_s << ',' << r.search_s << ',' << r.total_s << ',' << r.queries_per_s << ',' << r.fetches << ','
      << r.pairs << ',' << r.lanes_busy << ',' << r.speedup << ',' << r.note << '\n';
  if (!f) throw Error(ErrorCode::io, "bench tree: could not write " + path);
}

/// The median of `repeat` runs of knn_tree (after the warm-up) and the last run's report.
TreeRow time_tree(const Setup& s, const Inputs& in, Outputs& out, int64_t m, int64_t k, int64_t packet) {
  TreeReport report;
  std::vector<double> total;
  for (int run = 0; run < s.warmup + s.repeat; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    report = knn_tree(s.ctx, in.q(m), in.x(), k, Metric::l2, out.v(), out.i(), {.packet = packet});
    if (run >= s.warmup) total.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(total.begin(), total.end());
  TreeRow r;
  r.part = "tree", r.d = in.X.cols(), r.n = in.X.rows(), r.m = m, r.k = k, r.packet = packet;
  r.total_s = total[total.size() / 2];
  r.build_s = report.build_seconds, r.search_s = report.search_seconds;
  r.queries_per_s = double(m) / r.total_s;
  r.fetches = double(report.node_visits) / double(m), r.pairs = double(report.pairs) / double(m);
  r.lanes_busy = report.leaf_visits > 0 ? double(report.leaf_lanes) / double(report.leaf_visits * packet) : 0;
  return r;
}

/// Brute force on the first `m` queries: the median over `runs` (at least one).
double time_brute(const Setup& s, const Inputs& in, Outputs& out, int64_t m, int64_t k, int runs) {
  std::vector<double> ms = time_runs(
      [&] { knn(s.ctx, in.q(m), in.x(), k, Metric::l2, out.v(), out.i(), KnnMethod::brute); }, 1, std::max(runs, 1));
  return summarize(ms).median_ms / 1e3;
}

/// The radius at which the first 2,000 queries have `neighbours` neighbours on average: two
/// corrections of the uniform-density guess (boundaries thin the neighbourhoods).
double calibrated_radius(const Setup& s, const Inputs& in, double neighbours) {
  const int64_t n = in.X.rows(), d = in.X.cols();
  const double unit_ball = std::pow(M_PI, d / 2.0) / std::tgamma(d / 2.0 + 1);
  double r = std::pow(neighbours / (double(n) * unit_ball), 1.0 / double(d));
  for (int step = 0; step < 2; ++step) {
    const RadiusResult got = radius_search(s.ctx, in.q(2000), in.x(), r);
    const double mean = double(got.offsets.back()) / double(got.offsets.size() - 1);
    r *= std::pow(neighbours / std::max(mean, 1e-3), 1.0 / double(d));
  }
  return r;
}

void run_dimension(const Setup& s, const Options& o, int64_t d, const std::vector<int64_t>& packets,
                   std::vector<TreeRow>& rows) {
  const bool gpu = s.ctx.device == Device::gpu;
  const int64_t n = o.base > 0 ? o.base : (gpu ? 10'000'000 : 1'000'000);
  const int64_t m = o.queries > 0 ? o.queries : (gpu ? 1'000'000 : 100'000);
  const int64_t k = o.k;
  Inputs in;
  in.gpu = gpu;
  in.X = uniform_points(n, d, o.seed + 1 + uint64_t(d)), in.Q = uniform_points(m, d, o.seed + 100 + uint64_t(d));
  if (gpu) in.dX = DeviceMatrix<float>(s.ctx, in.X.view()), in.dQ = DeviceMatrix<float>(s.ctx, in.Q.view());
  Outputs tree_out(s.ctx, m, k, gpu);
  TreeRow best;
  for (int64_t packet : packets) {
    TreeRow r = time_tree(s, in, tree_out, m, k, packet);
    if (best.total_s == 0 || r.total_s < best.total_s) best = r;
    rows.push_back(r);
  }
  tree_out.host();  // the last packet's answer
  const int64_t bm = o.brute_queries > 0 ? std::min(o.brute_queries, m) : m;
  Outputs brute_out(s.ctx, bm, k, gpu);
  const double brute_s = time_brute(s, in, brute_out, bm, k, bm == m ? 1 : 3) * double(m) / double(bm);
  brute_out.host();
  int64_t differ = 0;
  for (int64_t i = 0; i < bm * k; ++i) differ += brute_out.ids.data()[i] != tree_out.ids.data()[i];
  TreeRow b;
  b.part = "brute", b.d = d, b.n = n, b.m = m, b.k = k, b.total_s = brute_s, b.queries_per_s = double(m) / brute_s;
  b.note = (bm == m ? "all queries" : "timed on " + std::to_string(bm) + " queries, scaled") + std::string("; ") +
           std::to_string(differ) + " of " + std::to_string(bm * k) + " ids differ from the tree's";
  for (TreeRow& r : rows)
    if (r.part == "tree" && r.d == d && r.n == n) r.speedup = brute_s / r.total_s;
  rows.push_back(b);
  if (o.neighbours > 0) {
    const double radius = calibrated_radius(s, in, o.neighbours);
    TreeReport report;
    RadiusResult got;
    std::vector<double> total;
    for (int run = 0; run < s.warmup + std::min(s.repeat, 5); ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      got = radius_search(s.ctx, in.q(m), in.x(), radius, Metric::l2, 0, {}, &report);
      if (run >= s.warmup)
        total.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(total.begin(), total.end());
    TreeRow r;
    r.part = "radius", r.d = d, r.n = n, r.m = m, r.packet = gpu ? 32 : 64, r.total_s = total[total.size() / 2];
    r.build_s = report.build_seconds, r.search_s = report.search_seconds, r.queries_per_s = double(m) / r.total_s;
    r.fetches = double(report.node_visits) / double(m), r.pairs = double(report.pairs) / double(m);
    r.lanes_busy = report.leaf_visits > 0 ? double(report.leaf_lanes) / double(report.leaf_visits * r.packet) : 0;
    char note[128];
    std::snprintf(note, sizeof note, "radius %.5g, %.1f neighbours a query on average (%lld in all)", radius,
                  double(got.offsets.back()) / double(m), (long long)got.offsets.back());
    r.note = note;
    rows.push_back(r);
  }
  (void)best;
}

void run_crossover(const Setup& s, const Options& o, int64_t d, std::vector<TreeRow>& rows) {
  const bool gpu = s.ctx.device == Device::gpu;
  const int64_t m = std::min<int64_t>(o.queries > 0 ? o.queries : 20'000, 20'000);
  for (int64_t log_n = 10; log_n <= (gpu ? 22 : 18); log_n += 2) {
    const int64_t n = int64_t(1) << log_n;
    Inputs in;
    in.gpu = gpu;
    in.X = uniform_points(n, d, o.seed + 7), in.Q = uniform_points(m, d, o.seed + 8);
    if (gpu) in.dX = DeviceMatrix<float>(s.ctx, in.X.view()), in.dQ = DeviceMatrix<float>(s.ctx, in.Q.view());
    Outputs out(s.ctx, m, o.k, gpu);
    TreeRow t = time_tree(s, in, out, m, o.k, gpu ? 32 : 64);
    const double brute_s = time_brute(s, in, out, m, o.k, s.repeat);
    t.part = "cross", t.speedup = brute_s / t.total_s;
    t.note = "brute " + format_number(brute_s * 1e3, 3) + " ms";
    print_row(t);
    rows.push_back(t);
  }
}

}  // namespace

void run_tree_suite(const Options& o) {
  const Setup s = prepare(o, "tree", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1, /*cpu_warmup=*/1);
  const bool gpu = s.ctx.device == Device::gpu;
  const std::vector<int64_t> dims = parse_int_list(o.cases, "--dims", "3,8");
  const std::vector<int64_t> packets =
      parse_int_list(o.sizes.empty() ? (gpu ? "1,8,32" : "1,8,32,64") : o.sizes, "--packets", "1,8,32");
  std::printf("  workload: uniform points in [0, 1)^d, l2, k = %lld%s\n\n", (long long)o.k,
              gpu ? "; inputs and outputs resident on the GPU" : "");
  std::printf("  %-7s %2s %10s %9s %4s %6s %9s %9s %9s %13s %9s %9s %6s %8s  %s\n", "part", "d", "n", "m", "k",
              "packet", "build s", "search s", "total s", "queries/s", "fetch/q", "pairs/q", "busy", "x brute", "note");
  std::vector<TreeRow> rows;
  for (int64_t d : dims) {
    if (d < 1 || d > 8) throw Error(ErrorCode::invalid_argument, "--dims: the tree serves d = 1 .. 8");
    const size_t first = rows.size();
    run_dimension(s, o, d, packets, rows);
    for (size_t r = first; r < rows.size(); ++r) print_row(rows[r]);
    if (o.crossover) run_crossover(s, o, d, rows);
  }
  write_rows(o.csv, gpu ? "gpu" : "cpu", rows);
}

}  // namespace simkit::cli::bench
