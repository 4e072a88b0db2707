#pragma once
// What the CPU and GPU halves of `simkit bench primitives` share (bench_primitives.cpp,
// bench_primitives_gpu.cpp): the parsed plan, the inputs, the sequential and float64
// references the checks use, and the report (table lines and CSV rows). Host code only.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <simkit/error.hpp>

#include "bench_harness.hpp"

namespace simkit::cli::bench::primitives {

/// How sort and merge inputs are ordered, as in the merge-path seed's runs.
enum class Pattern { random, sorted, reverse };

inline const char* name(Pattern p) {
  return p == Pattern::random ? "random" : p == Pattern::sorted ? "sorted" : "reverse";
}

/// What the suite was asked for, parsed.
struct Plan {
  std::vector<std::string> cases;  // scan, merge, sort, spmv, select
  std::vector<int> log_sizes;      // element counts 2^s for scan, merge and sort
  std::vector<Pattern> patterns;   // for merge and sort
  int64_t select_rows = 0, select_cols = 0;
  std::vector<int64_t> select_k;
  int64_t spmv_rows = 0, spmv_nnz = 0, spmv_long_row = 0;
};

/// Scan input: small non-negative integers (values in [0, 7]), so that an int32 sum of 2^28 of
/// them does not wrap and a float sum stays well inside its range.
template <class T>
std::vector<T> scan_input(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(rng() & 7u);
  return v;
}

/// Two ascending int32 halves of total n for merge. random: both halves rise by random steps
/// of 0..3 from 0, so they interleave with many equal keys across halves; sorted: every key of
/// a is below every key of b; reverse: every key of b is below every key of a.
inline std::pair<std::vector<int32_t>, std::vector<int32_t>> merge_input(int64_t n, Pattern p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t na = n / 2, nb = n - na;
  std::vector<int32_t> a(static_cast<size_t>(na)), b(static_cast<size_t>(nb));
  if (p == Pattern::random) {
    int32_t x = 0, y = 0;
    for (auto& e : a) e = x, x += static_cast<int32_t>(rng() & 3u);
    for (auto& e : b) e = y, y += static_cast<int32_t>(rng() & 3u);
  } else {
    const int32_t below = 0, above = static_cast<int32_t>(n);
    for (int64_t i = 0; i < na; ++i) a[size_t(i)] = static_cast<int32_t>(i) + (p == Pattern::sorted ? below : above);
    for (int64_t i = 0; i < nb; ++i) b[size_t(i)] = static_cast<int32_t>(i) + (p == Pattern::sorted ? above : below);
  }
  return {std::move(a), std::move(b)};
}

/// Sort input: random int32 over the whole range, or 0..n-1 rising (sorted) or falling (reverse).
inline std::vector<int32_t> sort_input(int64_t n, Pattern p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = p == Pattern::random   ? static_cast<int32_t>(static_cast<uint32_t>(rng()))
                   : p == Pattern::sorted ? static_cast<int32_t>(i)
                                          : static_cast<int32_t>(n - 1 - i);
  return v;
}

/// A square CSR matrix with power-law row lengths: one row (the middle one) of `long_row`
/// entries, the other rows sharing nnz - long_row by Pareto(1.5) weights (at 1M rows and 20M
/// non-zeros: the shortest rows hold 6 entries, the mean 19, the longest others thousands);
/// columns uniform, values uniform in [-1, 1).
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> offsets, indices;
  std::vector<float> values;
  int64_t longest = 0;
};

inline Csr power_law_csr(int64_t rows, int64_t nnz, int64_t long_row, uint64_t seed) {
  if (rows < 2 || long_row > nnz || long_row > rows || nnz > INT32_MAX)
    throw Error(ErrorCode::invalid_argument, "spmv case: needs rows >= 2, long row <= rows and <= nnz < 2^31");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Csr A;
  A.rows = A.cols = rows;
  const int64_t big = rows / 2, rest = nnz - long_row;
  std::vector<double> w(static_cast<size_t>(rows), 0.0);
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (r != big) total += w[size_t(r)] = std::pow(1.0 - unit(rng), -1.0 / 1.5);
  std::vector<int64_t> len(static_cast<size_t>(rows), 0);
  int64_t placed = long_row;
  len[size_t(big)] = long_row;
  for (int64_t r = 0; r < rows; ++r)
    if (r != big) placed += len[size_t(r)] = std::min<int64_t>(rows, int64_t(w[size_t(r)] / total * double(rest)));
  for (int64_t r = 0; placed < nnz; r = (r + 1) % rows)  // the rounding remainder, one each
    if (r != big && len[size_t(r)] < rows) ++len[size_t(r)], ++placed;
  A.offsets.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    A.offsets[size_t(r) + 1] = A.offsets[size_t(r)] + static_cast<int32_t>(len[size_t(r)]);
    A.longest = std::max(A.longest, len[size_t(r)]);
  }
  A.indices.resize(static_cast<size_t>(nnz));
  A.values.resize(static_cast<size_t>(nnz));
  for (int64_t j = 0; j < nnz; ++j) {
    A.indices[size_t(j)] = static_cast<int32_t>(rng() % static_cast<uint64_t>(rows));
    A.values[size_t(j)] = static_cast<float>(2.0 * unit(rng) - 1.0);
  }
  return A;
}

/// The worst |y - A x| over rows, relative to sum_j |a_rj x_j| (the scale float rounding
/// works at), with A x in float64. NaN in y gives NaN.
inline double spmv_error(const Csr& A, const std::vector<float>& x, const std::vector<float>& y) {
  double worst = 0;
  for (int64_t r = 0; r < A.rows; ++r) {
    double sum = 0, scale = 0;
    for (int32_t j = A.offsets[size_t(r)]; j < A.offsets[size_t(r) + 1]; ++j) {
      const double t = double(A.values[size_t(j)]) * double(x[size_t(A.indices[size_t(j)])]);
      sum += t, scale += std::fabs(t);
    }
    const double err = std::fabs(double(y[size_t(r)]) - sum) / std::max(scale, 1e-30);
    if (std::isnan(err)) return err;
    worst = std::max(worst, err);
  }
  return worst;
}

/// The k smallest of one row, ties to the lower index: the reference for select_k.
inline std::vector<std::pair<float, int64_t>> smallest_k(const float* row, int64_t cols, int64_t k) {
  std::vector<std::pair<float, int64_t>> all(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) all[size_t(j)] = {row[j], j};
  std::partial_sort(all.begin(), all.begin() + k, all.end());
  all.resize(static_cast<size_t>(k));
  return all;
}

/// Wrap-around int32 inclusive prefix sum, and the worst relative error of a float one
/// against the float64 prefix sums.
inline int64_t scan_mismatches(const std::vector<int32_t>& in, const std::vector<int32_t>& out) {
  uint32_t acc = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) bad += (acc += static_cast<uint32_t>(in[i])) != static_cast<uint32_t>(out[i]);
  return bad;
}
inline double scan_error(const std::vector<float>& in, const std::vector<float>& out) {
  double acc = 0, worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    acc += in[i];
    worst = std::max(worst, std::fabs(double(out[i]) - acc) / std::max(acc, 1.0));
  }
  return worst;
}

/// Bytes every primitive must move at least, for GB/s: read the inputs once, write the outputs once.
inline double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0; }

/// One suite row: its name parts go to the CSV's metric column as op-type-input.
inline Row make_row(const std::string& op, const std::string& type, const std::string& input, int64_t m, int64_t n,
                    int64_t k, const std::string& device, const Stats& st, double throughput, std::optional<double> pct,
                    double error, bool pass) {
  Row r;
  r.suite = "primitives";
  r.case_name = op;
  r.metric = op + "-" + type + "-" + input;
  r.m = m, r.n = n, r.d = 0, r.k = k;
  r.device = device;
  r.stats = st;
  r.gflops = throughput;
  r.pct_peak = pct;
  r.error = error;
  r.check = pass ? "PASS" : "FAIL";
  return r;
}

/// The table printed as the suite runs, and the rows for the CSV: each simkit measurement on
/// a line, each peer measured beside it on a line below with the ratio peer time / simkit time
/// (above 1: simkit is faster).
class Report {
 public:
  Report()
      : table_({{"case", 26, false},
                {"size", 26, false},
                {"who", 10, false},
                {"ms", 9, true},
                {"rate", 15, true},
                {"% peak", 6, true},
                {"vs peer", 7, true},
                {"error", 9, true},
                {"check", 5, false}}) {}
  void header() const { std::printf("%s\n", table_.header().c_str()), std::fflush(stdout); }

  /// `unit` is "GB/s" (memory-bound primitives, % of the bandwidth ceiling) or "Gkeys/s".
  void add(const std::string& label, const std::string& size, const Row& ours, const char* unit,
           const std::vector<Row>& peers = {}) {
    line(label, size, ours, unit, "");
    for (const Row& p : peers) {
      const double ratio = ours.stats.median_ms > 0 ? p.stats.median_ms / ours.stats.median_ms : 0;
      line("", "", p, unit, format_number(ratio, 2) + "x");
    }
    rows_.push_back(ours);
    rows_.insert(rows_.end(), peers.begin(), peers.end());
  }
  /// simkit's own kernels timed where CUB serves the call by default (device "gpu-own"), with
  /// the ratios to the peers already recorded by add().
  void add_own(const Row& own, const char* unit, const std::vector<Row>& peers) {
    line("  own kernels", "", own, unit, "");
    for (const Row& p : peers) {
      const double ratio = own.stats.median_ms > 0 ? p.stats.median_ms / own.stats.median_ms : 0;
      line("", "", p, unit, format_number(ratio, 2) + "x");
    }
    rows_.push_back(own);
  }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  void line(const std::string& label, const std::string& size, const Row& r, const char* unit,
            const std::string& ratio) const {
    const bool integer_error = r.error == std::floor(r.error) && r.error < 1e15;
    std::printf("%s\n", table_
                            .row({label, size, r.device, format_number(r.stats.median_ms, 3),
                                  format_number(r.gflops, r.gflops < 10 ? 2 : 1) + " " + unit,
                                  r.pct_peak ? format_number(*r.pct_peak, 1) : "", ratio,
                                  integer_error ? format_number(r.error, 0) : format_error(r.error), r.check})
                            .c_str());
    std::fflush(stdout);
  }
  TablePrinter table_;
  std::vector<Row> rows_;
};

/// The median (and spread) of setup.repeat timed runs of fn after setup.warmup untimed ones;
/// `before`, when given, runs untimed ahead of every run (a sort in place needs its input back).
/// On the CPU, simkit (OpenMP) and its peer (TBB) each keep their workers spinning for a while
/// after a parallel call; timed back to back, one side's spinning threads would take the cores
/// the other is timed on, so a pause first lets them go to sleep.
inline Stats timed(const Setup& setup, const std::function<void()>& fn, const std::function<void()>& before = {}) {
  if (setup.ctx.device == Device::cpu) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return summarize(before ? time_runs(fn, setup.warmup, setup.repeat, before)
                          : time_runs(fn, setup.warmup, setup.repeat));
}

/// "2^27" for powers of two, else the number.
inline std::string size_label(int64_t n) {
  for (int s = 0; s < 62; ++s)
    if (n == (int64_t{1} << s)) return "2^" + std::to_string(s);
  return std::to_string(n);
}

/// The two halves of the suite; `report` collects what they measure.
void run_cpu(const Setup& setup, const Plan& plan, uint64_t seed, Report& report);  // bench_primitives.cpp
void run_gpu(const Setup& setup, const Plan& plan, uint64_t seed, Report& report);  // bench_primitives_gpu.cpp

}  // namespace simkit::cli::bench::primitives
