#pragma once
// What ivf_flat and ivf_pq share: the cells (k-means centroids, how rows and queries meet them,
// the training sample, the nprobe rules) and the list arena (index/ivf/list_arena.hpp). Each
// family's lists (ivf_lists.hpp, ivf_pq_lists.hpp) are an IvfCore plus the per-row columns it
// stores; IvfIndexBase (ivf_index_base.hpp) trains, adds and removes through it once for both.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"
#include "index/ivf/list_arena.hpp"

namespace simkit::detail {

/// Whatever a GPU searcher keeps resident for one family's lists (cuda/); dropped on any change.
class IvfDeviceLists {
 public:
  virtual ~IvfDeviceLists() = default;
};

/// How a multi-GPU search uses its GPUs (gpu_split).
enum class GpuSplit {
  queries,  // replicas: each GPU holds the whole index and answers a slice of the queries
  rows,     // each GPU holds a slice of every list and sees every query; the lists are merged
};

struct IvfCore {
  int64_t dim = 0;
  int64_t nlist = 0;
  MetricPlan plan;                      // the index's metric
  Metric coarse = Metric::sqeuclidean;  // how rows and queries are compared with the centroids
  std::vector<float> centroids;         // nlist x dim
  ListArena arena;                      // the lists' rows and ids; not ready until trained

  bool trained() const noexcept { return arena.ready(); }
  int64_t size() const noexcept { return arena.size(); }
  MatrixView<const float> centroid_rows() const noexcept { return {centroids.data(), nlist, dim}; }

  /// The device copies, one per GPU searched (by id), made by a GPU searcher on first use and
  /// dropped by every change.
  mutable std::mutex device_mutex;
  mutable std::map<int, std::shared_ptr<IvfDeviceLists>> device;
  /// A multi-GPU search's shards (each a slice of every list with its own device copy), made
  /// on first use under device_mutex and dropped with the device copy.
  mutable std::shared_ptr<IvfDeviceLists> shards;
  /// gpu_split's choice for the GPUs it names, until the next change.
  mutable std::vector<int> split_gpus;
  mutable GpuSplit split = GpuSplit::rows;
  void drop_device_copy() const {
    std::lock_guard g(device_mutex);
    device.clear();
    shards.reset();
    split_gpus.clear();
  }
};

/// A family's lists (IvfLists, IvfPqLists) split over the GPUs of a multi-GPU search, a slice
/// of every list each, with its own device copy (the family's split_lists).
template <class Lists>
struct SplitLists final : IvfDeviceLists {
  std::vector<std::unique_ptr<Lists>> lists;
};

/// whole's split into `shards`, kept in whole.shards until the next change (made on first use,
/// or again when the shard count changes).
template <class Lists>
std::shared_ptr<const SplitLists<Lists>> split_over(const Lists& whole, int64_t shards) {
  std::lock_guard g(whole.device_mutex);
  auto have = std::dynamic_pointer_cast<const SplitLists<Lists>>(whole.shards);
  if (!have || int64_t(have->lists.size()) != shards) {
    auto made = std::make_shared<SplitLists<Lists>>();
    made->lists = split_lists(whole, shards);  // the family's, found by argument-dependent lookup
    whole.shards = made;
    have = made;
  }
  return have;
}

/// The split of a search over `shards` (gpu_shard_contexts): by queries while a device copy of
/// `device_bytes` fits within ResidentRows::kResidentShare of every shard GPU's free memory, by
/// rows otherwise -- the way to search an index larger than one GPU. A split by rows pays, on
/// every GPU, the probe of every query and a top-k per probed list, none of which shrinks with
/// the GPU count, while replicas need no merge (two H200s, 10M x 128 rows, nlist 4,096, nprobe
/// 64, 10k queries: 46.6 ms on one; on two, 33.8 ms by rows and 27.6 ms by queries). SIMKIT_GPU_SPLIT=queries or rows
/// forces one (the measurement switch; the tests use it with CPU shard contexts). Chosen once per index version and set
/// of GPUs.
GpuSplit gpu_split(const IvfCore& core, const std::vector<Context>& shards, size_t device_bytes);

/// How rows and queries meet the centroids, per metric: by cosine for cosine, by pearson for
/// pearson (centroids of centred rows have mean 0: their cosine), by inner product for dot (as
/// FAISS's IndexIVFFlat for METRIC_INNER_PRODUCT), by squared distance otherwise (l1 has no
/// k-means of its own: the l2 cells are still a good partition of space).
Metric coarse_metric(Metric m);

/// The k-means that trains cells for `coarse`: spherical for cosine and pearson, squared
/// distance otherwise.
Metric kmeans_metric(Metric coarse);

/// Lists scanned per query: `asked` (clamped to nlist), or kProbeFourFifths (ceil(0.8 nlist)), or 0
/// for the build's default, itself max(1, nlist / 32) when 0. Error(invalid_argument) below 1.
int64_t resolve_nprobe(int64_t asked, int64_t build_default, int64_t nlist);

/// At most `cap` rows of X drawn with `seed` (never fewer than nlist), copied into `holder`, or X
/// itself when it is no larger.
MatrixView<const float> training_sample(MatrixView<const float> X, int64_t cap, int64_t nlist, uint64_t seed,
                                        Matrix<float>& holder);

/// The rows training_sample takes from a base of n rows, ascending; empty when it takes X itself
/// (cap >= n). A sharded build gathers them from the ranks that hold them.
std::vector<int64_t> training_indices(int64_t n, int64_t cap, int64_t nlist, uint64_t seed);

/// Each row's nearest centroid under `coarse` (exact k-NN, k = 1, ties to the lower list).
std::vector<int64_t> nearest_cells(const Context& ctx, MatrixView<const float> X, const IvfCore& core);

}  // namespace simkit::detail
