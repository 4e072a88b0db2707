#pragma once
// The inverted-file family's searchers, one per backend, beside the family (cpu/, cuda/): what
// an index hands them and their entry points. The index picks the one of the backend that
// backend_for() chose; a build without CUDA has no GPU searchers (gpu_absent.cpp: the GPU is then
// never chosen, and a direct call is refused).

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

#include "index/id_filter.hpp"
#include "index/ivf/ivf_lists.hpp"
#include "index/ivf/ivf_pq_lists.hpp"

namespace simkit::detail {

/// One ivf_flat search (ivf_flat_index.cpp): Q may live on the device for the GPU backend;
/// the outputs are host Q.rows x k. 1 <= nprobe <= lists->nlist; the index holds >= 1 row.
struct IvfSearchArgs {
  const IvfLists* lists = nullptr;
  MatrixView<const float> Q;
  int64_t k = 0;
  int64_t nprobe = 0;
  MatrixView<float> values;
  MatrixView<int64_t> ids;
  /// When set, only the rows it allows are candidates: an allow-list tested inside the list scan
  /// (each searcher marks the rows in the layout it scans).
  const IdFilter* filter = nullptr;
};

/// One ivf_pq search (ivf_pq_index.cpp): Q (the queries as given, not prepared) may live
/// on the device for the GPU backend; the outputs are host Q.rows x k. 1 <= nprobe <= nlist;
/// the index holds >= 1 row. With refine > 0 (lists->keeps_vectors then holds) the best refine
/// candidates of the code scan per query (refine >= k) are re-scored and ranked by knn's rule;
/// with refine = 0 the best k by (approximate key, id) are returned with the metric's value of
/// the approximate key. Rows short of k are padded and counted.
struct IvfPqSearchArgs {
  const IvfPqLists* lists = nullptr;
  MatrixView<const float> Q;
  int64_t k = 0;
  int64_t nprobe = 0;
  int64_t refine = 0;
  MatrixView<float> values;
  MatrixView<int64_t> ids;
  int64_t* short_rows = nullptr;  // += queries padded
  int64_t* candidates = nullptr;  // += rows of the probed lists, over the queries
  /// As IvfSearchArgs::filter.
  const IdFilter* filter = nullptr;
  /// When set (refine = 0): also each result's code estimate (+inf where padded), which a
  /// sharded search's first round merges by (index/shard_hooks.hpp, ivf_pq_shards.hpp): values
  /// alone are not enough, as two estimates may give one value.
  MatrixView<float> keys{};
  /// When set: whether the GPU's scan served the call (false: the CPU backend did, as for the
  /// GPU calls it cannot serve), which decides the re-rank rule a multi-GPU search applies.
  bool* device_scan = nullptr;
};

namespace cpu {
/// Scans the nprobe lists nearest each query and ranks the candidates exactly; a row short of k
/// candidates is padded (cpu/ivf_flat_search.cpp).
void ivf_flat_search(const Context& ctx, const IvfSearchArgs& a);
/// The ivf_pq scan through lookup tables, and the exact re-rank when asked (cpu/ivf_pq_search.cpp).
void ivf_pq_search(const Context& ctx, const IvfPqSearchArgs& a);
/// How many of n re-rank candidates ivf_pq_search's float32 shortlist keeps for k (n: all).
int64_t ivf_pq_shortlist(const MetricPlan& plan, int64_t k, int64_t n);
/// The re-rank's last step for one query of a search in two rounds: `ranked` holds its
/// candidates' (float64 key, id) in shortlist order, (float32 key, id); the first
/// ivf_pq_shortlist(plan, k, size) of them (all of them without `cut`: the GPU's rule) are
/// ranked by (float64 key, id) and the best k written to values and ids, padded with the
/// metric's worst value and -1. Reorders `ranked`.
void ivf_pq_rank_shortlist(const MetricPlan& plan, std::vector<std::pair<double, int64_t>>& ranked, int64_t k,
                           float* values, int64_t* ids, bool cut = true);
/// For `count` candidate arena rows of query q (as given): the float32 key the re-rank's shortlist
/// ranks each by and the exact key it then ranks by, as ivf_pq_search computes them (a sharded
/// search re-ranks the whole base's candidates over the ranks that hold them).
void ivf_pq_rerank_keys(const IvfPqLists& L, const float* q, const int64_t* rows, int64_t count, float* shortlist,
                        double* exact);
}  // namespace cpu

namespace cuda {
/// The same on the GPU (cuda/ivf_flat_search.cpp, cuda/ivf_pq_search.cpp).
void ivf_flat_search(const Context& ctx, const IvfSearchArgs& a);
void ivf_pq_search(const Context& ctx, const IvfPqSearchArgs& a);
}  // namespace cuda

}  // namespace simkit::detail
