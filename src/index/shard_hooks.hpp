#pragma once
// What a sharded index (include/simkit/mpi_index.hpp, src/mpi/sharded_index.cpp) needs from an
// index beyond the public Index. Internal: the answer of P shards must be the one-process
// answer on the whole base, bit for bit, and that needs three things the public API does not
// give:
//   - training as train() does on the whole base, without it: the rows train() would draw, and
//     training on exactly those rows once the ranks that hold them have sent them;
//   - the stored float32 row of a result's id, to compute the float64 key the result was ranked
//     by (results of different shards are merged by (key, id), not by their float32 values);
//   - ivf_pq's search cut where the one-process search crosses from the code scan to the exact
//     re-rank: its re-rank reads the best refine x k code estimates of the WHOLE base, so the
//     shards' estimates are merged first and only the survivors re-ranked (two rounds).
// flat, ivf_flat and ivf_pq implement ShardableIndex; lsh, tree and hnsw are not sharded.

#include <cstdint>
#include <vector>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

/// The rows of a base of n rows that train() learns from.
struct TrainingRows {
  bool all = false;           // the whole base (the sample cap is not below n)
  std::vector<int64_t> rows;  // else these, ascending; none at all: nothing is learned (flat)
};

class ShardableIndex {
 public:
  virtual ~ShardableIndex() = default;
  /// The rows train(ctx, X) reads of a base X of n rows: the sample it draws with its seed.
  virtual TrainingRows training_draw(int64_t n) const = 0;
  /// train(ctx, X) for a base X of n rows whose training_draw(n) are the rows of T, in that
  /// order: the same trained state, without X. Refuses what train() refuses of n (n < nlist).
  virtual void train_on_rows(const Context& ctx, MatrixView<const float> T, int64_t n) = 0;
  /// What training learned, as floats (centroids, code books; nothing for flat): ranks that
  /// trained on the same rows compare it, so that no shard is filed by other cells.
  virtual std::vector<float> trained_state() const = 0;
  /// Copies the stored row of each id (every one stored) into `out` (host, ids.size x dim).
  /// Error(unsupported) where none are kept (ivf_pq built with refine=0).
  virtual void stored_rows(ArrayView<const int64_t> ids, MatrixView<float> out) const = 0;
};

/// `index` as a ShardableIndex, or null for a kind that is not sharded.
ShardableIndex* shardable(Index& index);
const ShardableIndex* shardable(const Index& index);

/// The lists an ivf_flat or ivf_pq search asking `asked` (IvfSearchParams::nprobe) scans, and
/// nlist. Error(invalid_argument) for another kind.
struct IvfProbes {
  int64_t nprobe = 0, nlist = 0;
};
IvfProbes ivf_probes(const Index& index, int64_t asked);

// ivf_pq in two rounds (cpu/ivf_pq_search.cpp is the one-process search, which these reuse).

/// Candidates the re-rank of a search asking `refine` (0: the build's) for k over n rows (every
/// shard's) reads: refine k within [k, n]; 0 for codes only. Refuses what search() refuses.
int64_t ivf_pq_depth(const Index& index, int64_t refine, int64_t k, int64_t n);

/// Round 1, on ctx's device: per query the best `keep` rows of its probed lists by (code
/// estimate, id), best first, as the one-process scan on that device selects them (the GPU's
/// estimates sum in another order than the CPU's): estimates in `keys`, the metric's value of
/// each in `values`, ids; past the rows found +inf, the worst value and -1. Adds the rows scanned
/// to *candidates; *device_scan (when given) says whether the GPU's scan served the call.
void ivf_pq_estimates(const Index& index, const Context& ctx, MatrixView<const float> Q, int64_t nprobe, int64_t keep,
                      MatrixView<float> keys, MatrixView<float> values, MatrixView<int64_t> ids, int64_t* candidates,
                      bool* device_scan = nullptr);

/// Round 2: for each id(i, j) this index holds (-1: none), the float32 key the re-rank's
/// shortlist ranks it by and the float64 key it is finally ranked by, for query i. With
/// `gpu_rule` the final key is the GPU search's (l1: the column-order float sum; the others
/// the same float64 key).
void ivf_pq_rerank_keys(const Index& index, MatrixView<const float> Q, MatrixView<const int64_t> ids,
                        MatrixView<float> shortlist, MatrixView<double> exact, bool gpu_rule = false);

/// The re-rank's last step for one query (cpu::ivf_pq_rank_shortlist with the index's metric):
/// `ranked`, its candidates' (final key, id) in shortlist order, to the best k values and ids.
/// With `gpu_rule` every candidate is ranked (the GPU search has no shortlist).
void ivf_pq_rank_shortlist(const Index& index, std::vector<std::pair<double, int64_t>>& ranked, int64_t k,
                           float* values, int64_t* ids, bool gpu_rule = false);

}  // namespace simkit::detail
