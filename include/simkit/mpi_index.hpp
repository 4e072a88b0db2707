#pragma once
// Sharded nearest-neighbour indexes over MPI ranks (libsimkit_mpi, as include/simkit/mpi.hpp).
//
// A sharded index is one index per rank, each holding a contiguous slice of one base -- rank r
// rows [offset_r, offset_r + n_r), stored under their global row numbers as ids -- and every
// one trained as the one-process index on the whole base is trained: the same sample, drawn with
// the seed from the whole base (each rank sends the sampled rows it holds to all), the same
// k-means cells and ivf_pq code books (training is deterministic for a seed, whatever the thread
// count; the ranks check that they learned the same). A search runs on every shard and the
// shards' lists are merged on the root by (float64 key, id), the rule each index ranks by, so
// the answer is the one-process index's on the whole base: the same ids, the same float32
// values, bit for bit. Kinds: flat, ivf_flat, ivf_pq (lsh, tree and hnsw are refused).
//
// What holds, per kind (docs/ARCHITECTURE.md, "MPI ranks", has the reasons):
//   flat       identical, any k (as mpi::knn: pearson keeps knn's margin of candidates).
//   ivf_flat   identical at any nprobe: the probed lists depend on the query and the (shared)
//              centroids alone, and each shard ranks its part of them by (key, id). Each list
//              scan keeps k plus knn's margin of candidates by float32 key before the float64
//              re-score, in one process as in a shard, so both are the rule's answer unless more
//              rows than the margin nearly tie at the k-th place.
//   ivf_pq     identical at any nprobe and refine. refine = 0: the best k by (code estimate, id)
//              of each shard, merged by the same rule. refine = R: the one-process search
//              re-ranks the best R k estimates of the WHOLE base, so the search runs in two
//              rounds: each shard's best R k estimates are merged on the root into the global
//              R k, and each rank computes the re-rank's keys (its float32 shortlist key and the
//              float64 key) of the survivors it holds; the root applies the re-rank's rule to
//              them. ivf_pq shards search on the CPU (Context::device is not read).
// Allow-lists (SearchParams::allowed) are served where both of the planner's plans give the
// same answer, since its choice depends on the shard's size, not the whole base's: flat, and
// ivf_flat probing every list. Elsewhere they are refused (Error(invalid_argument)).
//
// On disk (save_shards / load_shard): DIR/shard-<r>-of-<P>.simkit, each written by its rank with
// Index::save (atomic), and DIR/manifest.json, written by the root after every shard is saved:
//   {"format": "simkit-sharded-index", "version": 1, "type": "ivf_pq", "description": "...",
//    "metric": "l2", "dim": 64, "total": 1797, "shards": [{"file": "shard-0-of-3.simkit",
//    "first": 0, "rows": 599}, ...]}
//
// Every call here is collective over `comm` (every rank calls it with the same arguments but
// its own slice or shard), and errors are agreed on: every rank throws the same Error or none
// does. The matrices are in host memory.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::mpi {

/// This rank's shard of make_index(description, d, metric) trained on the whole base and given
/// its rows: `X_local` (n_r x d, n_r >= 0) is rows [row_offset, row_offset + n_r) of the base,
/// stored under ids row_offset + i. Error(invalid_argument) when the slices are not contiguous
/// in rank order from row 0, when the ranks disagree on the description, metric or d, for a kind
/// that is not sharded, and for anything make_index, train or add refuse.
std::unique_ptr<Index> build_shard(const Context& ctx, MPI_Comm comm, std::string_view description, Metric metric,
                                   MatrixView<const float> X_local, int64_t row_offset);

/// For each row of Q (m x d, the same on every rank), the k best vectors of all the shards, as
/// the one-process index holding every shard's vectors returns them (see above), with
/// `params` of the shards' type (the same on every rank; its stats, when set, are counted on
/// the root). The shards hold disjoint ids and are of one kind, description and metric (as
/// build_shard and load_shard make them). Returns the m x k result on `root`, 0 x 0 elsewhere.
IndexSearchResult search_shards(const Context& ctx, MPI_Comm comm, const Index& shard, MatrixView<const float> Q,
                                int64_t k, const SearchParams& params = {}, int root = 0);

/// What DIR/manifest.json records.
struct ShardManifest {
  struct Shard {
    std::string file;  // the file's name in DIR
    int64_t first = 0, rows = 0;
  };
  int version = 1;
  std::string type, description;
  Metric metric = Metric::l2;
  int64_t dim = 0, total = 0;
  std::vector<Shard> shards;  // in rank order
};

/// Writes this rank's shard (rows [row_offset, row_offset + shard.size()) of the base) as
/// DIR/shard-<rank>-of-<ranks>.simkit, then, once every rank has saved its own, the root writes
/// DIR/manifest.json (atomically), so a manifest only ever names complete shards. DIR must exist.
/// Returns the manifest on every rank. Error(io) when a file cannot be written.
ShardManifest save_shards(MPI_Comm comm, const Index& shard, int64_t row_offset, const std::string& dir, int root = 0);

/// Reads DIR/manifest.json (or the manifest file itself) and checks it: Error(io) naming the
/// problem for a missing, truncated or malformed manifest, or one that contradicts itself
/// (slices not contiguous, rows not summing to the total). Not collective; needs no MPI.
ShardManifest read_manifest(const std::string& path);

/// Every rank reads the manifest at `path` (read_manifest) and loads its own shard, checked
/// against it (type, description, metric, dim, rows and ids). Error(invalid_argument) when the
/// communicator's size is not the manifest's shard count; Error(io) for a missing or corrupted
/// shard file or one the manifest does not describe. `manifest`, when given, receives it.
std::unique_ptr<Index> load_shard(MPI_Comm comm, const std::string& path, ShardManifest* manifest = nullptr);

}  // namespace simkit::mpi
