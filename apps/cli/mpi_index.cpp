// `mpirun -n P simkit index build|search`: the sharded index of include/simkit/mpi_index.hpp.
//
// build: rank r reads rows row_slice(n, P, r) of --base alone, the ranks train one index on the
// whole base's sample (mpi::build_shard) and save DIR/shard-<r>-of-<P>.simkit and, last,
// DIR/manifest.json (mpi::save_shards). search: every rank loads its shard (checked against the
// manifest; P must be its shard count), rank 0 reads --queries and broadcasts them,
// mpi::search_shards merges on rank 0, which writes the same --ids and --distances as
// `simkit index search` on the one-process index. Every refusal is agreed on: each rank exits 2
// with the same message, and nothing is written.

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
#include <simkit/mpi_index.hpp>

#include "index_options.hpp"
#include "mpi_launch.hpp"
#include "recall.hpp"

namespace simkit::cli {

namespace {

/// --out under mpirun: a directory, made by rank 0 when missing (its parent must exist).
void prepare_out_dir(const std::string& out, bool root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    bad("--out " + quoted_path(out) +
        " is a file; under mpirun, --out names a directory for the shards and manifest.json");
  if (!root || fs::is_directory(out, ec)) return;
  if (!fs::create_directory(out, ec) || ec)
    throw Error(ErrorCode::io, "--out: cannot create the directory " + quoted_path(out) +
                                   (ec ? " (" + ec.message() + ")" : std::string()));
}

}  // namespace

void run_index_build_mpi(const IndexBuildOptions& o) {
  const MpiScope scope;
  const int rank = scope.rank, ranks = scope.ranks;
  const bool root = rank == 0;
  Metric metric{};
  std::string description;
  Context ctx;
  BaseSlice base;
  const auto t0 = std::chrono::steady_clock::now();
  on_every_rank([&] {
    metric = parse_metric(o.metric);
    description = build_description(o);
    if (!o.ids.empty())
      bad("--ids: a sharded index stores the base's row numbers 0 .. n-1 as ids; build with --ids without mpirun");
    ctx = rank_context(o.run);
    base = read_base_slice(o.base, "--base", ranks, rank);
    // A bad description, or a kind that is not sharded, is refused before any work.
    const std::string type = make_index(description, base.cols, metric)->type();
    if (type != "flat" && type != "ivf_flat" && type != "ivf_pq")
      bad("a " + type +
          " index cannot be sharded over MPI ranks (flat, ivf_flat and ivf_pq can); build it without "
          "mpirun");
    check_nlist(o, base.rows);
  });
  on_every_rank([&] { prepare_out_dir(o.out, root); });
  const std::unique_ptr<Index> shard =
      mpi::build_shard(ctx, MPI_COMM_WORLD, description, metric, base.X.view(), base.slice.first);
  const mpi::ShardManifest m = mpi::save_shards(MPI_COMM_WORLD, *shard, base.slice.first, o.out);
  const std::string devices = rank_devices(ctx);
  if (!root) return;
  std::fprintf(stderr, "simkit index build: %d MPI ranks, base rows per rank %s%s\n", ranks,
               rows_per_rank(base.rows, ranks).c_str(), devices.c_str());
  std::fprintf(stderr, "simkit index build: %s, %s, d = %lld, %s vectors in %d shards -> %s/manifest.json in %s\n",
               m.description.c_str(), to_string(m.metric), (long long)m.dim, with_commas(m.total).c_str(), ranks,
               o.out.c_str(), format_duration(seconds_since(t0)).c_str());
}

void run_index_search_mpi(const IndexSearchOptions& o) {
  const MpiScope scope;
  const int ranks = scope.ranks;
  const bool root = scope.rank == 0;
  Context ctx;
  auto t0 = std::chrono::steady_clock::now();
  on_every_rank([&] {
    check_search_options(o);
    ctx = rank_context(o.run);
    if (!is_sharded_index(o.index))
      bad("--index " + quoted_path(o.index) +
          " is not a sharded index (a directory with manifest.json, written by `mpirun -n " + std::to_string(ranks) +
          " simkit index build --out DIR`); search a single index file without mpirun");
  });
  mpi::ShardManifest m;
  const std::unique_ptr<Index> shard = mpi::load_shard(MPI_COMM_WORLD, o.index, &m);
  const Matrix<float> Q = read_points_on_root(o.queries, "--queries");
  std::optional<Matrix<int64_t>> truth;
  std::unique_ptr<SearchParams> params;
  std::vector<int64_t> allowed;
  on_every_rank([&] {
    if (Q.cols() != m.dim)
      bad("dimension mismatch: --queries " + quoted_path(o.queries) + " has d = " + std::to_string(Q.cols()) +
          ", the index has d = " + std::to_string(m.dim));
    if (extension_of(o.ids) == ".ivecs" && m.total - 1 > std::numeric_limits<int32_t>::max())
      bad("--ids: .ivecs holds int32 ids but the index holds larger ones; use .npy (int64)");
    if (root && !o.truth.empty()) truth = read_truth(o.truth, Q.rows(), o.k);
    params = search_params_for(*shard, o);
    if (!o.allowed.empty()) {
      allowed = read_allowed(o.allowed);
      params->allowed = ArrayView<const int64_t>(allowed.data(), int64_t(allowed.size()));
    }
  });
  SearchStats stats;
  params->stats = &stats;
  const double load_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const IndexSearchResult r = mpi::search_shards(ctx, MPI_COMM_WORLD, *shard, Q.view(), o.k, *params, 0);
  const double search_s = seconds_since(t0);
  const std::string devices = rank_devices(ctx);
  if (!root) return;
  write_search_outputs(o, r);
  if (truth) print_recall(r.ids, *truth, o.k);
  std::fflush(stdout);
  report_search_notes(o, stats, Q.rows(), !o.allowed.empty(), int64_t(allowed.size()));
  std::fprintf(stderr,
               "simkit index search: %s queries, k = %lld, %s (%s vectors, %s) over %d shards: %s, %s queries/s "
               "(load %s)%s\n",
               with_commas(Q.rows()).c_str(), (long long)o.k, m.description.c_str(), with_commas(m.total).c_str(),
               to_string(m.metric), ranks, format_duration(search_s).c_str(),
               with_commas(int64_t(Q.rows() / std::max(search_s, 1e-9))).c_str(), format_duration(load_s).c_str(),
               devices.c_str());
}

void print_sharded_info(const std::string& path) {
  const mpi::ShardManifest m = mpi::read_manifest(path);
  std::printf("sharded index %s (manifest version %d; each shard is checked when searched)\n", path.c_str(), m.version);
  std::printf("type         %s\n", m.type.c_str());
  std::printf("description  %s\n", m.description.c_str());
  std::printf("metric       %s\n", to_string(m.metric));
  std::printf("dimension    %lld\n", (long long)m.dim);
  std::printf("vectors      %s\n", with_commas(m.total).c_str());
  std::printf("shards       %zu (search with mpirun -n %zu)\n", m.shards.size(), m.shards.size());
  for (const mpi::ShardManifest::Shard& s : m.shards)
    std::printf("  %-24s %s rows from row %s\n", s.file.c_str(), with_commas(s.rows).c_str(),
                with_commas(s.first).c_str());
}

}  // namespace simkit::cli
