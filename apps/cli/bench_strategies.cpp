// `simkit bench strategies`: the CPU/GPU similarity study (bench/strategies/) run on this
// machine -- the three CPU strategies or the six GPU ones, every metric, dimension and launch
// size, each result checked against float64 -- with simkit's own `pairwise` on the same inputs
// as the last row, then the study's summary tables (speed-up over its baseline) for this machine.
//
// Inputs: m query rows and n base rows, standard normal (synthetic) or the WordNet MiniLM
// embeddings (d = 384 only: the first m queries and n base rows). Throughput is the study's
// unit, million pairs per second; GB/s counts Q and X read once and the m x n output written.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>
#include <simkit/pairwise.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "embedded_python.hpp"
#include "strategies.hpp"
#include "strategies_plot_script.hpp"

#if SIMKIT_CLI_CUDA
#include <cuda_runtime.h>
#endif

namespace simkit::cli::bench {

namespace {

using strategies::StudyMetric;

struct Result {
  std::string device, strategy;
  StudyMetric metric;
  int64_t dim = 0;
  int block = 0;
  double mean_ms = 0, std_ms = 0, mops = 0, gbps = 0, max_err = 0;
};

Metric library_metric(StudyMetric m) {
  switch (m) {
    case StudyMetric::euclidean: return Metric::l2;
    case StudyMetric::cosine: return Metric::cosine;
    case StudyMetric::pearson:
    case StudyMetric::pearson_opt: break;
  }
  return Metric::pearson;
}

/// Mean and standard deviation of the runs (the study reports means).
std::pair<double, double> mean_std(const std::vector<double>& ms) {
  double mean = 0, var = 0;
  for (double v : ms) mean += v;
  mean /= double(ms.size());
  for (double v : ms) var += (v - mean) * (v - mean);
  return {mean, ms.size() > 1 ? std::sqrt(var / double(ms.size() - 1)) : 0.0};
}

struct Inputs {
  Matrix<float> Q, X;
};

Inputs make_inputs(const Options& o, int64_t m, int64_t n, int64_t d) {
  if (o.inputs == "wordnet") {
    if (d != 384)
      throw Error(ErrorCode::invalid_argument, "--data wordnet: the MiniLM embeddings have d = 384; use --dims 384");
    const std::string dir = o.data;
    if (!std::filesystem::exists(dir + "/base_minilm_f16.npy"))
      throw Error(ErrorCode::invalid_argument, "--data wordnet: no " + quoted_path(dir + "/base_minilm_f16.npy") +
                                                   "; make it with scripts/make-data.sh wordnet, or point "
                                                   "--wordnet-dir at it");
    const Matrix<float> base = read_points(dir + "/base_minilm_f16.npy", "--data wordnet");
    const Matrix<float> queries = read_points(dir + "/queries_minilm_f16.npy", "--data wordnet");
    if (base.rows() < n || queries.rows() < m)
      throw Error(ErrorCode::invalid_argument, "--data wordnet holds " + std::to_string(queries.rows()) +
                                                   " queries and " + std::to_string(base.rows()) + " base rows");
    Inputs in{Matrix<float>(m, d), Matrix<float>(n, d)};
    std::copy_n(queries.data(), m * d, in.Q.data());
    std::copy_n(base.data(), n * d, in.X.data());
    return in;
  }
  if (o.inputs != "synthetic") throw Error(ErrorCode::invalid_argument, "--data: synthetic or wordnet");
  std::mt19937_64 rng(o.seed * 1000003 + uint64_t(d));
  std::normal_distribution<float> normal;
  Inputs in{Matrix<float>(m, d), Matrix<float>(n, d)};
  for (int64_t i = 0; i < in.Q.size(); ++i) in.Q.data()[i] = normal(rng);
  for (int64_t i = 0; i < in.X.size(); ++i) in.X.data()[i] = normal(rng);
  return in;
}

/// The float64 values of the checked query rows against every base row, computed once per
/// metric and dimension (harness reference_value), and the check of a result against them:
/// |value - reference| / max(|reference|, 1), NaN when any value is NaN.
struct Reference {
  std::vector<int64_t> rows;
  std::vector<double> values;  // rows.size() x n

  Reference(const Inputs& in, StudyMetric metric, int threads) : rows(sample_rows(in.Q.rows(), 16)) {
    const int64_t n = in.X.rows(), d = in.Q.cols();
    values.resize(rows.size() * size_t(n));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t e = 0; e < int64_t(values.size()); ++e)
      values[size_t(e)] =
          reference_value(in.Q.data() + rows[size_t(e / n)] * d, in.X.data() + (e % n) * d, d, library_metric(metric));
  }

  double max_error(MatrixView<const float> out) const {
    const int64_t n = out.cols;
    double worst = 0;
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t j = 0; j < n; ++j) {
        const double ref = values[r * size_t(n) + size_t(j)], v = out.row(rows[r])[j];
        const double err = std::fabs(v - ref) / std::max(std::fabs(ref), 1.0);
        if (std::isnan(err)) return err;
        worst = std::max(worst, err);
      }
    return worst;
  }
};

/// Fills the derived columns and the float64 check of one timed configuration.
Result finish_result(const std::string& device, const std::string& strategy, StudyMetric metric, int block,
                     const Inputs& in, const std::vector<double>& ms, MatrixView<const float> out,
                     const Reference& ref) {
  Result r{device, strategy, metric, in.Q.cols(), block};
  std::tie(r.mean_ms, r.std_ms) = mean_std(ms);
  const double pairs = double(in.Q.rows()) * double(in.X.rows());
  const double bytes = 4.0 * (double(in.Q.size() + in.X.size()) + pairs);
  r.mops = pairs / (r.mean_ms * 1e-3) / 1e6;
  r.gbps = bytes / (r.mean_ms * 1e-3) / 1e9;
  r.max_err = ref.max_error(out);
  std::printf("  %-20s %-12s d=%-5lld %5d %10.3f %8.3f %11.1f %8.1f %10.2e\n", strategy.c_str(),
              strategies::name(metric), (long long)r.dim, block, r.mean_ms, r.std_ms, r.mops, r.gbps, r.max_err);
  std::fflush(stdout);
  return r;
}

void run_cpu(const Setup& s, const Inputs& in, StudyMetric metric, const Reference& ref, std::vector<Result>& results) {
  const strategies::Problem p{in.Q.data(), in.Q.rows(), in.X.data(), in.X.rows(), in.Q.cols()};
  Matrix<float> out(p.m, p.n);
  const int threads = s.host_threads;
  const auto time = [&](const char* name, int block, const std::function<void()>& fn) {
    results.push_back(
        finish_result("cpu", name, metric, block, in, time_runs(fn, s.warmup, s.repeat), out.view(), ref));
  };
  time("cpu_serial", 0, [&] { strategies::cpu_serial(p, metric, out.data()); });
  time("cpu_query_parallel", threads, [&] { strategies::cpu_query_parallel(p, metric, out.data(), threads); });
  time("cpu_dim_reduction", threads, [&] { strategies::cpu_dim_reduction(p, metric, out.data(), threads); });
  time("simkit_pairwise", 0, [&] { pairwise(s.ctx, in.Q.view(), in.X.view(), library_metric(metric), out.view()); });
}

#if SIMKIT_CLI_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(ErrorCode::device, std::string(what) + ": " + cudaGetErrorString(e));
}

/// A device buffer for the duration of one (metric, dimension).
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(int64_t count) { cuda_check(cudaMalloc(&ptr, size_t(count) * sizeof(T)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

void run_gpu(const Setup& s, const Inputs& in, StudyMetric metric, const Reference& ref, std::vector<Result>& results) {
  const int64_t m = in.Q.rows(), n = in.X.rows(), d = in.Q.cols();
  DeviceBuffer<float> q(m * d), x(n * d), out(m * n);
  cuda_check(cudaMemcpy(q.ptr, in.Q.data(), size_t(m * d) * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  cuda_check(cudaMemcpy(x.ptr, in.X.data(), size_t(n * d) * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  const strategies::Problem p{q.ptr, m, x.ptr, n, d};
  Matrix<float> host(m, n);
  const auto time = [&](const std::string& name, int block, const std::function<void()>& fn) {
    cuda_check(cudaMemset(out.ptr, 0xff, size_t(m * n) * 4), "cudaMemset");  // NaN: a gap fails the check
    const std::vector<double> ms = time_runs(
        [&] {
          fn();
          cuda_check(cudaDeviceSynchronize(), name.c_str());
        },
        s.warmup, s.repeat);
    cuda_check(cudaMemcpy(host.data(), out.ptr, size_t(m * n) * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    results.push_back(finish_result("gpu", name, metric, block, in, ms, host.view(), ref));
  };
  for (const strategies::GpuStrategy& g : strategies::gpu_strategies())
    for (int block : g.blocks) time(g.name, block, [&] { g.run(p, metric, block, out.ptr); });
  const MatrixView<const float> Qd{q.ptr, m, d, Memory::device}, Xd{x.ptr, n, d, Memory::device};
  const MatrixView<float> Od{out.ptr, m, n, Memory::device};
  time("simkit_pairwise", 0, [&] { pairwise(s.ctx, Qd, Xd, library_metric(metric), Od); });
}
#endif

/// The best (highest Mops/s) configuration of each strategy for one metric and dimension.
std::map<std::string, const Result*> best_of(const std::vector<Result>& results, StudyMetric metric, int64_t dim) {
  std::map<std::string, const Result*> best;
  for (const Result& r : results) {
    if (r.metric != metric || r.dim != dim) continue;
    const Result*& b = best[r.strategy];
    if (!b || r.mops > b->mops) b = &r;
  }
  return best;
}

void print_summary(const std::vector<Result>& results, const std::vector<StudyMetric>& metrics,
                   const std::vector<int64_t>& dims, bool gpu) {
  const std::string baseline = gpu ? "s1_pair_blocks" : "cpu_serial";
  std::printf(
      "\nbest configuration per strategy: Mops/s (block), speed-up over %s; simkit_pairwise over the "
      "best study strategy\n",
      baseline.c_str());
  for (StudyMetric metric : metrics)
    for (int64_t dim : dims) {
      const auto best = best_of(results, metric, dim);
      if (best.empty()) continue;
      std::printf("  %s d=%lld\n", strategies::name(metric), (long long)dim);
      const Result* base = best.count(baseline) ? best.at(baseline) : nullptr;
      const Result* top = nullptr;
      for (const auto& [name, r] : best) {
        std::printf("    %-20s %11.1f Mops/s (block %4d) %8.2fx  max err %.1e\n", name.c_str(), r->mops, r->block,
                    base ? r->mops / base->mops : 0.0, r->max_err);
        if (name != "simkit_pairwise" && (!top || r->mops > top->mops)) top = r;
      }
      if (top && best.count("simkit_pairwise"))
        std::printf("    simkit_pairwise / %s: %.2fx\n", top->strategy.c_str(),
                    best.at("simkit_pairwise")->mops / top->mops);
    }
}

void write_strategies_csv(const std::string& path, const std::vector<Result>& results) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << "device,strategy,metric,dim,block,mean_ms,std_ms,mops,gbps,max_rel_err\n";
    char line[256];
    for (const Result& r : results) {
      std::snprintf(line, sizeof line, "%s,%s,%s,%lld,%d,%.4f,%.4f,%.2f,%.2f,%.3e\n", r.device.c_str(),
                    r.strategy.c_str(), strategies::name(r.metric), (long long)r.dim, r.block, r.mean_ms, r.std_ms,
                    r.mops, r.gbps, r.max_err);
      f << line;
    }
    f.flush();
    if (!f) throw Error(ErrorCode::io, "could not write " + quoted_path(tmp));
  });
  std::printf("wrote %s (%zu rows)\n", path.c_str(), results.size());
}

}  // namespace

void run_strategies_suite(const Options& o) {
  const std::vector<int64_t> dims = parse_int_list(o.sizes, "--dims", "384,768,1024");
  for (int64_t d : dims)
    if (d < 1 || d > 16384) throw Error(ErrorCode::invalid_argument, "--dims: each in 1 .. 16384");
  std::vector<StudyMetric> metrics;
  for (const std::string& t : split_list(o.cases, "--metrics")) {
    try {
      metrics.push_back(strategies::parse_study_metric(t));
    } catch (const std::invalid_argument& e) {
      throw Error(ErrorCode::invalid_argument, std::string("--metrics: ") + e.what());
    }
  }
  if (!o.plot.empty()) check_plotting();
  const Setup s = prepare(o, "strategies", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1, /*cpu_warmup=*/1);
  const bool gpu = s.ctx.device == Device::gpu;
#if !SIMKIT_CLI_CUDA
  if (gpu) throw Error(ErrorCode::unsupported, "bench strategies: this simkit was built without CUDA");
#endif
  const int64_t m = o.queries > 0 ? o.queries : (o.quick ? 100 : 1000);
  const int64_t n = o.base > 0 ? o.base : (o.quick ? 1000 : 10000);
  std::printf(
      "  inputs:    %lld queries x %lld base rows (%s), mean and std over the runs, float64 check on 16 "
      "query rows\n\n  %-20s %-12s %-7s %5s %10s %8s %11s %8s %10s\n",
      (long long)m, (long long)n, o.inputs.c_str(), "strategy", "metric", "dim", "block", "mean ms", "std ms", "Mops/s",
      "GB/s", "max err");
  std::vector<Result> results;
  for (int64_t d : dims) {
    const Inputs in = make_inputs(o, m, n, d);
    for (StudyMetric metric : metrics) {
      const Reference ref(in, metric, s.host_threads);
#if SIMKIT_CLI_CUDA
      if (gpu) {
        run_gpu(s, in, metric, ref, results);
        continue;
      }
#endif
      run_cpu(s, in, metric, ref, results);
    }
  }
  print_summary(results, metrics, dims, gpu);
  std::string csv = o.csv;
  if (csv.empty() && !o.plot.empty()) csv = o.plot + ".csv";
  if (!csv.empty()) write_strategies_csv(csv, results);
  if (!o.plot.empty()) {
    run_python_script(plot_strategies_py, {csv, "--out", o.plot}, "--plot: drawing " + quoted_path(o.plot));
    std::printf("wrote %s\n", o.plot.c_str());
  }
}

}  // namespace simkit::cli::bench
