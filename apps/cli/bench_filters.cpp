// `simkit bench filters`: searches restricted to an allow-list, beside the same index unfiltered.
// For each index type and each allowed fraction: the filtered search's time and its ratio to the
// unfiltered search of the same queries, the plan the index chose (gather: the allowed rows
// copied and searched exactly; scan: the filter tested inside the index's own scan), and its
// accuracy against the exact filtered answer (k-NN over the allowed rows alone): flat must equal
// it, ivf_flat's recall@10 is printed beside its unfiltered recall at the same nprobe.
// --plans gather,scan times each plan forced (SIMKIT_FILTER_PLAN), to place the planner's
// threshold at the measured crossover.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "generate.hpp"

namespace simkit::cli::bench {

namespace {

constexpr int64_t kK = 10;

double median_ms(const Setup& s, const std::function<void()>& run) {
  for (int i = 0; i < s.warmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < s.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    synchronize(s.ctx);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return summarize(ms).median_ms;
}

/// The exact answer over the allowed rows alone: k-NN of the gathered rows, ids mapped back.
Matrix<int64_t> exact_filtered(const Context& ctx, const Matrix<float>& Q, const Matrix<float>& X,
                               const std::vector<int64_t>& allowed, Metric metric) {
  Matrix<float> A(static_cast<int64_t>(allowed.size()), X.cols());
  for (size_t i = 0; i < allowed.size(); ++i)
    std::copy_n(X.data() + allowed[i] * X.cols(), X.cols(), A.data() + int64_t(i) * X.cols());
  Matrix<int64_t> ids = knn(ctx, Q.view(), A.view(), kK, metric).ids;
  for (int64_t e = 0; e < ids.size(); ++e) ids.data()[e] = allowed[size_t(ids.data()[e])];
  return ids;
}

double recall(const Matrix<int64_t>& got, const Matrix<int64_t>& truth) {
  int64_t hit = 0;
  for (int64_t q = 0; q < truth.rows(); ++q) {
    const std::set<int64_t> want(truth.data() + q * kK, truth.data() + (q + 1) * kK);
    for (int64_t p = 0; p < kK; ++p) hit += static_cast<int64_t>(want.count(got.data()[q * kK + p]));
  }
  return double(hit) / double(truth.size());
}

}  // namespace

void run_filters_suite(const Options& o) {
  const Setup s = prepare(o, "filters", 10, 3, 1, 1);
  const bool gpu = s.ctx.device == Device::gpu;
  const int64_t n = o.quick ? 50000 : 1000000, d = 128;
  const int64_t m = o.queries > 0 ? o.queries : (o.quick ? 100 : (gpu ? 10000 : 1000));
  const Metric metric = Metric::sqeuclidean;
  GenSpec spec;
  spec.rows = n + m;
  spec.dim = d;
  spec.distribution = Distribution::clustered;
  spec.clusters = 1000;
  spec.std = 0.4f;
  spec.seed = o.seed + 17;
  const Matrix<float> all = generate(spec);
  Matrix<float> X(n, d), Q(m, d);
  std::copy_n(all.data(), X.size(), X.data());
  std::copy_n(all.data() + X.size(), Q.size(), Q.data());
  const Matrix<int64_t> truth_all = knn(s.ctx, Q.view(), X.view(), kK, metric).ids;
  std::vector<double> fractions;
  for (const std::string& f : split_list(o.sizes.empty() ? "0.001,0.01,0.1,0.5,0.9" : o.sizes, "--fractions"))
    fractions.push_back(std::stod(f));
  const std::vector<std::string> plans = split_list(o.inputs, "--plans");
  std::printf(
      "  case:      %lld x %lld clustered, %lld queries, k = %lld, sqeuclidean; allowed ids drawn at random\n\n",
      (long long)n, (long long)d, (long long)m, (long long)kK);
  std::printf("%-22s %8s %-7s %10s %8s %8s %12s\n", "index", "allowed", "plan", "ms", "x unfilt", "recall",
              "unfilt recall");
  std::vector<Row> rows;
  std::vector<std::string> descriptions;
  for (size_t at = 0; at <= o.indexes.size();) {  // descriptions hold commas: ';' separates them
    const size_t end = std::min(o.indexes.find(';', at), o.indexes.size());
    if (end > at) descriptions.push_back(o.indexes.substr(at, end - at));
    at = end + 1;
  }
  for (const std::string& description : descriptions) {
    auto index = make_index(description, d, metric);
    if (!index->is_trained()) index->train(s.ctx, X.view());
    index->add(s.ctx, X.view());
    const SearchKnobs knobs{description.rfind("ivf", 0) == 0 ? 32 : 0, 0, 0};
    IndexSearchResult unfiltered;
    const double t_all =
        median_ms(s, [&] { unfiltered = index->search(s.ctx, Q.view(), kK, *make_search_params(*index, knobs)); });
    const double r_all = recall(unfiltered.ids, truth_all);
    std::printf("%-22s %8s %-7s %10.2f %8s %8.4f %12s\n", description.c_str(), "all", "-", t_all, "1.00", r_all, "");
    for (double fraction : fractions) {
      std::mt19937_64 rng(o.seed + static_cast<uint64_t>(fraction * 1e6));
      std::vector<int64_t> allowed;
      std::bernoulli_distribution keep(fraction);
      for (int64_t i = 0; i < n; ++i)
        if (keep(rng)) allowed.push_back(i);
      const Matrix<int64_t> truth = exact_filtered(s.ctx, Q, X, allowed, metric);
      for (const std::string& plan : plans) {
        if (plan == "auto")
          ::unsetenv("SIMKIT_FILTER_PLAN");
        else
          ::setenv("SIMKIT_FILTER_PLAN", plan.c_str(), 1);
        const std::unique_ptr<SearchParams> sp = make_search_params(*index, knobs);
        sp->allowed = ArrayView<const int64_t>{allowed.data(), static_cast<int64_t>(allowed.size())};
        SearchStats stats;
        sp->stats = &stats;
        IndexSearchResult r;
        const double t = median_ms(s, [&] { r = index->search(s.ctx, Q.view(), kK, *sp); });
        const double rc = recall(r.ids, truth);
        const bool gathered = stats.gathered > 0;
        const bool exact = std::equal(r.ids.data(), r.ids.data() + r.ids.size(), truth.data());
        std::printf("%-22s %7.1f%% %-7s %10.2f %8.2f %8.4f %12.4f%s\n", description.c_str(), 100 * fraction,
                    gathered ? "gather" : "scan", t, t / t_all, rc, r_all,
                    description == "flat" ? (exact ? "  exact" : "  NOT EXACT") : "");
        std::fflush(stdout);
        Row row;
        row.suite = "filters";
        row.case_name = description + "|" + (gathered ? "gather" : "scan");
        row.metric = "sqeuclidean";
        row.m = m, row.n = n, row.d = d, row.k = kK;
        row.device = gpu ? "gpu" : "cpu";
        row.stats.median_ms = t;
        row.error = rc;
        row.check = description == "flat" && !exact ? "FAIL" : "PASS";
        rows.push_back(row);
      }
      ::unsetenv("SIMKIT_FILTER_PLAN");
    }
  }
  write_csv(o.csv, rows);
}

}  // namespace simkit::cli::bench
