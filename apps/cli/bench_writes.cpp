// `simkit bench writes`: what one write costs an index that already holds n vectors. For each
// index type and size: build it from n random rows, then time single-vector add() calls (fresh
// ids), single-vector remove() calls (the ids just added), and searches of one query, each the
// median of --repeat calls with the maximum beside it. A write that rebuilds the index's arrays
// shows as a time growing with n; an append stays flat.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "generate.hpp"

namespace simkit::cli::bench {

namespace {

Matrix<float> random_rows(int64_t rows, int64_t d, uint64_t seed) {
  GenSpec spec;
  spec.rows = rows;
  spec.dim = d;
  spec.distribution = Distribution::gaussian;
  spec.seed = seed;
  return generate(spec);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string description_for(const std::string& type, int64_t n) {
  if (type != "ivf_flat") return type;
  // Cells of ~1,000 rows, trained on a sample: the build is not what is measured.
  const int64_t nlist = std::clamp<int64_t>(n / 1000, 16, 1024);
  return "ivf_flat,nlist=" + std::to_string(nlist) + ",train_sample=" + std::to_string(std::min(n, 32 * nlist)) +
         ",iterations=8";
}

}  // namespace

void run_writes_suite(const Options& o) {
  const Setup s = prepare(o, "writes", 200, 200, 5, 5);
  const int64_t d = o.dim;
  std::vector<int64_t> sizes = o.sizes.empty() ? std::vector<int64_t>{10000, 100000, 1000000}
                                               : parse_int_list(o.sizes, "--sizes", "10000,100000");
  if (o.quick) sizes = {2000, 20000};
  std::printf("  case:      one vector added, then removed, %d times each after %d warm-ups; d = %lld, cosine\n\n",
              s.repeat, s.warmup, static_cast<long long>(d));
  std::printf("%-9s %9s  %10s %10s  %10s %10s  %10s\n", "index", "n", "add p50 ms", "add max", "remove p50",
              "remove max", "search p50");
  std::vector<Row> rows;
  for (const std::string& type : split_list(o.indexes, "--indexes")) {
    for (int64_t n : sizes) {
      const Matrix<float> X = random_rows(n, d, o.seed);
      const Matrix<float> extra = random_rows(s.warmup + s.repeat, d, o.seed + 1);
      auto index = make_index(description_for(type, n), d, Metric::cosine);
      if (!index->is_trained()) index->train(s.ctx, X.view());
      index->add(s.ctx, X.view());
      std::vector<double> add_ms, remove_ms, search_ms;
      const int64_t total = s.warmup + s.repeat;
      std::vector<int64_t> added;
      for (int64_t i = 0; i < total; ++i) {
        const int64_t id = n + i;
        const auto t0 = std::chrono::steady_clock::now();
        index->add(s.ctx, MatrixView<const float>{extra.data() + i * d, 1, d}, ArrayView<const int64_t>{&id, 1});
        if (i >= s.warmup) add_ms.push_back(ms_since(t0));
        added.push_back(id);
      }
      for (int64_t i = 0; i < total; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const int64_t removed = index->remove(ArrayView<const int64_t>{&added[size_t(i)], 1});
        if (i >= s.warmup) remove_ms.push_back(ms_since(t0));
        if (removed != 1) throw std::logic_error("bench writes: a vector just added was not removed");
      }
      for (int64_t i = 0; i < std::min<int64_t>(total, 20); ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        index->search(s.ctx, MatrixView<const float>{extra.data() + i * d, 1, d}, 10);
        search_ms.push_back(ms_since(t0));
      }
      if (index->size() != n) throw std::logic_error("bench writes: the index changed size");
      const Stats add = summarize(add_ms), rem = summarize(remove_ms), find = summarize(search_ms);
      std::printf("%-9s %9lld  %10.4f %10.3f  %10.4f %10.3f  %10.3f\n", type.c_str(), static_cast<long long>(n),
                  add.median_ms, add.max_ms, rem.median_ms, rem.max_ms, find.median_ms);
      std::fflush(stdout);
      for (const auto& [what, st] : {std::pair{"add", add}, std::pair{"remove", rem}, std::pair{"search", find}}) {
        Row r;
        r.suite = "writes";
        r.case_name = type + "_" + what;
        r.metric = "cosine";
        r.m = 1, r.n = n, r.d = d, r.k = what == std::string("search") ? 10 : 0;
        r.device = s.ctx.device == Device::gpu ? "gpu" : "cpu";
        r.stats = st;
        r.check = "PASS";
        rows.push_back(r);
      }
    }
  }
  write_csv(o.csv, rows);
}

}  // namespace simkit::cli::bench
