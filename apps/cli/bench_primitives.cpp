// `simkit bench primitives`: scan, merge, merge sort, CSR SpMV and select_k timed beside a peer
// measured in the same run (GPU: CUB and cuSPARSE; CPU: the C++ standard library's parallel
// algorithms), every result checked. This file parses the plan, prints the header and runs the
// CPU half; bench_primitives_gpu.cpp runs the GPU half.
//
//   scan      inclusive sum, int32 and float, 2^s elements
//   merge     two ascending int32 halves of 2^s in all, random / sorted / reverse (bench_primitives.hpp)
//   sort      stable ascending int32 keys, 2^s, random / sorted / reverse
//   sortpairs as sort, with an int32 value per key
//   spmv      y = A x, float, a power-law matrix with one very long row
//   select    the k smallest of every row of a uniform float matrix, k = 10 and 100

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <execution>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "bench_primitives.hpp"

namespace simkit::cli::bench {
namespace primitives {

namespace {

const char* const kAllCases[] = {"scan", "merge", "sort", "sortpairs", "spmv", "select"};

Plan make_plan(const Options& o, bool on_gpu) {
  Plan p;
  for (const std::string& c : split_list(o.cases, "--cases")) {
    if (std::find(std::begin(kAllCases), std::end(kAllCases), c) == std::end(kAllCases))
      throw Error(ErrorCode::invalid_argument,
                  "--cases: " + simkit::quoted(c) +
                      " is not a primitives case (expected scan, merge, sort, sortpairs, spmv, select)");
    p.cases.push_back(c);
  }
  const std::string sizes = !o.sizes.empty() ? o.sizes : o.quick ? "16" : on_gpu ? "20,24,27" : "20,24";
  for (int64_t s : parse_int_list(sizes, "--sizes", "20,24,27")) {
    if (s < 1 || s > 30) throw Error(ErrorCode::invalid_argument, "--sizes: exponents go from 1 to 30 (2^s elements)");
    p.log_sizes.push_back(static_cast<int>(s));
  }
  for (const std::string& i : split_list(o.inputs, "--inputs")) {
    if (i == "random")
      p.patterns.push_back(Pattern::random);
    else if (i == "sorted")
      p.patterns.push_back(Pattern::sorted);
    else if (i == "reverse")
      p.patterns.push_back(Pattern::reverse);
    else
      throw Error(ErrorCode::invalid_argument,
                  "--inputs: " + simkit::quoted(i) + " is not one of random, sorted, reverse");
  }
  // The shapes on the GPU; the CPU keeps to what two cores finish in seconds.
  p.select_rows = o.quick ? 64 : on_gpu ? 10000 : 1000;
  p.select_cols = o.quick ? 4096 : on_gpu ? 1000000 : 100000;
  p.select_k = {10, 100};
  p.spmv_rows = o.quick ? 10000 : 1000000;
  p.spmv_nnz = o.quick ? 200000 : 20000000;
  p.spmv_long_row = o.quick ? 10000 : 1000000;
  return p;
}

bool has(const Plan& p, const char* c) { return std::find(p.cases.begin(), p.cases.end(), c) != p.cases.end(); }

/// The name of the standard library's parallel backend: without TBB, libstdc++ runs the
/// std::execution::par algorithms sequentially, and the table should say so.
const char* std_par_backend() {
#if defined(_PSTL_PAR_BACKEND_TBB)
  return "TBB";
#elif defined(__GLIBCXX__)
  return "sequential (libstdc++ built without TBB)";
#else
  return "the library's own";
#endif
}

/// Stable sort of int32 keys (with `pairs`, each with its position as value) by simkit and by
/// std::stable_sort(par) of the same keys, or of (key, position) pairs by key. Both sort in
/// place, so every run starts from the same unsorted copy (not timed).
void sort_case(const Setup& s, Report& report, int64_t n, Pattern pat, bool pairs, uint64_t seed) {
  const Context& ctx = s.ctx;
  const char* op = pairs ? "sortpairs" : "sort";
  const auto original = sort_input(n, pat, seed);
  std::vector<int32_t> keys, values(pairs ? static_cast<size_t>(n) : 0), ref_keys;
  std::vector<std::pair<int32_t, int32_t>> ref_pairs(pairs ? static_cast<size_t>(n) : 0);
  const Stats ours = timed(
      s,
      [&] {
        if (pairs)
          sort<int32_t, int32_t>(ctx, keys, values);
        else
          sort<int32_t>(ctx, keys);
      },
      [&] {
        keys = original;
        std::iota(values.begin(), values.end(), 0);
      });
  const auto by_key = [](const auto& x, const auto& y) { return x.first < y.first; };
  const Stats theirs = timed(
      s,
      [&] {
        if (pairs)
          std::stable_sort(std::execution::par, ref_pairs.begin(), ref_pairs.end(), by_key);
        else
          std::stable_sort(std::execution::par, ref_keys.begin(), ref_keys.end());
      },
      [&] {
        ref_keys = original;
        for (size_t i = 0; i < ref_pairs.size(); ++i) ref_pairs[i] = {original[i], int32_t(i)};
      });
  int64_t bad = 0;
  for (size_t i = 0; i < size_t(n); ++i)
    bad += pairs ? keys[i] != ref_pairs[i].first || values[i] != ref_pairs[i].second : keys[i] != ref_keys[i];
  const double gkeys = double(n) / 1e9;
  report.add(
      std::string(op) + " int32 " + name(pat), size_label(n),
      make_row(op, "int32", name(pat), 1, n, 0, "cpu", ours, gkeys / (ours.median_ms * 1e-3), {}, double(bad),
               bad == 0),
      "Gkeys/s",
      {make_row(op, "int32", name(pat), 1, n, 0, "std-par", theirs, gkeys / (theirs.median_ms * 1e-3), {}, 0, true)});
}

}  // namespace

void run_cpu(const Setup& s, const Plan& plan, uint64_t seed, Report& report) {
  const Context& ctx = s.ctx;
  const std::string dev = "cpu", peer = "std-par";
  if (has(plan, "scan"))
    for (int ls : plan.log_sizes) {
      const int64_t n = int64_t{1} << ls;
      const auto in = scan_input<int32_t>(n, seed);
      std::vector<int32_t> out(in.size()), ref(in.size());
      const Stats ours = timed(s, [&] { inclusive_scan<int32_t>(ctx, in, out); });
      const Stats theirs =
          timed(s, [&] { std::inclusive_scan(std::execution::par, in.begin(), in.end(), ref.begin()); });
      const double bytes = 2.0 * double(n) * 4;
      const int64_t bad = scan_mismatches(in, out), peer_bad = scan_mismatches(in, ref);
      report.add("scan int32", size_label(n),
                 make_row("scan", "int32", "small", 1, n, 0, dev, ours, gbps(bytes, ours.median_ms), {}, double(bad),
                          bad == 0),
                 "GB/s",
                 {make_row("scan", "int32", "small", 1, n, 0, peer, theirs, gbps(bytes, theirs.median_ms), {},
                           double(peer_bad), peer_bad == 0)});
    }
  for (const char* op : {"merge", "sort", "sortpairs"}) {
    if (!has(plan, op)) continue;
    for (int ls : plan.log_sizes)
      for (Pattern pat : plan.patterns) {
        const int64_t n = int64_t{1} << ls;
        const std::string label = std::string(op) + " int32 " + name(pat);
        if (std::string(op) == "merge") {
          const auto [a, b] = merge_input(n, pat, seed);
          std::vector<int32_t> out(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
          const Stats ours = timed(s, [&] { merge<int32_t>(ctx, a, b, out); });
          const Stats theirs =
              timed(s, [&] { std::merge(std::execution::par, a.begin(), a.end(), b.begin(), b.end(), ref.begin()); });
          const double bad = double(out != ref), bytes = 2.0 * double(n) * 4;
          report.add(
              label, size_label(n),
              make_row("merge", "int32", name(pat), 1, n, 0, dev, ours, gbps(bytes, ours.median_ms), {}, bad, bad == 0),
              "GB/s",
              {make_row("merge", "int32", name(pat), 1, n, 0, peer, theirs, gbps(bytes, theirs.median_ms), {}, 0,
                        true)});
          continue;
        }
        sort_case(s, report, n, pat, std::string(op) == "sortpairs", seed);
      }
  }
  if (has(plan, "spmv")) {
    const Csr A = power_law_csr(plan.spmv_rows, plan.spmv_nnz, plan.spmv_long_row, seed);
    std::vector<float> x(size_t(A.cols)), y(size_t(A.rows));
    for (size_t j = 0; j < x.size(); ++j) x[j] = float(j % 17) / 8.0f - 1.0f;
    const CsrView<float, int32_t> view{A.rows, A.cols, A.offsets, A.indices, A.values};
    const Stats ours = timed(s, [&] { spmv_csr<float, int32_t>(ctx, view, x, y); });
    const double err = spmv_error(A, x, y);
    const double bytes = 8.0 * double(A.values.size()) + 8.0 * double(A.rows) + 4.0 * double(A.cols);
    report.add("spmv float power-law", std::to_string(A.rows) + " rows, " + std::to_string(A.values.size()) + " nnz",
               make_row("spmv", "float32", "powerlaw", A.rows, int64_t(A.values.size()), 0, dev, ours,
                        gbps(bytes, ours.median_ms), {}, err, err <= 1e-6),
               "GB/s");
  }
  if (has(plan, "select")) {
    const int64_t rows = plan.select_rows, cols = plan.select_cols;
    std::vector<float> data(size_t(rows * cols));
    std::mt19937_64 rng(seed);
    for (auto& v : data) v = float(rng() >> 40) * 0x1p-24f;
    const MatrixView<const float> in{data.data(), rows, cols};
    for (int64_t k : plan.select_k) {
      Matrix<float> values(rows, k);
      Matrix<int64_t> ids(rows, k);
      const Stats ours = timed(s, [&] { select_k(ctx, in, k, Order::ascending, values.view(), ids.view()); });
      int64_t bad = 0;
      for (int64_t r : sample_rows(rows, 16)) {
        const auto ref = smallest_k(in.row(r), cols, k);
        for (int64_t j = 0; j < k; ++j)
          bad += values(r, j) != ref[size_t(j)].first || ids(r, j) != ref[size_t(j)].second;
      }
      report.add("select float k=" + std::to_string(k), std::to_string(rows) + "x" + std::to_string(cols),
                 make_row("select", "float32", "uniform", rows, cols, k, dev, ours,
                          gbps(4.0 * double(rows * cols), ours.median_ms), {}, double(bad), bad == 0),
                 "GB/s");
    }
  }
}

}  // namespace primitives

void run_primitives_suite(const Options& o) {
  Setup s = prepare(o, "primitives", /*gpu_repeat=*/20, /*cpu_repeat=*/5, /*gpu_warmup=*/3, /*cpu_warmup=*/1);
  const bool on_gpu = s.ctx.device == Device::gpu;
  const primitives::Plan plan = primitives::make_plan(o, on_gpu);
  if (on_gpu)
    std::printf(
        "  peers:     CUB (DeviceScan, DeviceMerge, DeviceMergeSort; DeviceRadixSort for reference) and cuSPARSE\n"
        "             SpMV on the same GPU in the same run; select_k: bench/peers/torch_primitives.py (torch.topk)\n");
  else
    std::printf("  peers:     std::execution::par algorithms in the same run (backend: %s)\n",
                primitives::std_par_backend());
  std::printf(
      "  rate:      GB/s = bytes read once + written once / time (%% peak: of the memory bandwidth); sorts in\n"
      "             Gkeys/s. vs peer = peer time / simkit time (above 1: simkit is faster)\n"
      "  check:     scan, merge vs sequential references; sorts vs the peer's stable sort; spmv max |y - Ax| /\n"
      "             sum|a x| vs float64 <= 1e-6; select vs a sorted reference on 16 rows. error = mismatches\n\n");
  if (on_gpu) {
    const char* own = std::getenv("SIMKIT_PRIMITIVES_OWN");
    if (own != nullptr && *own != '\0' && std::string(own) != "0")
      std::printf("  note:      SIMKIT_PRIMITIVES_OWN is set: the gpu rows run simkit's own kernels as well\n\n");
  }
  primitives::Report report;
  report.header();
  if (on_gpu)
    primitives::run_gpu(s, plan, o.seed, report);
  else
    primitives::run_cpu(s, plan, o.seed, report);
  write_csv(o.csv, report.rows());
  for (const Row& r : report.rows())
    if (r.check != "PASS" && (r.device == "gpu" || r.device == "cpu"))
      throw std::runtime_error("primitives: a simkit result failed its check (" + r.metric + ")");  // exit 1
}

}  // namespace simkit::cli::bench
