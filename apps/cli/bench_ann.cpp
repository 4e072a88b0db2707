// `simkit bench ann`: recall against speed for the index types (include/simkit/index.hpp).
//
//   wordnet    the 117,659 x 384 MiniLM embeddings of ../shared/data/wordnet, cosine, its
//              10,000 query embeddings and float64 ground truth (groundtruth_cosine.ivecs)
//   synthetic  1,000,000 x 128 clustered (1,000 centres, std 0.4), sqeuclidean, 10,000 queries
//              from the same distribution; truth = simkit's exact k-NN on the same device
//   seed       400,000 x 1,024 clustered and unit-normalised, cosine: the seed document's
//              single-query case (1,000 queries; truth from exact k-NN)
//   large      10,000,000 x 96 clustered (10,000 centres), sqeuclidean, 10,000 queries: about
//              4 GB of float32, the compressed indexes' case (ivf_pq's codes: m bytes a vector)
//
// For flat (exact), ivf_flat at each --nprobe, ivf_pq (m = --pq-m, each --refine depth) at each
// --nprobe, lsh (each --lsh tables x bits) at each --probes, and hnsw (each --hnsw links x
// ef_construction; when --indexes names it) at each --ef: recall@10 against the truth,
// QPS with every query in one batched call (median of --repeat), single-query latency p50 / p99
// over --single queries sent one call at a time, plus build time and index memory. The CSV's
// nprobe column holds the swept knob (lsh: probes, hnsw: ef) and its params column the rest of the
// configuration. --filters F,... repeats every setting restricted to the allow-lists that
// bench/peers/ann_peers.py --filters wrote into the --save directory, recall against their exact
// answers. --save DIR writes each case's base, queries and truth (<case>_base.npy,
// _queries.npy, _truth.npy) for bench/peers/ann_peers.py, which measures FAISS, hnswlib and
// the PyTorch peers on the same files with the same columns; scripts/plot-ann.py draws them
// together.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>
#include <simkit/knn.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "generate.hpp"
#include "recall.hpp"

namespace simkit::cli::bench {

namespace {

constexpr int64_t kK = 10;

struct AnnCase {
  std::string name;
  Metric metric;
  Matrix<float> base, queries;
  Matrix<int64_t> truth;  // m x >= 10
};

Matrix<float> clustered(int64_t n, int64_t d, bool normalize, uint64_t seed, int64_t clusters = 1000) {
  GenSpec spec;
  spec.rows = n;
  spec.dim = d;
  spec.distribution = Distribution::clustered;
  spec.clusters = clusters;
  spec.std = 0.4f;
  spec.normalize = normalize;
  spec.seed = seed;
  return generate(spec);
}

AnnCase load_case(const std::string& name, const Options& o, const Context& ctx) {
  AnnCase c;
  c.name = name;
  const bool quick = o.quick;
  if (name == "wordnet") {
    c.metric = Metric::cosine;
    c.base = read_matrix(o.data + "/base_minilm_f16.npy");
    c.queries = read_matrix(o.data + "/queries_minilm_f16.npy");
    c.truth = read_truth(o.data + "/groundtruth_cosine.ivecs", c.queries.rows(), kK);
    return c;
  }
  // Base and queries from one clustered draw (n + m rows), so the queries fall where the data are.
  int64_t n = 0, m = 0, d = 0;
  bool unit = false;
  if (name == "synthetic") {
    c.metric = Metric::sqeuclidean, n = quick ? 49000 : 1000000, m = quick ? 1000 : 10000, d = 128;
  } else if (name == "seed") {
    c.metric = Metric::cosine, n = quick ? 19800 : 400000, m = quick ? 200 : 1000, d = 1024, unit = true;
  } else if (name == "large") {
    c.metric = Metric::sqeuclidean, n = quick ? 490000 : 10000000, m = quick ? 1000 : 10000, d = 96;
  } else {
    throw Error(ErrorCode::invalid_argument,
                "--cases: no ann case " + simkit::quoted(name) + " (wordnet, synthetic, seed, large)");
  }
  const Matrix<float> all = clustered(n + m, d, unit, o.seed + (unit ? 13 : 11), name == "large" ? 10000 : 1000);
  c.base = Matrix<float>(n, d);
  c.queries = Matrix<float>(m, d);
  std::copy_n(all.data(), c.base.size(), c.base.data());
  std::copy_n(all.data() + c.base.size(), c.queries.size(), c.queries.data());
  c.truth = knn(ctx, c.queries.view(), c.base.view(), kK, c.metric).ids;
  return c;
}

struct Point {
  std::string index, params;
  int64_t nlist = 0, nprobe = 0;
  double recall = 0, qps = 0, p50_ms = 0, p99_ms = 0, build_s = 0;
  size_t memory = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

/// One allow-list of a filtered run and the exact top-10 of every query among its ids.
struct AllowList {
  std::string label;  // "random:0.01"
  std::vector<int64_t> ids;
  Matrix<int64_t> truth;
};

/// The allow-lists bench/peers/ann_peers.py --filters wrote beside the case's files (--save):
/// <case>_allow_<kind>_<fraction>.npy and its _truth.npy, for every --filter-kind and --filters.
std::vector<AllowList> load_allow_lists(const Options& o, const AnnCase& c) {
  std::vector<AllowList> out;
  if (o.filters.empty()) return out;
  if (o.save.empty())
    throw Error(ErrorCode::invalid_argument,
                "--filters: name the directory holding the allow-lists with --save (bench/peers/ann_peers.py "
                "--filters writes them there)");
  for (const std::string& kind : split_list(o.filter_kinds, "--filter-kind"))
    for (const std::string& text : split_list(o.filters, "--filters")) {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size() || !(value > 0 && value <= 1))
        throw Error(ErrorCode::invalid_argument, "--filters: fractions in (0, 1], got " + simkit::quoted(text));
      char fraction[32];
      std::snprintf(fraction, sizeof fraction, "%g", value);  // the peers' spelling: 0.01, 0.1
      const std::string stem = o.save + "/" + c.name + "_allow_" + kind + "_" + fraction;
      AllowList a;
      a.label = kind + ":" + fraction;
      const Matrix<int64_t> ids = read_ids(stem + ".npy");
      a.ids.assign(ids.data(), ids.data() + ids.size());
      a.truth = read_truth(stem + "_truth.npy", c.queries.rows(), kK);
      out.push_back(std::move(a));
    }
  return out;
}

Point measure(const Setup& s, const Index& index, const AnnCase& c, const Matrix<int64_t>& truth,
              const SearchParams& sp, int64_t singles) {
  Point p;
  IndexSearchResult r;
  const std::vector<double> ms =
      time_runs([&] { r = index.search(s.ctx, c.queries.view(), kK, sp); }, s.warmup, s.repeat);
  p.qps = double(c.queries.rows()) / (summarize(ms).median_ms / 1e3);
  p.recall = double(count_hits(r.ids, truth, kK)) / double(c.queries.rows() * kK);
  std::vector<double> lat;
  const int64_t n1 = std::min(singles, c.queries.rows());
  if (n1 <= 0) {  // --single 0: no latency column
    p.p50_ms = p.p99_ms = std::nan("");
    return p;
  }
  for (int64_t i = 0; i < n1 + 3; ++i) {
    const MatrixView<const float> q{c.queries.data() + (i % n1) * c.queries.cols(), 1, c.queries.cols()};
    const auto t0 = std::chrono::steady_clock::now();
    (void)index.search(s.ctx, q, kK, sp);
    if (i >= 3) lat.push_back(1e3 * seconds_since(t0));  // the first three warm caches and device lists
  }
  p.p50_ms = percentile(lat, 0.5);
  p.p99_ms = percentile(lat, 0.99);
  return p;
}

}  // namespace

void run_ann_suite(const Options& o) {
  const std::vector<std::string> names = split_list(o.cases, "--cases");
  Setup s = prepare(o, "ann", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1, /*cpu_warmup=*/1);
  const std::vector<int64_t> nprobes =
      parse_int_list(o.sizes.empty() ? "1,2,4,8,16,32,64,128" : o.sizes, "--nprobe", "1,2,4,8");
  std::printf(
      "  workload:  k = %lld; QPS = queries / median time of one batched search of all of them;\n"
      "             latency = one query per call, p50 / p99 over %lld calls; recall@10 vs float64 truth\n\n",
      (long long)kK, (long long)o.single);
  std::string csv =
      "system,case,index,nlist,nprobe,recall_at_10,qps,p50_ms,p99_ms,build_s,memory_bytes,device,params\n";
  const std::string device = s.ctx.device == Device::gpu ? "gpu" : "cpu";
  for (const std::string& name : names) {
    auto t0 = std::chrono::steady_clock::now();
    const AnnCase c = load_case(name, o, s.ctx);
    const std::vector<AllowList> allow_lists = load_allow_lists(o, c);
    std::printf("  %s: %lld x %lld base, %lld queries, %s (ready in %.1f s)\n", name.c_str(), (long long)c.base.rows(),
                (long long)c.base.cols(), (long long)c.queries.rows(), to_string(c.metric), seconds_since(t0));
    if (!o.save.empty()) {
      write_matrix(o.save + "/" + name + "_base.npy", c.base.view());
      write_matrix(o.save + "/" + name + "_queries.npy", c.queries.view());
      write_ids(o.save + "/" + name + "_truth.npy", c.truth.view());
    }
    std::printf("  %-9s %-20s %7s %7s %9s %12s %9s %9s %9s %10s\n", "index", "params", "nlist", "knob", "recall@10",
                "QPS", "p50 ms", "p99 ms", "build s", "memory MB");
    auto emit = [&](const Point& p) {
      std::printf("  %-9s %-20s %7lld %7lld %9.4f %12.0f %9.3f %9.3f %9.2f %10.1f\n", p.index.c_str(), p.params.c_str(),
                  (long long)p.nlist, (long long)p.nprobe, p.recall, p.qps, p.p50_ms, p.p99_ms, p.build_s,
                  double(p.memory) / 1e6);
      std::fflush(stdout);
      char line[512];
      // params last and quoted: it holds commas.
      std::snprintf(line, sizeof line, "simkit,%s,%s,%lld,%lld,%.5f,%.1f,%.4f,%.4f,%.3f,%zu,%s,\"%s\"\n", name.c_str(),
                    p.index.c_str(), (long long)p.nlist, (long long)p.nprobe, p.recall, p.qps, p.p50_ms, p.p99_ms,
                    p.build_s, p.memory, device.c_str(), p.params.c_str());
      csv += line;
    };
    const std::vector<std::string> kinds = split_list(o.indexes, "--indexes");
    const auto wants = [&](const char* kind) { return std::find(kinds.begin(), kinds.end(), kind) != kinds.end(); };
    // Builds `description` over the case's base, then measures each search setting.
    const auto sweep = [&](const std::string& description, const std::string& type, int64_t nlist,
                           const std::vector<std::pair<SearchKnobs, std::string>>& settings) {
      const auto started = std::chrono::steady_clock::now();
      auto index = make_index(description, c.base.cols(), c.metric);
      index->train(s.ctx, c.base.view());
      index->add(s.ctx, c.base.view());
      const double build_s = seconds_since(started);
      for (const auto& [knobs, params] : settings) {
        Point p = measure(s, *index, c, c.truth, *make_search_params(*index, knobs), o.single);
        p.index = type, p.nlist = nlist, p.params = params;
        p.nprobe = knobs.nprobe > 0 ? knobs.nprobe : knobs.probes > 0 ? knobs.probes : knobs.ef;
        p.build_s = build_s, p.memory = index->memory_bytes();
        emit(p);
        // The same setting restricted to each allow-list, recall against its own exact answer;
        // the params say which list and which plan ran (gathered and searched exactly, or walked).
        for (const AllowList& a : allow_lists) {
          const std::unique_ptr<SearchParams> sp = make_search_params(*index, knobs);
          SearchStats stats;
          sp->allowed = ArrayView<const int64_t>(a.ids);
          sp->stats = &stats;
          Point f = measure(s, *index, c, a.truth, *sp, o.single);
          f.index = type, f.nlist = nlist, f.nprobe = p.nprobe, f.build_s = build_s, f.memory = p.memory;
          f.params = params + (params.empty() ? "" : ",") + "allow=" + a.label +
                     (stats.gathered > 0 ? ",plan=gather" : ",plan=walk");
          emit(f);
        }
      }
    };
    const auto nprobe_sweep = [&](int64_t refine, const std::string& params) {
      std::vector<std::pair<SearchKnobs, std::string>> settings;
      for (int64_t np : nprobes) {
        if (np > o.nlist) continue;
        settings.emplace_back(SearchKnobs{np, refine, 0}, params);
      }
      return settings;
    };
    const std::string seed = ",seed=" + std::to_string(o.seed);
    if (wants("flat")) sweep("flat", "flat", 0, {{SearchKnobs{}, ""}});
    if (wants("ivf_flat"))
      sweep("ivf_flat,nlist=" + std::to_string(o.nlist) + seed, "ivf_flat", o.nlist, nprobe_sweep(0, ""));
    if (wants("ivf_pq")) {
      const int64_t m = o.pq_m > 0 ? o.pq_m : std::max<int64_t>(1, c.base.cols() / 8);
      const std::vector<int64_t> refines = parse_int_list(o.refine, "--refine", "4");
      // One index keeps the vectors and serves every re-rank depth; depth 0 (the codes' own
      // estimates) is an index without them, the memory-lean form.
      std::vector<std::pair<SearchKnobs, std::string>> settings;
      bool codes_only = false;
      for (int64_t r : refines) {
        if (r == 0) {
          codes_only = true;
          continue;
        }
        const std::string params = "m=" + std::to_string(m) + ",refine=" + std::to_string(r);
        for (auto& setting : nprobe_sweep(r, params)) settings.push_back(setting);
      }
      const std::string cells = "ivf_pq,nlist=" + std::to_string(o.nlist) + ",m=" + std::to_string(m);
      if (codes_only)
        sweep(cells + ",refine=0" + seed, "ivf_pq", o.nlist, nprobe_sweep(0, "m=" + std::to_string(m) + ",refine=0"));
      if (!settings.empty()) sweep(cells + ",refine=4" + seed, "ivf_pq", o.nlist, settings);
    }
    if (wants("lsh")) {
      const std::vector<int64_t> probes = parse_int_list(o.probes, "--probes", "1,2");
      for (const std::string& config : split_list(o.lsh, "--lsh")) {
        const size_t x = config.find('x');
        if (x == std::string::npos)
          throw Error(ErrorCode::invalid_argument,
                      "--lsh: " + simkit::quoted(config) + " is not TABLESxBITS, e.g. 6x2");
        const std::string params = "tables=" + config.substr(0, x) + ",bits=" + config.substr(x + 1);
        std::vector<std::pair<SearchKnobs, std::string>> settings;
        for (int64_t pr : probes) {
          settings.emplace_back(SearchKnobs{0, 0, pr}, params);
        }
        sweep("lsh," + params + seed, "lsh", 0, settings);
      }
    }
    if (wants("hnsw")) {
      const std::vector<int64_t> efs = parse_int_list(o.ef, "--ef", "32,64");
      for (const std::string& config : split_list(o.hnsw, "--hnsw")) {
        const size_t x = config.find('x');
        if (x == std::string::npos)
          throw Error(ErrorCode::invalid_argument,
                      "--hnsw: " + simkit::quoted(config) + " is not LINKSxEF_CONSTRUCTION, e.g. 16x200");
        for (const std::string& storage : split_list(o.hnsw_storage, "--hnsw-storage")) {
          const std::string params =
              "m=" + config.substr(0, x) + ",ef_construction=" + config.substr(x + 1) + ",storage=" + storage;
          std::vector<std::pair<SearchKnobs, std::string>> settings;
          for (int64_t ef : efs) {
            SearchKnobs knobs;
            knobs.ef = ef;
            settings.emplace_back(knobs, params);
          }
          sweep("hnsw," + params + seed, "hnsw", 0, settings);
        }
      }
    }
    std::printf("\n");
  }
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    out << csv;
    if (!out) throw Error(ErrorCode::io, "--csv: cannot write " + quoted_path(o.csv));
  }
}

}  // namespace simkit::cli::bench
