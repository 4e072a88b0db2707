// `simkit bench pairwise | knn | gauss | primitives | kmeans | ann | writes | nbody | tree | mergesort`: the command
// line, the shared set-up (device, run counts, header) and the CSV writer. The suites themselves are in
// bench_<suite>.cpp; the device-free logic in bench_harness.hpp.

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "bench_harness.hpp"
#include "cli_support.hpp"
#include "commands.hpp"

namespace simkit::cli {
namespace bench {

Setup prepare(const Options& o, const char* suite, int gpu_repeat, int cpu_repeat, int gpu_warmup, int cpu_warmup) {
  Setup s;
  set_device(s.ctx, o.device);  // gpu:1 picks the GPU; a list splits the calls that split (context.hpp)
  s.ctx.threads = o.threads;
  s.ctx.device = resolve_device(s.ctx);
  const bool on_gpu = s.ctx.device == Device::gpu;
  if (on_gpu) {
    const auto all = gpus();
    if (s.ctx.gpu_id < 0 || s.ctx.gpu_id >= static_cast<int>(all.size()))
      throw Error(ErrorCode::device, "no CUDA device with id " + std::to_string(s.ctx.gpu_id));
    s.gpu = all[static_cast<size_t>(s.ctx.gpu_id)];
  }
  s.repeat = o.repeat > 0 ? o.repeat : (on_gpu ? gpu_repeat : cpu_repeat);
  if (on_gpu && s.repeat < 10)
    throw Error(ErrorCode::invalid_argument, "GPU timings are the median of at least 10 runs: use --repeat 10 or more");
  s.warmup = o.warmup >= 0 ? o.warmup : (on_gpu ? gpu_warmup : cpu_warmup);
  const unsigned hw = std::thread::hardware_concurrency();
  s.host_threads = o.threads > 0 ? o.threads : static_cast<int>(hw > 0 ? hw : 1);

  std::printf("simkit bench %s\n", suite);
  if (on_gpu) {
    const GpuInfo& g = *s.gpu;
    std::printf("  device:    gpu %d, %s (sm_%d%d, %d SMs, %.1f GiB)\n", g.id, g.name.c_str(), g.sm_major, g.sm_minor,
                g.multiprocessors, double(g.total_memory) / double(1ull << 30));
    std::printf("  ceilings:  FP32 peak %.1f TFLOP/s (SMs x FP32 lanes x 2 x boost clock), memory %.0f GB/s\n",
                g.fp32_tflops, g.memory_bandwidth_gbs);
    std::printf(
        "  method:    fp32, no TF32; inputs and outputs resident on the GPU; time = host clock around\n"
        "             the synchronous call plus synchronize(); median of %d runs after %d warm-up runs\n",
        s.repeat, s.warmup);
  } else {
    std::printf("  device:    cpu, %d threads (no FP32 peak known: %% of peak is n/a)\n", s.host_threads);
    std::printf(
        "  method:    fp32; host matrices; time = host clock around the call; median of %d runs after\n"
        "             %d warm-up runs%s\n",
        s.repeat, s.warmup, s.repeat < 10 ? " (fewer than 10: a rough figure)" : "");
  }
  std::fflush(stdout);
  return s;
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  if (path.empty()) return;
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::io, "cannot open " + quoted_path(tmp) + " for writing");
    f << csv_document(rows);
    f.flush();
    if (!f) throw Error(ErrorCode::io, "could not write " + quoted_path(tmp));
  });
  std::printf("wrote %s (%zu rows)\n", path.c_str(), rows.size());
}

}  // namespace bench

namespace {

/// `device_help` replaces the usual cpu | gpu | auto choice (checked here) by a suite's own
/// (checked by the suite).
void add_common_options(CLI::App* sub, bench::Options& o, const char* repeat_help, const char* warmup_help,
                        const char* device_help = nullptr) {
  if (device_help)
    sub->add_option("--device", o.device, device_help)->capture_default_str();
  else
    sub->add_option("--device", o.device,
                    "cpu, gpu, gpu:N, several GPUs gpu:0,1 or gpu:all (knn and index searches split over them), "
                    "or auto (the GPU when one is usable); checked when the suite runs")
        ->capture_default_str();
  sub->add_option("--repeat", o.repeat, repeat_help)->check(CLI::Range(1, 1000000));
  sub->add_option("--warmup", o.warmup, warmup_help)->check(CLI::Range(0, 100000));
  sub->add_option("--csv", o.csv, "also write the results as CSV to this file");
  sub->add_flag("--quick", o.quick, "small sizes: a smoke run, not a measurement");
  sub->add_option("--threads", o.threads, "CPU threads (0: all)")->check(CLI::Range(0, 1 << 16))->capture_default_str();
  sub->add_option("--seed", o.seed, "seed of the random inputs")->capture_default_str();
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench_cmd = app.add_subcommand(
      "bench", "Time simkit on standard workloads: time, GFLOP/s, % of the FP32 peak, and a correctness check");
  bench_cmd->require_subcommand(1);

  auto pw = std::make_shared<bench::Options>();
  auto* pairwise_cmd = bench_cmd->add_subcommand(
      "pairwise",
      "1,000 queries x 10,000 base rows, d = 384, 768, 1024; cosine, l2, pearson; error vs float64 on 8 query rows");
  add_common_options(pairwise_cmd, *pw, "timed runs (default 20; at least 10 on the GPU)",
                     "untimed runs before the timed ones (default 3)");
  pairwise_cmd->callback([pw] { bench::run_pairwise_suite(*pw); });

  auto kn = std::make_shared<bench::Options>();
  auto* knn_cmd = bench_cmd->add_subcommand(
      "knn",
      "k = 10 sqeuclidean over 1,000,000 base rows: d = 128 with 10,000 queries, d = 768 with 1,000; "
      "recall@10 vs the CPU on 200 queries");
  add_common_options(knn_cmd, *kn, "timed runs (default 10 on the GPU, 3 on the CPU; at least 10 on the GPU)",
                     "untimed runs before the timed ones (default 2 on the GPU, 1 on the CPU)");
  knn_cmd->add_option("--cases", kn->cases, "which cases, by dimension: 128, 768 or 128,768")->capture_default_str();
  knn_cmd
      ->add_option("--queries", kn->queries,
                   "queries per case (default: the case's; on the CPU 1,000 for d = 128 and 100 for d = 768)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  knn_cmd
      ->add_option("--metric", kn->metric,
                   "the metric searched: l2, sqeuclidean, cosine, dot, pearson or l1 (every one but l1 re-scores its "
                   "candidates in float64)")
      ->capture_default_str();
  knn_cmd->callback([kn] { bench::run_knn_suite(*kn); });

  auto ga = std::make_shared<bench::Options>();
  ga->cases = "seed,large,ifgt";
  auto* gauss_cmd = bench_cmd->add_subcommand(
      "gauss",
      "Gauss transform: 65,536^2 at d = 1..8 (h = 0.3 d), 2^20^2 at d = 3 direct, 1e6^2 at d = 3 ifgt (eps 1e-6) "
      "vs direct; error vs float64 on 4,096 targets");
  add_common_options(gauss_cmd, *ga, "timed runs (default 10 on the GPU, 3 on the CPU; at least 10 on the GPU)",
                     "untimed runs before the timed ones (default 2 on the GPU, 1 on the CPU)");
  gauss_cmd
      ->add_option("--cases", ga->cases,
                   "which cases: seed, large, ifgt, ifgt8 (1e6^2 at d = 8), seedifgt (the seed's tables 4.1.6-4.1.8: "
                   "65,536^2, d = 3..8, its h, K and p) (comma-separated)")
      ->capture_default_str();
  gauss_cmd
      ->add_option(
          "--queries", ga->queries,
          "targets per case (default: the case's; on the CPU 1,024 for seed, 2,048 for ifgt, all for seedifgt, "
          "large skipped)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  gauss_cmd->footer(
      "Examples:\n  simkit bench gauss --device gpu --csv gauss.csv\n"
      "  simkit bench gauss --device cpu --cases seedifgt   # the seed's CPU tables, every target");
  gauss_cmd->callback([ga] { bench::run_gauss_suite(*ga); });

  auto pr = std::make_shared<bench::Options>();
  pr->cases = "scan,merge,sort,sortpairs,spmv,select";
  auto* prim_cmd = bench_cmd->add_subcommand(
      "primitives",
      "scan, merge, merge sort, CSR SpMV and select_k beside CUB / cuSPARSE (GPU) or std::execution::par (CPU), "
      "same run; every result checked");
  add_common_options(prim_cmd, *pr, "timed runs (default 20 on the GPU, 5 on the CPU; at least 10 on the GPU)",
                     "untimed runs before the timed ones (default 3 on the GPU, 1 on the CPU)");
  prim_cmd
      ->add_option("--cases", pr->cases,
                   "which primitives: scan (int32, float), merge, sort, sortpairs (int32 keys, int32 values), spmv "
                   "(power-law, 1M rows, 20M non-zeros, one row of 1M), select (k = 10, 100 of 10,000 x 1M on the "
                   "GPU, 1,000 x 100,000 on the CPU) (comma-separated)")
      ->capture_default_str();
  prim_cmd->add_option("--sizes", pr->sizes,
                       "element counts as powers of two for scan, merge and sort (default 20,24,27 on the GPU, "
                       "20,24 on the CPU, 16 with --quick)");
  prim_cmd
      ->add_option("--inputs", pr->inputs,
                   "merge and sort inputs: random, sorted, reverse (merge: interleaved halves, or all of one half "
                   "below the other)")
      ->capture_default_str();
  prim_cmd->footer(
      "Examples:\n  simkit bench primitives --device gpu --csv primitives.csv\n"
      "  simkit bench primitives --device gpu --cases scan,merge,sort --sizes 27 --inputs random\n"
      "  python3 bench/peers/torch_primitives.py --csv torch.csv   # torch.topk etc. on the same GPU\n"
      "  python3 bench/compare.py primitives.csv torch.csv");
  prim_cmd->callback([pr] { bench::run_primitives_suite(*pr); });

  auto km = std::make_shared<bench::Options>();
  km->cases = "synthetic,wordnet,small";
  km->data = "../shared/data/wordnet/base_minilm_f16.npy";
  auto* km_cmd = bench_cmd->add_subcommand(
      "kmeans",
      "Lloyd's k-means: 1,000,000 x 128 clustered with K = 1024, the WordNet MiniLM embeddings (117,659 x 384, "
      "cosine) with K = 1024, 100,000 x 128 with K = 256; time per iteration, GFLOP/s, inertia, labels checked");
  add_common_options(km_cmd, *km, "timed runs of each of T(0) and T(iters) (default 10 on the GPU, 3 on the CPU)",
                     "untimed runs before the timed ones (default 1 on the GPU, 0 on the CPU)");
  km_cmd->add_option("--cases", km->cases, "which cases: synthetic, wordnet, small")->capture_default_str();
  km_cmd->add_option("--iters", km->iterations, "Lloyd iterations of the full run")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  km_cmd->add_option("--data", km->data, "the WordNet embeddings (.npy, float16 or float32)")->capture_default_str();
  km_cmd->add_option("--save", km->save,
                     "write each case's points and initial centroids here (<case>_X.npy, <case>_C0.npy) for the "
                     "peers in bench/peers");
  km_cmd->footer(
      "Example:\n"
      "  simkit bench kmeans --device gpu --cases synthetic --save /tmp/km --csv km.csv\n"
      "  python3 bench/peers/torch_kmeans.py --dir /tmp/km --cases synthetic\n");
  km_cmd->callback([km] { bench::run_kmeans_suite(*km); });

  auto ann = std::make_shared<bench::Options>();
  ann->cases = "wordnet,synthetic,seed";
  ann->data = "../shared/data/wordnet";
  auto* ann_cmd = bench_cmd->add_subcommand(
      "ann",
      "Recall@10 against QPS and single-query latency for flat, ivf_flat and ivf_pq over an nprobe sweep and lsh over "
      "a probes sweep: the WordNet MiniLM set (117,659 x 384, cosine), 1,000,000 x 128 clustered, the seed's "
      "400,000 x 1,024 cosine case");
  add_common_options(ann_cmd, *ann, "timed batched searches per point (default 10 on the GPU, 3 on the CPU)",
                     "untimed batched searches before them (default 1)");
  ann_cmd->add_option("--cases", ann->cases, "which cases: wordnet, synthetic, seed, large (10M x 96)")
      ->capture_default_str();
  ann_cmd->add_option("--indexes", ann->indexes, "which index types: flat, ivf_flat, ivf_pq, lsh, hnsw")
      ->capture_default_str();
  ann_cmd->add_option("--nlist", ann->nlist, "ivf_flat and ivf_pq cells")->capture_default_str();
  ann_cmd->add_option("--nprobe", ann->sizes, "the nprobe sweep, comma-separated (default 1,2,4,...,128)");
  ann_cmd->add_option("--pq-m", ann->pq_m, "ivf_pq one-byte codes per vector; 0: d / 8")->capture_default_str();
  ann_cmd->add_option("--refine", ann->refine, "ivf_pq re-rank depths (x k), each over the nprobe sweep; 0: codes only")
      ->capture_default_str();
  ann_cmd->add_option("--lsh", ann->lsh, "lsh configurations, TABLESxBITS, comma-separated (6x2: the seed's)")
      ->capture_default_str();
  ann_cmd->add_option("--probes", ann->probes, "the lsh probes sweep (buckets per table)")->capture_default_str();
  ann_cmd->add_option("--hnsw", ann->hnsw, "hnsw configurations, LINKSxEF_CONSTRUCTION, comma-separated")
      ->capture_default_str();
  ann_cmd->add_option("--ef", ann->ef, "the hnsw ef sweep (candidates kept per search)")->capture_default_str();
  ann_cmd
      ->add_option("--hnsw-storage", ann->hnsw_storage,
                   "hnsw's vector storage, each configuration built once per entry: float32, sq8 (the walk on "
                   "one-byte codes, the best refine x k re-ranked on the float32 rows)")
      ->capture_default_str();
  ann_cmd->add_option("--filters", ann->filters,
                      "also search each setting restricted to allow-lists of these fractions of the base, read "
                      "from --save (bench/peers/ann_peers.py --filters writes them and their exact answers)");
  ann_cmd->add_option("--filter-kind", ann->filter_kinds, "the allow-lists' kinds: random, clustered")
      ->capture_default_str();
  ann_cmd->add_option("--single", ann->single, "queries timed one per call for p50 / p99 (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  ann_cmd->add_option("--data", ann->data, "the WordNet directory (base, queries, truth)")->capture_default_str();
  ann_cmd->add_option("--save", ann->save, "write <case>_base.npy, _queries.npy, _truth.npy here for the peers");
  ann_cmd->footer(
      "Example:\n"
      "  # simkit on the CPU, then FAISS and hnswlib on the same files, then one plot\n"
      "  simkit bench ann --device cpu --cases wordnet --save /tmp/ann --csv simkit-ann.csv\n"
      "  python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --csv peers-ann.csv\n"
      "  python3 scripts/plot-ann.py simkit-ann.csv peers-ann.csv --out ann.png\n"
      "  # the graph indexes against hnswlib, usearch and FAISS HNSW, 2 threads\n"
      "  simkit bench ann --device cpu --threads 2 --cases wordnet --indexes hnsw,ivf_flat --save /tmp/ann --csv "
      "g.csv\n"
      "  python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems hnswlib,usearch,faiss --threads "
      "2\n"
      "  # filtered: the peers write allow-lists and their exact answers, simkit reads them\n"
      "  python3 bench/peers/ann_peers.py --dir /tmp/ann --cases wordnet --systems '' --filters 0.01,0.1,0.5\n"
      "  simkit bench ann --device cpu --cases wordnet --indexes hnsw --save /tmp/ann --filters 0.01,0.1,0.5\n");
  ann_cmd->callback([ann] { bench::run_ann_suite(*ann); });

  auto wr = std::make_shared<bench::Options>();
  wr->indexes = "flat,ivf_flat";
  auto* wr_cmd = bench_cmd->add_subcommand(
      "writes",
      "What one write costs an index holding n vectors: single-vector add and remove (median and maximum) and a "
      "one-query search, for n = 10,000, 100,000, 1,000,000 random 384-d rows (cosine)");
  add_common_options(wr_cmd, *wr, "timed writes of each kind per size (default 200)",
                     "untimed writes before them (default 5)");
  wr_cmd->add_option("--indexes", wr->indexes, "which index types: flat, ivf_flat, ivf_pq, lsh")->capture_default_str();
  wr_cmd->add_option("--sizes", wr->sizes, "vectors held before the writes, comma-separated");
  wr_cmd->add_option("--dim", wr->dim, "vector dimension")->check(CLI::Range(1, 65536))->capture_default_str();
  wr_cmd->footer(
      "Example:\n  simkit bench writes --device cpu --threads 2 --sizes 10000,100000,1000000 --csv writes.csv\n");
  wr_cmd->callback([wr] { bench::run_writes_suite(*wr); });

  auto fl = std::make_shared<bench::Options>();
  fl->indexes = "flat;ivf_flat,nlist=1024";
  fl->inputs = "auto";
  auto* fl_cmd = bench_cmd->add_subcommand(
      "filters",
      "Searches restricted to an allow-list of 0.1% .. 90% of 1,000,000 x 128 clustered rows, beside the unfiltered "
      "search: time, ratio, the plan chosen (gather or scan), recall@10 against the exact filtered answer");
  add_common_options(fl_cmd, *fl, "timed batched searches per point (default 10 on the GPU, 3 on the CPU)",
                     "untimed searches before them (default 1)");
  fl_cmd->add_option("--indexes", fl->indexes, "index descriptions, separated by ';'")->capture_default_str();
  fl_cmd->add_option("--fractions", fl->sizes, "allowed fractions, comma-separated (default 0.001,0.01,0.1,0.5,0.9)");
  fl_cmd->add_option("--plans", fl->inputs, "auto (the planner), gather, scan, or several: each forced in turn")
      ->capture_default_str();
  fl_cmd->add_option("--queries", fl->queries, "queries per search (default 10,000 on the GPU, 1,000 on the CPU)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  fl_cmd->footer(
      "Examples:\n  simkit bench filters --device cpu --threads 2 --csv filters.csv\n"
      "  simkit bench filters --device gpu --plans gather,scan   # where the two plans cross\n");
  fl_cmd->callback([fl] { bench::run_filters_suite(*fl); });

  auto st = std::make_shared<bench::Options>();
  st->sizes = "384,768,1024";
  st->cases = "euclidean,cosine,pearson,pearson_opt";
  st->inputs = "synthetic";
  st->data = "../shared/data/wordnet";
  auto* st_cmd = bench_cmd->add_subcommand(
      "strategies",
      "The CPU/GPU similarity study: 3 CPU strategies (serial, OpenMP over queries, OpenMP reduction per pair) or "
      "6 GPU ones (S1 a block per pair .. S7 2-D tiles) over their block sizes, 1,000 x 10,000 pairs, d = 384, "
      "768, 1024, beside simkit pairwise; Mops/s, GB/s, error vs float64, speed-up tables");
  add_common_options(st_cmd, *st, "timed runs per configuration (default 10 on the GPU, 3 on the CPU)",
                     "untimed runs before them (default 1)");
  st_cmd->add_option("--runs", st->repeat, "the same as --repeat (the study's name)")->check(CLI::Range(1, 1000000));
  st_cmd->add_option("--dims", st->sizes, "dimensions, comma-separated")->capture_default_str();
  st_cmd->add_option("--queries", st->queries, "query rows (default 1,000; 100 with --quick)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  st_cmd->add_option("--base", st->base, "base rows (default 10,000; 1,000 with --quick)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  st_cmd->add_option("--metrics", st->cases, "euclidean, cosine, pearson, pearson_opt (comma-separated)")
      ->capture_default_str();
  st_cmd->add_option("--data", st->inputs, "synthetic (standard normal) or wordnet (the MiniLM embeddings, d = 384)")
      ->check(CLI::IsMember({"synthetic", "wordnet"}))
      ->capture_default_str();
  st_cmd->add_option("--wordnet-dir", st->data, "where --data wordnet reads base/queries_minilm_f16.npy")
      ->capture_default_str();
  st_cmd->add_option("--plot", st->plot,
                     "draw the comparison as grouped bars (Mops/s, best block per strategy) into this .png; needs "
                     "python3 with matplotlib");
  st_cmd->footer(
      "Examples:\n  simkit bench strategies --device cpu --quick          # under 2 minutes on 2 cores\n"
      "  simkit bench strategies --device gpu --csv gpu.csv --plot gpu.png\n"
      "  simkit bench strategies --device gpu --data wordnet --dims 384\n"
      "  python3 bench/peers/strategies_torch.py --csv torch.csv   # the PyTorch peer, same shapes\n");
  st_cmd->callback([st] { bench::run_strategies_suite(*st); });

  auto nb = std::make_shared<bench::Options>();
  auto* nb_cmd = bench_cmd->add_subcommand(
      "nbody",
      "The direct gravitational sum over N = 2^s bodies (interactions/s, % of the FP32 peak at 20 flops per "
      "interaction, error vs float64), then Barnes-Hut on Plummer spheres (time, build/walk split, force error "
      "at theta 0.3 .. 1.0)");
  add_common_options(nb_cmd, *nb, "timed runs (default 10 on the GPU, 3 on the CPU)",
                     "untimed runs before them (default 1)");
  nb_cmd->add_option("--sizes", nb->sizes,
                     "log2 N, comma-separated (default 14,16,18,20 on the GPU, 12,14,16 on the CPU)");
  nb_cmd->add_option("--bh-sizes", nb->bh_sizes,
                     "Barnes-Hut's log2 N on a Plummer sphere, comma-separated (default 14,16,18,20,22 on the "
                     "GPU, 12,14,16,18,20 on the CPU)");
  nb_cmd->footer(
      "Example:\n  simkit bench nbody --device gpu --csv nbody.csv\n"
      "  python3 bench/peers/nbody_torch.py --csv torch.csv        # the GPU peer, same workload\n"
      "  simkit bench nbody --device cpu --threads 2 --sizes 12,14 --bh-sizes 16,20 --csv nbody-cpu.csv\n");
  nb_cmd->callback([nb] { bench::run_nbody_suite(*nb); });

  auto tr = std::make_shared<bench::Options>();
  tr->cases = "3,8";
  auto* tr_cmd = bench_cmd->add_subcommand(
      "tree",
      "Exact low-dimensional k-NN and radius search through the point tree (simkit/tree.hpp) against simkit's "
      "brute-force knn on the same inputs: build and search time, queries/s, node fetches per query at each "
      "packet size, the speed-up, and the radius search at a given average of neighbours");
  add_common_options(tr_cmd, *tr, "timed runs (default 10 on the GPU, 3 on the CPU)",
                     "untimed runs before them (default 1)");
  tr_cmd->add_option("--dims", tr->cases, "dimensions, comma-separated (1 .. 8)")->capture_default_str();
  tr_cmd->add_option("--n", tr->base, "base points (default 10,000,000 on the GPU, 1,000,000 on the CPU)");
  tr_cmd->add_option("--m", tr->queries, "queries (default 1,000,000 on the GPU, 100,000 on the CPU)");
  tr_cmd->add_option("-k", tr->k, "neighbours per query")->check(CLI::Range(1, 128))->capture_default_str();
  tr_cmd->add_option("--packets", tr->sizes,
                     "packet sizes, comma-separated (default 1,8,32 on the GPU: powers of two up to a warp; "
                     "1,8,32,64 on the CPU)");
  tr_cmd
      ->add_option("--brute-queries", tr->brute_queries,
                   "brute force on this many queries, its time scaled to all (0: all of them)")
      ->capture_default_str();
  tr_cmd
      ->add_option("--neighbours", tr->neighbours,
                   "radius search at the radius giving this many neighbours a query on average (0: skip)")
      ->capture_default_str();
  tr_cmd->add_flag("--crossover", tr->crossover,
                   "also time brute force and the tree at n = 2^10 .. 2^22 (2^18 on the CPU), 20,000 queries: "
                   "where knn's automatic route should switch");
  tr_cmd->footer(
      "Examples:\n  simkit bench tree --device gpu --csv tree-gpu.csv          # 10M points, 1M queries, d = 3 and 8\n"
      "  simkit bench tree --device cpu --threads 2 --dims 3 --n 200000 --m 20000\n"
      "  simkit bench tree --device gpu --dims 3 --crossover --brute-queries 100000\n"
      "  python3 bench/peers/tree_peers.py --threads 2          # SciPy's cKDTree, the CPU peer\n");
  tr_cmd->callback([tr] { bench::run_tree_suite(*tr); });

  auto ms = std::make_shared<bench::Options>();
  ms->device = "cpu";
  ms->inputs = "sorted,reversed,random";
  auto* ms_cmd = bench_cmd->add_subcommand(
      "mergesort",
      "The MergePath seed's merge sort study: its sequential hybrid sort, the naive tree merge and Merge Path in "
      "CUDA, Merge Path in OpenCL, beside simkit::sort and std::sort; the seed's sweeps of size_i, block size and n "
      "(kernel time, time with copies, GB/s against measured copy bandwidth, speed-up over sequential)");
  add_common_options(ms_cmd, *ms, "timed runs (default 10 on the GPU, 3 on the CPU)",
                     "untimed runs before them (default 1 on the GPU, 0 on the CPU)",
                     "cpu, gpu, opencl, or several comma-separated (gpu,opencl: CUDA and OpenCL on the same card)");
  ms_cmd->add_option("--sizes", ms->sizes, "log2 n of the n sweep, comma-separated (default 20,25,27)");
  ms_cmd->add_option("--inputs", ms->inputs, "sorted, reversed, random (comma-separated)")->capture_default_str();
  ms_cmd->add_option("--size-i", ms->size_i, "insertion run lengths of the size_i sweep")->capture_default_str();
  ms_cmd->add_option("--blocks", ms->blocks, "threads per block of the block sweep (GPU and OpenCL versions)")
      ->capture_default_str();
  ms_cmd->add_option("--sweep-n", ms->sweep_log_n, "log2 n of the size_i and block sweeps")
      ->check(CLI::Range(1, 30))
      ->capture_default_str();
  ms_cmd->add_option("--block", ms->block, "threads per block during the size_i sweep")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  ms_cmd
      ->add_option("--seq-size-i", ms->seq_size_i,
                   "the sequential baseline's size_i when --device has no cpu (whose sweep finds its best)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20))
      ->capture_default_str();
  ms_cmd
      ->add_option("--study", ms->study,
                   "the CUDA versions to run, comma-separated: naive, merge-path (the naive merge takes seconds a "
                   "point at 2^25: run it on its own)")
      ->capture_default_str();
  ms_cmd->add_option("--plot", ms->plot, "draw the seed's figures into this .png (needs python3 with matplotlib)");
  ms_cmd->footer(
      "Examples:\n  simkit bench mergesort --device cpu --threads 2 --sizes 20,25 --plot cpu.png\n"
      "  simkit bench mergesort --device gpu,opencl --csv gpu.csv --plot gpu.png   # CUDA and OpenCL, one card\n"
      "  simkit bench mergesort --device opencl --sweep-n 20 --sizes 16,20          # OpenCL on PoCL, quick\n"
      "  simkit bench mergesort --device gpu --study naive --size-i 8,512 --blocks 1,32   # the slow one alone\n");
  ms_cmd->callback([ms] { bench::run_mergesort_suite(*ms); });
}

}  // namespace simkit::cli
