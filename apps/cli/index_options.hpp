#pragma once
// What `simkit index` shares between its one-process half (index_command.cpp) and its MPI half
// (mpi_index.cpp, `mpirun -n P simkit index build|search`, built with MPI): the options, and the
// steps both halves take the same way, so that a sharded build or search reads its arguments,
// refuses bad ones and writes its outputs exactly as the one-process command does.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <simkit/index.hpp>

#include "cli_support.hpp"

namespace simkit::cli {

struct IndexBuildOptions {
  std::string base, type = "ivf_flat", metric, out, ids, nprobe, description, refine_on = "device";
  int64_t nlist = 1024, train_sample = 0;
  int64_t m = 0, refine = 4;                 // ivf_pq
  int64_t tables = 6, bits = 2, probes = 1;  // lsh (the seed document's configuration)
  int64_t ef_construction = 200, ef = 64;    // hnsw (its links per node: --m, 0 meaning 16)
  std::string storage = "float32";           // hnsw: float32 or sq8
  double width = 0;
  int iterations = 25;
  uint64_t seed = 0;
  RunOptions run;
};

struct IndexEditOptions {
  std::string index, base, ids;
  RunOptions run;
};

struct IndexSearchOptions {
  std::string index, queries, ids, distances, truth, nprobe, allowed;
  int64_t k = 0, refine = 0, probes = 0, ef = 0;
  RunOptions run;
};

/// The factory description the build options name (make_index); --description wins.
std::string build_description(const IndexBuildOptions& o);

/// Refuses --nlist above the base's n rows (ivf_flat, ivf_pq named by --type) before training.
void check_nlist(const IndexBuildOptions& o, int64_t n);

/// The search options' checks that need no file: k and the knobs' signs, the output paths.
void check_search_options(const IndexSearchOptions& o);

/// The search parameters of the index's type with the options' knobs ("--refine applies to
/// ivf_pq; this index is ivf_flat" for a knob the type does not read).
std::unique_ptr<SearchParams> search_params_for(const Index& index, const IndexSearchOptions& o);

/// --allowed: one list of ids, sorted ascending without repeats (refused otherwise).
std::vector<int64_t> read_allowed(const std::string& path);

/// Writes --ids and --distances together (both or neither).
void write_search_outputs(const IndexSearchOptions& o, const IndexSearchResult& r);

/// The notes after a search: padded rows, and how an allow-list of `allowed` ids was met.
void report_search_notes(const IndexSearchOptions& o, const SearchStats& stats, int64_t queries, bool has_allowed,
                         int64_t allowed);

/// Whether `path` is a sharded index: a directory holding manifest.json, or such a manifest.
bool is_sharded_index(const std::string& path);

/// Error(invalid_argument) for a command that takes an index file and was given a sharded one.
[[noreturn]] void refuse_sharded(const std::string& path, const std::string& command);

#if defined(SIMKIT_CLI_MPI)
/// `mpirun -n P simkit index build ... --out DIR`: one shard per rank and DIR/manifest.json.
void run_index_build_mpi(const IndexBuildOptions& o);
/// `mpirun -n P simkit index search --index DIR ...`: rank r searches shard r, rank 0 writes.
void run_index_search_mpi(const IndexSearchOptions& o);
/// `simkit index info --index DIR` for a sharded index: what its manifest records.
void print_sharded_info(const std::string& path);
#endif

}  // namespace simkit::cli
