// `simkit index build|add|remove|search|info`: nearest-neighbour indexes on disk
// (include/simkit/index.hpp). Every input is read and checked before any work; an index file
// is only ever replaced whole (Index::save writes a temporary and renames it), and search
// outputs are written all-or-nothing, so a refused or failed command leaves nothing half-done.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>
#include <simkit/metric.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "index_options.hpp"
#include "recall.hpp"

#if defined(SIMKIT_CLI_MPI)  // built with MPI (cmake/SimkitMPI.cmake): `mpirun -n P simkit index build|search`
#include <simkit/mpi_index.hpp>

#include "mpi_launch.hpp"
#endif

namespace simkit::cli {

namespace {

/// "--nprobe 32" or "--nprobe seed"; empty: the index's default.
int64_t parse_nprobe(const std::string& text) {
  if (text.empty()) return 0;
  if (text == "seed") return kProbeFourFifths;
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  bad("--nprobe must be a positive integer or 'seed' (ceil(0.8 nlist)), got " + simkit::quoted(text));
}

/// --ids for add/remove: one id per row (.npy or .ivecs), read up front.
std::vector<int64_t> read_id_list(const std::string& path, int64_t expect) {
  Matrix<int64_t> m;
  try {
    m = read_ids(path);
  } catch (const Error& e) {
    throw Error(e.code(), "--ids: " + std::string(e.what()));
  }
  if (m.cols() != 1 && m.rows() != 1) bad("--ids: " + quoted_path(path) + " must hold one column of ids");
  if (expect >= 0 && m.size() != expect)
    bad("--ids: " + quoted_path(path) + " has " + with_commas(m.size()) + " ids for " + with_commas(expect) +
        " vectors");
  return std::vector<int64_t>(m.data(), m.data() + m.size());
}

std::unique_ptr<Index> load_named(const std::string& path) {
  try {
    return load_index(path);
  } catch (const Error& e) {
    throw Error(e.code(), "--index: " + std::string(e.what()));
  }
}

void report(const char* what, const Index& index, const std::string& path, double seconds) {
  std::fprintf(stderr, "simkit index %s: %s, %s, d = %lld, %s vectors -> %s in %s\n", what, index.description().c_str(),
               to_string(index.metric()), (long long)index.dim(), with_commas(index.size()).c_str(), path.c_str(),
               format_duration(seconds).c_str());
}

}  // namespace

// --allowed: .npy of any integer type (1-D or one column) or .ivecs. The file is not sorted for
// the caller: an out-of-order list is refused, naming the first position out of order.
std::vector<int64_t> read_allowed(const std::string& path) {
  Matrix<int64_t> m;
  try {
    m = read_ids(path);
  } catch (const Error& e) {
    throw Error(e.code(), "--allowed: " + std::string(e.what()));
  }
  if (m.cols() != 1 && m.rows() != 1)
    bad("--allowed: " + quoted_path(path) + " must hold one list of ids (a 1-D array), got " +
        std::to_string(m.rows()) + " x " + std::to_string(m.cols()));
  std::vector<int64_t> ids(m.data(), m.data() + m.size());
  for (size_t i = 1; i < ids.size(); ++i)
    if (ids[i] <= ids[i - 1])
      bad("--allowed: " + quoted_path(path) + " must be sorted ascending without repeats; position " +
          std::to_string(i) + " holds " + std::to_string(ids[i]) + " after " + std::to_string(ids[i - 1]) +
          " (numpy.unique gives such a list)");
  return ids;
}

std::string build_description(const IndexBuildOptions& o) {
  if (!o.description.empty()) return o.description;
  const auto cells = [&](const std::string& kind) {
    std::string d = kind + ",nlist=" + std::to_string(o.nlist);
    if (o.train_sample > 0) d += ",train_sample=" + std::to_string(o.train_sample);
    if (!o.nprobe.empty()) d += ",nprobe=" + (o.nprobe == "seed" ? o.nprobe : std::to_string(parse_nprobe(o.nprobe)));
    return d;
  };
  const std::string tail = ",iterations=" + std::to_string(o.iterations) + ",seed=" + std::to_string(o.seed);
  if (o.type == "flat" || o.type == "tree") return o.type;
  if (o.type == "ivf_flat") return cells("ivf_flat") + tail;
  if (o.type == "ivf_pq") {
    if (o.refine_on != "device" && o.refine_on != "host")
      bad("--refine-on must be device or host, got " + simkit::quoted(o.refine_on));
    return cells("ivf_pq") + ",m=" + std::to_string(o.m) + ",refine=" + std::to_string(o.refine) +
           ",refine_on=" + o.refine_on + tail;
  }
  if (o.type == "lsh") {
    char width[32];
    std::snprintf(width, sizeof width, "%.9g", o.width);
    return "lsh,tables=" + std::to_string(o.tables) + ",bits=" + std::to_string(o.bits) +
           ",probes=" + std::to_string(o.probes) + ",width=" + width + ",seed=" + std::to_string(o.seed);
  }
  if (o.type == "hnsw")
    return "hnsw,m=" + std::to_string(o.m > 0 ? o.m : 16) + ",ef_construction=" + std::to_string(o.ef_construction) +
           ",ef=" + std::to_string(o.ef) + ",seed=" + std::to_string(o.seed) + ",storage=" + o.storage;
  bad("--type must be flat, ivf_flat, ivf_pq, lsh, tree or hnsw, got " + simkit::quoted(o.type));
}

void check_nlist(const IndexBuildOptions& o, int64_t n) {
  if ((o.type == "ivf_flat" || o.type == "ivf_pq") && o.description.empty() && n < o.nlist)
    bad("--nlist " + std::to_string(o.nlist) + " exceeds the " + with_commas(n) + " vectors in --base; lower it");
}

void check_search_options(const IndexSearchOptions& o) {
  if (o.k < 1) bad("-k must be at least 1, got " + std::to_string(o.k));
  if (o.refine < 0) bad("--refine must be >= 0, got " + std::to_string(o.refine));
  if (o.probes < 0) bad("--probes must be >= 0, got " + std::to_string(o.probes));
  if (o.ef < 0) bad("--ef must be >= 0, got " + std::to_string(o.ef));
  parse_nprobe(o.nprobe);
  check_output_path(o.ids, "--ids", {".npy", ".ivecs"});
  if (!o.distances.empty()) check_output_path(o.distances, "--distances", {".npy", ".fvecs"});
  check_distinct_outputs({{"--ids", o.ids}, {"--distances", o.distances}});
}

std::unique_ptr<SearchParams> search_params_for(const Index& index, const IndexSearchOptions& o) {
  SearchKnobs knobs{parse_nprobe(o.nprobe), o.refine, o.probes};
  knobs.ef = o.ef;
  try {
    return make_search_params(index, knobs);
  } catch (const Error& e) {
    bad(std::string("--") + e.what());  // "--refine applies to ivf_pq; this index is ivf_flat"
  }
}

void write_search_outputs(const IndexSearchOptions& o, const IndexSearchResult& r) {
  OutputSet outputs;
  write_ids(outputs.stage(o.ids), r.ids.view());
  if (!o.distances.empty()) write_matrix(outputs.stage(o.distances), r.values.view());
  outputs.commit();
}

void report_search_notes(const IndexSearchOptions& o, const SearchStats& stats, int64_t queries, bool has_allowed,
                         int64_t allowed) {
  if (stats.short_rows > 0)
    std::fprintf(stderr,
                 "simkit index search: %s of %s queries had fewer than k = %lld candidates; their rows are padded "
                 "with id -1 (%s)\n",
                 with_commas(stats.short_rows).c_str(), with_commas(queries).c_str(), (long long)o.k,
                 has_allowed ? "the allow-list holds fewer stored vectors, or probe more: --nprobe"
                             : "probe more: --nprobe, --probes, --ef");
  if (has_allowed)
    std::fprintf(stderr, "simkit index search: --allowed %s: %s ids allowed; %s\n", quoted_path(o.allowed).c_str(),
                 with_commas(allowed).c_str(),
                 stats.gathered > 0 ? "gathered: the allowed rows were copied out and searched exactly"
                                    : "not gathered: the list was tested inside the index's own scan");
}

bool is_sharded_index(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (std::filesystem::is_directory(p, ec)) return std::filesystem::is_regular_file(p / "manifest.json", ec);
  return p.filename() == "manifest.json" && std::filesystem::is_regular_file(p, ec);
}

void refuse_sharded(const std::string& path, const std::string& command) {
  std::string shards = "<its shards>";
#if defined(SIMKIT_CLI_MPI)
  try {
    shards = std::to_string(mpi::read_manifest(path).shards.size());
  } catch (const Error&) {  // the search would name what is wrong with the manifest
  }
#endif
  bad("--index " + quoted_path(path) + " is a sharded index (a manifest.json and one file per MPI rank): `simkit " +
      command + "` works on single index files; a sharded index is searched with `mpirun -n " + shards +
      " simkit index search` and rebuilt with `mpirun -n P simkit index build`");
}

namespace {

void run_build(const IndexBuildOptions& o) {
#if defined(SIMKIT_CLI_MPI)
  if (launched_by_mpi()) return run_index_build_mpi(o);
#endif
  const Metric metric = parse_metric(o.metric);
  const std::string description = build_description(o);
  check_output_path(o.out, "--out", {});  // any extension; the directory must be writable
  ProgressBar bar("index build");
  Context ctx = make_context(o.run, bar.callback());
  const auto t0 = std::chrono::steady_clock::now();
  const Matrix<float> X = read_points(o.base, "--base");
  std::vector<int64_t> ids;
  if (!o.ids.empty()) ids = read_id_list(o.ids, X.rows());
  std::unique_ptr<Index> index = make_index(description, X.cols(), metric);
  check_nlist(o, X.rows());
  index->train(ctx, X.view());
  index->add(ctx, X.view(), ids);
  index->save(o.out);
  bar.finish();
  report("build", *index, o.out, seconds_since(t0));
}

void run_add(const IndexEditOptions& o) {
  if (is_sharded_index(o.index)) refuse_sharded(o.index, "index add");
  ProgressBar bar("index add");
  Context ctx = make_context(o.run, bar.callback());
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Index> index = load_named(o.index);
  const Matrix<float> X = read_points(o.base, "--base");
  std::vector<int64_t> ids;
  if (!o.ids.empty()) ids = read_id_list(o.ids, X.rows());
  index->add(ctx, X.view(), ids);
  index->save(o.index);
  bar.finish();
  report("add", *index, o.index, seconds_since(t0));
}

void run_remove(const IndexEditOptions& o) {
  if (is_sharded_index(o.index)) refuse_sharded(o.index, "index remove");
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Index> index = load_named(o.index);
  const std::vector<int64_t> ids = read_id_list(o.ids, -1);
  const int64_t removed = index->remove(ids);
  if (removed > 0) index->save(o.index);
  std::printf("removed %s of %s ids\n", with_commas(removed).c_str(), with_commas(int64_t(ids.size())).c_str());
  report("remove", *index, o.index, seconds_since(t0));
}

void run_search(const IndexSearchOptions& o) {
#if defined(SIMKIT_CLI_MPI)
  if (launched_by_mpi()) return run_index_search_mpi(o);
#endif
  check_search_options(o);
  if (is_sharded_index(o.index)) refuse_sharded(o.index, "index search");  // without mpirun
  SearchStats stats;
  ProgressBar bar("index search");
  Context ctx = make_context(o.run, bar.callback());
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Index> index = load_named(o.index);
  const Matrix<float> Q = read_points(o.queries, "--queries");
  if (Q.cols() != index->dim())
    bad("dimension mismatch: --queries " + quoted_path(o.queries) + " has d = " + std::to_string(Q.cols()) +
        ", the index has d = " + std::to_string(index->dim()));
  if (extension_of(o.ids) == ".ivecs" && index->next_id() - 1 > std::numeric_limits<int32_t>::max())
    bad("--ids: .ivecs holds int32 ids but the index holds larger ones; use .npy (int64)");
  std::optional<Matrix<int64_t>> truth;
  if (!o.truth.empty()) truth = read_truth(o.truth, Q.rows(), o.k);
  std::unique_ptr<SearchParams> params = search_params_for(*index, o);
  SearchParams& sp = *params;
  sp.stats = &stats;
  std::vector<int64_t> allowed;
  if (!o.allowed.empty()) {
    allowed = read_allowed(o.allowed);
    sp.allowed = ArrayView<const int64_t>(allowed.data(), int64_t(allowed.size()));
  }
  const double load_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const IndexSearchResult r = index->search(ctx, Q.view(), o.k, sp);
  const double search_s = seconds_since(t0);
  const std::string where = describe_device(ctx);
  bar.finish();
  write_search_outputs(o, r);
  if (truth) print_recall(r.ids, *truth, o.k);
  std::fflush(stdout);
  report_search_notes(o, stats, Q.rows(), sp.allowed.has_value(), int64_t(allowed.size()));
  std::fprintf(
      stderr, "simkit index search: %s queries, k = %lld, %s (%s vectors, %s) on %s: %s, %s queries/s (load %s)\n",
      with_commas(Q.rows()).c_str(), (long long)o.k, index->description().c_str(), with_commas(index->size()).c_str(),
      to_string(index->metric()), where.c_str(), format_duration(search_s).c_str(),
      with_commas(int64_t(Q.rows() / std::max(search_s, 1e-9))).c_str(), format_duration(load_s).c_str());
}

void run_info(const std::string& path) {
  if (is_sharded_index(path)) {
#if defined(SIMKIT_CLI_MPI)
    return print_sharded_info(path);
#else
    refuse_sharded(path, "index info");
#endif
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<Index> index = load_named(path);
  const double load_s = seconds_since(t0);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  std::printf("file         %s (%s bytes, loaded and checked in %s)\n", path.c_str(),
              with_commas(int64_t(bytes)).c_str(), format_duration(load_s).c_str());
  std::printf("type         %s\n", index->type().c_str());
  std::printf("description  %s\n", index->description().c_str());
  std::printf("metric       %s\n", to_string(index->metric()));
  std::printf("dimension    %lld\n", (long long)index->dim());
  std::printf("vectors      %s\n", with_commas(index->size()).c_str());
  std::printf("next id      %s\n", with_commas(index->next_id()).c_str());
  std::printf("memory       %s bytes in host memory\n", with_commas(int64_t(index->memory_bytes())).c_str());
}

}  // namespace

void add_index_command(CLI::App& app) {
  auto* index = app.add_subcommand("index", "Build, change, search and inspect nearest-neighbour index files");
  index->require_subcommand(1);
  index->footer(
      "Index types:\n"
      "  flat      exact: every query is compared with every vector (the same results as `simkit knn`)\n"
      "  ivf_flat  k-means cells (--nlist); a search scans the --nprobe cells nearest each query.\n"
      "            --nprobe = nlist is exact; 'seed' probes ceil(0.8 nlist), the seed document's rule.\n"
      "  ivf_pq    the same cells, each vector stored as --m one-byte codes (m bytes instead of 4 d);\n"
      "            the best --refine x k of the code scan are re-ranked exactly against the original\n"
      "            vectors (kept for it; --refine 0 keeps codes only and returns their estimates).\n"
      "  lsh       --tables hash tables of --bits random-hyperplane signs (dot, cosine, pearson) or\n"
      "            quantized projections (l2, sqeuclidean, l1); candidates sharing a probed bucket are\n"
      "            re-scored exactly. The defaults (6 x 2, 1 probe) are the seed document's.\n"
      "            --probes 2^bits probes every bucket of a sign table: exact.\n"
      "  tree      exact, for l2 and sqeuclidean in d <= 8 (anything else is refused: use flat): the\n"
      "            bounding-volume tree of `simkit knn --method tree` over the vectors, the ones added\n"
      "            since it was built searched beside it; the same results as flat.\n"
      "  hnsw      a navigable small-world graph (--m links per node, 16 by default; --ef-construction):\n"
      "            a search walks it best-first keeping the --ef best candidates; larger --ef raises\n"
      "            recall and costs time; --ef >= the index size is exact on small sets. The usual\n"
      "            choice for CPU search of embeddings at high recall; ivf_pq when memory is short.\n"
      "Example:\n"
      "  simkit index build --base base.npy --type ivf_flat --nlist 1024 --metric cosine --out wn.simkit\n"
      "  simkit index search --index wn.simkit --queries q.npy -k 10 --nprobe 32 --ids ids.npy --truth gt.ivecs\n"
      "  simkit index build --base base.npy --type ivf_pq --nlist 1024 --m 48 --refine 4 --metric cosine --out "
      "pq.simkit\n"
      "  simkit index build --base base.npy --description lsh,tables=16,bits=8 --metric cosine --out lsh.simkit\n"
      "  simkit index search --index lsh.simkit --queries q.npy -k 10 --probes 4 --ids ids.npy\n"
      "  simkit index build --base base.npy --type hnsw --storage sq8 --metric cosine --out g.simkit\n"
      "  simkit index search --index g.simkit --queries q.npy -k 10 --ef 128 --ids ids.npy --truth gt.ivecs\n"
      "  simkit index search --index wn.simkit --queries q.npy -k 10 --allowed nouns.npy --ids ids.npy\n"
      "  simkit index add --index wn.simkit --base more.npy      # ids continue after the largest\n"
      "  simkit index remove --index wn.simkit --ids old.npy\n"
      "  simkit index info --index wn.simkit\n"
      "Under mpirun (a build with MPI), flat, ivf_flat and ivf_pq indexes are sharded: each rank builds\n"
      "and searches one slice of --base, trained as one index on all of it, and rank 0 writes the same\n"
      "ids and distances as one process (the shards' results are merged by their float64 keys):\n"
      "  mpirun -n 4 simkit index build --base base.npy --type ivf_pq --nlist 256 --metric l2 --out wn.shards\n"
      "  mpirun -n 4 simkit index search --index wn.shards --queries q.npy -k 10 --ids ids.npy --device cpu");

  auto b = std::make_shared<IndexBuildOptions>();
  auto* build = index->add_subcommand("build", "Train an index on --base, add every row, write it to --out");
  build->add_option("--base", b->base, "vectors (n x d): .npy, .fvecs, .bvecs or .ivecs")->required();
  build->add_option("--type", b->type, "flat, ivf_flat, ivf_pq, lsh, tree or hnsw")->capture_default_str();
  build->add_option("--description", b->description,
                    "the whole index description instead of --type and its options, e.g. "
                    "'ivf_pq,nlist=4096,m=32,refine=4' or 'lsh,tables=6,bits=2'");
  build->add_option("--metric", b->metric, "l2, sqeuclidean, l1, dot, cosine or pearson")->required();
  build
      ->add_option("--out", b->out,
                   "index file to write (replaced atomically); under mpirun -n P: a directory, which gets one "
                   "shard per rank and manifest.json")
      ->required();
  build->add_option("--ids", b->ids, "one int64 id per row (.npy / .ivecs); default 0 .. n-1");
  build->add_option("--nlist", b->nlist, "ivf_flat, ivf_pq: k-means cells (~ 4 sqrt(n) is a usual start)")
      ->capture_default_str();
  build->add_option("--nprobe", b->nprobe, "ivf_flat: default cells per search, or 'seed'; default max(1, nlist / 32)");
  build
      ->add_option("--train-sample", b->train_sample,
                   "ivf_flat: k-means trains on this many rows; 0: min(n, 256 nlist)")
      ->capture_default_str();
  build->add_option("--iterations", b->iterations, "ivf_flat, ivf_pq: Lloyd iterations at most")->capture_default_str();
  build->add_option("--seed", b->seed, "k-means++, sample and projection seed")->capture_default_str();
  build
      ->add_option("--m", b->m,
                   "ivf_pq: one-byte codes per vector, a divisor of d; 0: the largest <= d / 4. hnsw: links per "
                   "node (twice as many on the bottom layer); 0: 16")
      ->capture_default_str();
  build->add_option("--refine", b->refine, "ivf_pq: re-rank refine x k candidates exactly; 0 keeps no vectors")
      ->capture_default_str();
  build->add_option("--refine-on", b->refine_on, "ivf_pq: where a GPU search re-ranks: device or host")
      ->capture_default_str();
  build->add_option("--tables", b->tables, "lsh: hash tables")->capture_default_str();
  build->add_option("--bits", b->bits, "lsh: hashes per table, 1..32")->capture_default_str();
  build->add_option("--probes", b->probes, "lsh: default buckets probed per table")->capture_default_str();
  build->add_option("--width", b->width, "lsh (l2, sqeuclidean, l1): bucket width; 0: from the data")
      ->capture_default_str();
  build->add_option("--ef-construction", b->ef_construction, "hnsw: candidates kept while linking a new vector")
      ->capture_default_str();
  build->add_option("--ef", b->ef, "hnsw: default candidates kept per search (at least k)")->capture_default_str();
  build
      ->add_option("--storage", b->storage,
                   "hnsw: float32, or sq8 (the walk on one-byte codes, ~2x faster at equal recall on WordNet; the "
                   "best 4 k re-ranked on the float32 rows, kept beside: 1.22x the memory)")
      ->capture_default_str();
  add_run_options(build, b->run);
  build->callback([b] { run_build(*b); });

  auto a = std::make_shared<IndexEditOptions>();
  auto* add = index->add_subcommand("add", "Add the rows of --base to an index file (rewritten atomically)");
  add->add_option("--index", a->index, "index file")->required();
  add->add_option("--base", a->base, "vectors to add (n x d)")->required();
  add->add_option("--ids", a->ids, "one int64 id per row, none already in the index; default: after the largest");
  add_run_options(add, a->run);
  add->callback([a] { run_add(*a); });

  auto r = std::make_shared<IndexEditOptions>();
  auto* remove = index->add_subcommand("remove", "Remove vectors by id from an index file (rewritten atomically)");
  remove->add_option("--index", r->index, "index file")->required();
  remove->add_option("--ids", r->ids, "ids to remove (.npy / .ivecs); ids not present are ignored")->required();
  remove->callback([r] { run_remove(*r); });

  auto s = std::make_shared<IndexSearchOptions>();
  auto* search = index->add_subcommand("search", "The k best vectors of an index for every query");
  search->add_option("--index", s->index, "index file; under mpirun -n P: a sharded index's directory (P shards)")
      ->required();
  search->add_option("--queries", s->queries, "queries (m x d)")->required();
  search->add_option("-k,--k", s->k, "neighbours per query; beyond the index size rows are padded with id -1")
      ->required();
  search->add_option("--nprobe", s->nprobe, "ivf_flat, ivf_pq: cells to scan per query (1..nlist) or 'seed'");
  search->add_option("--refine", s->refine, "ivf_pq: re-rank refine x k candidates exactly; 0: the index's");
  search->add_option("--probes", s->probes, "lsh: buckets probed per table; 0: the index's");
  search->add_option("--ef", s->ef, "hnsw: candidates kept per search (at least k); 0: the index's");
  search->add_option("--ids", s->ids, "output ids, m x k: .npy (int64) or .ivecs (int32)")->required();
  search->add_option("--distances", s->distances, "also write the metric values, m x k float32: .npy or .fvecs");
  search->add_option("--truth", s->truth, "ground-truth ids (>= k per query): prints recall@k on stdout");
  search->add_option("--allowed", s->allowed,
                     "return only these ids: one list (.npy of integers, or .ivecs), sorted ascending without "
                     "repeats; the k best allowed vectors are searched for");
  add_run_options(search, s->run);
  search->callback([s] { run_search(*s); });

  auto info_path = std::make_shared<std::string>();
  auto* info = index->add_subcommand("info", "What an index file holds (it is loaded and fully checked)");
  info->add_option("--index", *info_path, "index file")->required();
  info->callback([info_path] { run_info(*info_path); });
}

}  // namespace simkit::cli
