#pragma once
// The parts of `simkit bench` that need no device and no command line: timing statistics,
// FLOP counts, float64 references, recall, result rows, the text table and the CSV. Header-only
// so tests/test_bench_harness.cpp can check it without building the CLI.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::cli::bench {

// ------------------------------------------------------------------ the suites' entry points

/// What `simkit bench pairwise` and `simkit bench knn` accept (bench.cpp parses, the suites run).
struct Options {
  std::string device = "auto";
  int repeat = 0;   // 0: the suite's default
  int warmup = -1;  // -1: the suite's default
  int threads = 0;
  uint64_t seed = 0;
  bool quick = false;
  std::string csv;
  // knn only
  std::string cases = "128,768";
  int64_t queries = 0;  // 0: the case's (or the CPU default's) query count
  std::string metric = "sqeuclidean";
  // primitives only
  std::string sizes, inputs = "random,sorted,reverse";
  // kmeans only
  int iterations = 25;
  std::string data;  // the WordNet embeddings
  std::string save;  // a directory for the peers' inputs
  // ann only (cases, data, save and sizes = the nprobe list are shared with the above)
  int64_t nlist = 1024;
  int64_t single = 200;  // queries sent one at a time for the latency percentiles
  std::string indexes = "flat,ivf_flat,ivf_pq,lsh";
  int64_t pq_m = 0;                    // ivf_pq sub-quantizers; 0: d / 8
  std::string refine = "4";            // ivf_pq re-rank depths, each over the nprobe sweep
  std::string lsh = "6x2,16x8,32x12";  // lsh tables x bits, each over the probes sweep
  std::string probes = "1,2,4,8,16,32,64";
  std::string hnsw = "16x200";  // hnsw links x ef_construction, each over the ef sweep
  std::string hnsw_storage = "float32,sq8";
  std::string ef = "10,16,24,32,48,64,96,128,192,256,384,512";
  std::string filters;  // allow-list fractions (files from ann_peers.py)
  std::string filter_kinds = "random,clustered";
  // writes only (indexes and sizes shared with the above)
  int64_t dim = 384;
  // strategies only (sizes = the dims, cases = the metrics, inputs = synthetic|wordnet, data =
  // the WordNet directory, queries shared with the above)
  int64_t base = 0;  // 0: 10,000 (1,000 with --quick)
  std::string plot;
  // nbody only (sizes = the direct sum's log2 N)
  std::string bh_sizes;  // Barnes-Hut's log2 N (CPU)
  // tree only (cases = the dims, sizes = the packets, base = n, queries = m)
  int64_t k = 16;
  int64_t brute_queries = 0;  // 0: all
  double neighbours = 32;     // the radius search's average; 0: none
  bool crossover = false;
  // mergesort only (device = a list of cpu, gpu, opencl; sizes = log2 n of the n sweep; inputs)
  std::string size_i = "2,4,8,16,32,64,128,256,512,1024,2048,4096";
  std::string blocks = "1,32,64,128,256,512,1024";
  int64_t sweep_log_n = 25;                // the size_i and block sweeps' n = 2^this
  int block = 1024;                        // the size_i sweep's threads per block (the seed's)
  int64_t seq_size_i = 32;                 // the sequential baseline's run length when no CPU sweep ran
  std::string study = "naive,merge-path";  // the CUDA versions run (naive takes seconds a point)
};

void run_pairwise_suite(const Options& options);    // bench_pairwise.cpp
void run_knn_suite(const Options& options);         // bench_knn.cpp
void run_gauss_suite(const Options& options);       // bench_gauss.cpp
void run_primitives_suite(const Options& options);  // bench_primitives.cpp
void run_kmeans_suite(const Options& options);      // bench_kmeans.cpp
void run_ann_suite(const Options& options);         // bench_ann.cpp
void run_writes_suite(const Options& options);      // bench_writes.cpp
void run_filters_suite(const Options& options);     // bench_filters.cpp
void run_strategies_suite(const Options& options);  // bench_strategies.cpp
void run_nbody_suite(const Options& options);       // bench_nbody.cpp
void run_tree_suite(const Options& options);        // bench_tree.cpp
void run_mergesort_suite(const Options& options);   // bench_mergesort.cpp

/// What a suite runs with once the options are resolved (bench.cpp).
struct Setup {
  Context ctx;                 // device resolved to cpu or gpu
  std::optional<GpuInfo> gpu;  // the GPU timed, when ctx.device is gpu
  int repeat = 0, warmup = 0;
  int host_threads = 1;  // for the float64 references
};

/// Resolves the device (auto -> cpu or gpu), the run counts (GPU timings need >= 10 runs; the
/// CPU may use fewer) and prints the suite's header: device, peak, method.
Setup prepare(const Options& options, const char* suite, int gpu_repeat, int cpu_repeat, int gpu_warmup,
              int cpu_warmup);

// ------------------------------------------------------------------ timing

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

/// Median (the mean of the two middle values for an even count), minimum and maximum.
inline Stats summarize(std::vector<double> ms) {
  if (ms.empty()) throw Error(ErrorCode::invalid_argument, "no timings to summarize");
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  Stats s;
  s.runs = static_cast<int>(n);
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  s.median_ms = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return s;
}

/// Calls `fn` `warmup` times untimed, then `repeat` times, each timed on the host's monotonic
/// clock. `fn` must return only once its work is complete (call synchronize() inside it).
inline std::vector<double> time_runs(const std::function<void()>& fn, int warmup, int repeat) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(std::max(repeat, 0)));
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return ms;
}

/// As time_runs, with `setup` called untimed before every run (a sort in place needs its
/// unsorted input back each time).
inline std::vector<double> time_runs(const std::function<void()>& fn, int warmup, int repeat,
                                     const std::function<void()>& setup) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + repeat; ++i) {
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return ms;
}

/// Multiply-adds of an m x n x d product counted as two operations each, per second, in GFLOP/s.
inline double gflops(int64_t m, int64_t n, int64_t d, double ms) {
  if (!(ms > 0)) return 0;
  return 2.0 * double(m) * double(n) * double(d) / (ms * 1e-3) / 1e9;
}

// ------------------------------------------------------------------ float64 references

/// metric(q, x) in float64, from the definitions in metric.hpp (zero-norm rows give 0).
inline double reference_value(const float* q, const float* x, int64_t d, Metric metric) {
  double acc = 0;
  switch (metric) {
    case Metric::l2:
    case Metric::sqeuclidean:
      for (int64_t i = 0; i < d; ++i) {
        const double t = double(q[i]) - double(x[i]);
        acc += t * t;
      }
      return metric == Metric::l2 ? std::sqrt(acc) : acc;
    case Metric::l1:
      for (int64_t i = 0; i < d; ++i) acc += std::fabs(double(q[i]) - double(x[i]));
      return acc;
    case Metric::dot:
      for (int64_t i = 0; i < d; ++i) acc += double(q[i]) * double(x[i]);
      return acc;
    case Metric::cosine:
    case Metric::pearson: {
      double mean_q = 0, mean_x = 0;
      if (metric == Metric::pearson) {
        for (int64_t i = 0; i < d; ++i) mean_q += q[i], mean_x += x[i];
        mean_q /= double(d), mean_x /= double(d);
      }
      double qq = 0, xx = 0;
      for (int64_t i = 0; i < d; ++i) {
        const double a = double(q[i]) - mean_q, b = double(x[i]) - mean_x;
        acc += a * b, qq += a * a, xx += b * b;
      }
      if (qq == 0 || xx == 0) return 0;
      return acc / (std::sqrt(qq) * std::sqrt(xx));
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// `count` row indices spread evenly over [0, rows), first and last included when count >= 2.
inline std::vector<int64_t> sample_rows(int64_t rows, int64_t count) {
  std::vector<int64_t> out;
  if (rows <= 0 || count <= 0) return out;
  count = std::min(count, rows);
  if (count == 1) return {0};
  for (int64_t i = 0; i < count; ++i) out.push_back(i * (rows - 1) / (count - 1));
  return out;
}

/// True when an error is a relative one for this metric (the distance l2 / sqeuclidean / l1,
/// whose values grow with d), false when absolute (the similarities, bounded by 1 for
/// cosine and pearson).
constexpr bool uses_relative_error(Metric metric) noexcept {
  return metric == Metric::l2 || metric == Metric::sqeuclidean || metric == Metric::l1;
}

/// The worst error of `out` (m x n, host) against the float64 reference over the given query
/// rows and every base row: |out - ref| for similarities, |out - ref| / max(|ref|, 1) for
/// distances. NaN anywhere in the compared entries gives NaN.
inline double max_error(MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
                        MatrixView<const float> out, const std::vector<int64_t>& rows) {
  double worst = 0;
  const bool relative = uses_relative_error(metric);
  for (int64_t i : rows) {
    for (int64_t j = 0; j < X.rows; ++j) {
      const double ref = reference_value(Q.row(i), X.row(j), Q.cols, metric);
      const double got = out(i, j);
      double err = std::fabs(got - ref);
      if (relative) err /= std::max(std::fabs(ref), 1.0);
      if (std::isnan(err)) return std::numeric_limits<double>::quiet_NaN();
      worst = std::max(worst, err);
    }
  }
  return worst;
}

/// The number of entries of a host view that are not finite (NaN poison left unwritten, or Inf).
inline int64_t count_non_finite(MatrixView<const float> m) {
  int64_t bad = 0;
  for (int64_t i = 0; i < m.size(); ++i) bad += std::isfinite(m.data[i]) ? 0 : 1;
  return bad;
}

/// Exact k nearest rows of X for one query in float64 (best first, ties to the lower id),
/// split over `threads` host threads. For checking a sample of queries only.
inline std::vector<int64_t> reference_knn_row(const float* q, MatrixView<const float> X, int64_t k, Metric metric,
                                              int threads) {
  const bool larger = larger_is_better(metric);
  // Orders candidates so that the best is "largest" in the heap's sense: the heap's top is the
  // worst kept candidate.
  auto better = [larger](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    if (a.first != b.first) return larger ? a.first > b.first : a.first < b.first;
    return a.second < b.second;
  };
  threads = std::max(1, threads);
  std::vector<std::vector<std::pair<double, int64_t>>> partial(static_cast<size_t>(threads));
  auto work = [&](int t) {
    std::priority_queue<std::pair<double, int64_t>, std::vector<std::pair<double, int64_t>>, decltype(better)> heap(
        better);
    const int64_t lo = X.rows * t / threads, hi = X.rows * (t + 1) / threads;
    for (int64_t j = lo; j < hi; ++j) {
      std::pair<double, int64_t> c{reference_value(q, X.row(j), X.cols, metric), j};
      if (static_cast<int64_t>(heap.size()) < k) {
        heap.push(c);
      } else if (better(c, heap.top())) {
        heap.pop();
        heap.push(c);
      }
    }
    auto& mine = partial[static_cast<size_t>(t)];
    while (!heap.empty()) mine.push_back(heap.top()), heap.pop();
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  std::vector<std::pair<double, int64_t>> all;
  for (auto& p : partial) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end(), better);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(all.size()); ++i) ids.push_back(all[size_t(i)].second);
  return ids;
}

/// Recall of one result row against a reference row: |found ∩ expected| / |expected|.
inline double recall_row(const int64_t* found, const int64_t* expected, int64_t k) {
  if (k <= 0) return 1;
  int64_t hits = 0;
  for (int64_t a = 0; a < k; ++a)
    for (int64_t b = 0; b < k; ++b)
      if (found[a] == expected[b]) {
        ++hits;
        break;
      }
  return double(hits) / double(k);
}

// ------------------------------------------------------------------ result rows, table, CSV

struct Row {
  std::string suite, case_name, metric;
  int64_t m = 0, n = 0, d = 0, k = 0;
  std::string device;
  Stats stats;
  double gflops = 0;
  std::optional<double> pct_peak;  // empty: no known ceiling (the CPU)
  double error = 0;                // max error (pairwise) or recall (knn)
  std::string check;               // PASS / FAIL
};

inline std::string format_number(double v, int decimals) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

/// Scientific notation with two decimals: errors span many orders of magnitude.
inline std::string format_error(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

inline const char* csv_header() {
  return "suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check";
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

/// One CSV line (no trailing newline). Times keep microsecond resolution; an unknown peak is
/// an empty field; the error keeps enough digits to compare against 1e-5.
inline std::string csv_line(const Row& r) {
  char err[64];
  std::snprintf(err, sizeof err, "%.6g", r.error);
  std::ostringstream s;
  s << csv_field(r.suite) << ',' << csv_field(r.case_name) << ',' << csv_field(r.metric) << ',' << r.m << ',' << r.n
    << ',' << r.d << ',' << r.k << ',' << csv_field(r.device) << ',' << format_number(r.stats.median_ms, 4) << ','
    << format_number(r.stats.min_ms, 4) << ',' << format_number(r.stats.max_ms, 4) << ',' << format_number(r.gflops, 1)
    << ',' << (r.pct_peak ? format_number(*r.pct_peak, 1) : std::string()) << ',' << err << ',' << csv_field(r.check);
  return s.str();
}

inline std::string csv_document(const std::vector<Row>& rows) {
  std::string out = std::string(csv_header()) + "\n";
  for (const auto& r : rows) out += csv_line(r) + "\n";
  return out;
}

/// A text table printed a row at a time (so long suites show progress): fixed column widths,
/// text left-aligned, numbers right-aligned. A cell wider than its column pushes the rest right.
class TablePrinter {
 public:
  struct Column {
    std::string title;
    int width;
    bool right;  // right-align (numbers)
  };
  explicit TablePrinter(std::vector<Column> columns) : columns_(std::move(columns)) {}

  std::string header() const {
    std::vector<std::string> titles;
    for (const auto& c : columns_) titles.push_back(c.title);
    std::string line = row(titles), rule;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (i) rule += "  ";
      rule += std::string(static_cast<size_t>(columns_[i].width), '-');
    }
    return line + "\n" + rule;
  }

  std::string row(const std::vector<std::string>& cells) const {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : std::string();
      const size_t w = static_cast<size_t>(columns_[i].width);
      const std::string pad = cell.size() < w ? std::string(w - cell.size(), ' ') : std::string();
      if (i) line += "  ";
      line += columns_[i].right ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
  }

 private:
  std::vector<Column> columns_;
};

/// Writes the rows as CSV to `path` atomically (nothing when path is empty). bench.cpp.
void write_csv(const std::string& path, const std::vector<Row>& rows);

/// Splits "a,b,c" into its non-empty items; throws Error(invalid_argument) naming `what` when
/// there are none.
inline std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw Error(ErrorCode::invalid_argument, what + " is empty");
  return out;
}

/// Parses "128,768" into {128, 768}; throws Error(invalid_argument) on anything else, naming
/// `example` as the expected form.
inline std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what,
                                           const std::string& example = "128,768") {
  std::vector<int64_t> out;
  if (!text.empty() && text.back() == ',')
    throw Error(ErrorCode::invalid_argument,
                what + ": " + simkit::quoted(text) + " ends with a comma (expected e.g. " + example + ")");
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw Error(ErrorCode::invalid_argument,
                  what + ": " + simkit::quoted(item) + " is not an integer (expected e.g. " + example + ")");
    out.push_back(v);
  }
  if (out.empty()) throw Error(ErrorCode::invalid_argument, what + " is empty");
  return out;
}

}  // namespace simkit::cli::bench
