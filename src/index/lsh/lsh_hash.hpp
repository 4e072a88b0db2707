#pragma once
// lsh's hash functions, bucket tables and multi-probe sequence (index/lsh_tables.hpp holds what
// they produce). Host code, shared by both backends: the CUDA backend projects its queries with
// cuBLAS and hands the projections to the same probe and candidate code, so for equal
// projections both backends probe the same buckets and meet the same candidates.
//
//   metric                 hash of row x, per hash j                      key of a table
//   dot, cosine, pearson   sign(a_j . x), a_j Gaussian (random hyperplane) the bits packed
//   l2, sqeuclidean        floor((a_j . x + b_j) / width), a_j Gaussian    a 64-bit mix of the
//   l1                     the same with a_j Cauchy (1-stable)             bits integers
//
// Pearson hashes the mean-centred row, and its hyperplanes are centred too (a_j . 1 = 0), so
// a_j . (x - mean) = a_j . x up to rounding: the hash depends only on the pattern, as pearson does.

#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "index/lsh/lsh_tables.hpp"

namespace simkit::detail {

/// Sets up an untrained T for (dim, metric, tables, bits): plan, sign / centre.
void lsh_configure(LshTables& T, int64_t dim, Metric metric, int64_t tables, int64_t bits);

/// Draws the projections (and, p-stable, the offsets in [0, width)) from `seed`; T.width must
/// be set first for p-stable hashing.
void lsh_draw(LshTables& T, uint64_t seed);

/// The p-stable width the data suggest (see the rule in lsh_hash.cpp); X host, n x dim.
double lsh_width_from_data(const Context& ctx, MatrixView<const float> X, Metric metric, uint64_t seed);

/// out (X.rows x T.hashes(), row-major) = the projections of X's rows (centred first for
/// pearson), float32 through sgemm on `threads` threads.
void lsh_project(const LshTables& T, MatrixView<const float> X, float* out, int threads);

/// The key of table t for a row whose projections (all T.hashes() of them) are `proj`.
int64_t lsh_key(const LshTables& T, const float* proj, int64_t t);

/// Every row's key in every table: X.rows x T.tables.
std::vector<int64_t> lsh_row_keys(const LshTables& T, MatrixView<const float> X, int threads);

/// Rebuilds keys / key_start / bucket_start / members from T.row_keys, sorting each table's
/// rows by key with simkit::sort (stable) on the host.
void lsh_build_buckets(LshTables& T);

/// Whether table t is taken whole at `probes` probes: its bucket count (or, sign hashing, 2^bits)
/// is at most `probes`. The same for every query, so a search knows it before probing.
bool lsh_whole_table(const LshTables& T, int64_t t, int64_t probes);

/// A query's distinct candidate rows: the members of the buckets it probes in every table.
/// Holds per-thread scratch; one instance per thread.
class LshCandidates {
 public:
  /// Gathers the union over tables of the first `probes` buckets of the multi-probe sequence
  /// (the query's own bucket, then those reached by the cheapest perturbations of its hashes);
  /// a table whose bucket count (or, sign hashing, 2^bits) is at most `probes` is taken whole.
  /// `proj` holds the query's T.hashes() projections. The rows land in rows(), unordered.
  void gather(const LshTables& T, const float* proj, int64_t probes);
  /// gather() from buckets a caller already probed: table t's `length[t]` bucket numbers,
  /// relative to its first bucket (T.key_start[t]), follow table t - 1's in `buckets`.
  void gather(const LshTables& T, const int32_t* buckets, const int64_t* length);
  const std::vector<int64_t>& rows() const noexcept { return rows_; }
  /// The same candidates as a bitmap: sets bit r (of word r / 64) of `bits`, which holds
  /// (T.size() + 63) / 64 words, for every candidate row r, and returns how many bits are set
  /// (bits already set count too). No list and no dedup stamps: for the CPU search, where
  /// most rows can be candidates and a bitmap of the rows stays in cache.
  int64_t mark(const LshTables& T, const float* proj, int64_t probes, uint64_t* bits);
  /// The buckets (global indices into T.keys) table t probes for this query, in probe order,
  /// or all of them when the table is taken whole. The GPU search marks candidates on the device
  /// from these buckets (cuda/lsh/lsh_search.cpp) instead of gathering their rows.
  const std::vector<int64_t>& probe(const LshTables& T, const float* proj, int64_t t, int64_t probes);

 private:
  struct Node {
    double cost;
    uint64_t mask;  // perturbations taken, as positions in the cost order
    int top;        // the highest position in mask
  };
  void restart(const LshTables& T);  // empties rows() and forgets which rows it held
  void add_bucket(const LshTables& T, int64_t g);

  std::vector<uint32_t> stamp_;
  uint32_t now_ = 0;
  std::vector<int64_t> rows_, buckets_;
  std::vector<Node> heap_;
  std::vector<double> cost_;
  std::vector<int> order_;
  std::vector<int64_t> slab_;
};

}  // namespace simkit::detail
