#pragma once
// The GPU search both inverted-file families run through, parameterised by the family's list
// scan (IvfListScanner). Per batch of queries:
//   1. the queries copied up if they are on the host and prepared by the family (ivf_flat pads
//      and centres them, ivf_pq moves them into its coded space); their nprobe nearest centroids
//      found by the backend's exact k-NN;
//   2. the (query, probe) pairs grouped by list on the host (probe_pairs.hpp), so the work on
//      one list runs side by side and reads it once from memory;
//   3. the family's scan into a best-kc slot per (query, probe), then per query the best kc of
//      its nprobe slots (ivf_merge);
//   4. the candidates ranked as the family says (IvfRerank): re-scored by knn's rule in float64,
//      or by the GPU k-NN's l1 sum, or by the scan keys as they are -- on the device, or on the
//      host when the rows needed stay there -- then ranks turned into ids, short rows padded.
// What the device scans cannot serve (kc beyond kIvfMaxCandidates, ...) the family sends to the
// CPU backend with search_on_host().

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/matrix.hpp>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "index/id_filter.hpp"
#include "index/ivf/cuda/ivf_driver_kernels.hpp"
#include "index/ivf/ivf_core.hpp"

namespace simkit::detail::cuda {

/// A host array as a one-column device matrix.
template <class T>
DeviceMatrix<T> upload(const Context& ctx, const std::vector<T>& host) {
  return DeviceMatrix<T>(ctx, MatrixView<const T>{host.data(), int64_t(host.size()), 1});
}

/// nlist + 1 entries: each list's first group of 32 rows in the interleaved device layouts
/// (every list starts a new group).
std::vector<int64_t> group_starts(const ListArena& arena);

/// Positions of a compact arena ordered by id, both ways, and the ids in that order: candidates
/// carry ranks (ivf_driver_kernels.hpp).
struct IvfDeviceRanks {
  IvfDeviceRanks(const Context& ctx, const ListArena& compact);
  std::vector<int64_t> pos_of_rank_host, uid_of_rank_host;
  DeviceMatrix<int64_t> rank_of_pos, pos_of_rank, uid_of_rank;
};

/// The family's device copy on `gpu`, cached on its lists (IvfCore::device, a copy per GPU): the
/// one there when `keep` accepts it, else a new one from `make` (the old one's memory freed first).
template <class D, class Keep, class Make>
std::shared_ptr<const D> cached_device_copy(const IvfCore& lists, int gpu, Keep keep, Make make) {
  std::lock_guard g(lists.device_mutex);
  std::shared_ptr<IvfDeviceLists>& slot = lists.device[gpu];
  auto have = std::dynamic_pointer_cast<const D>(slot);
  if (!have || !keep(*have)) {
    have.reset();
    slot.reset();
    have = make();
    slot = std::const_pointer_cast<D>(have);
  }
  return have;
}

/// One batch as a family's scan sees it.
struct IvfScanBatch {
  int64_t queries = 0;
  int64_t nprobe = 0;
  int kc = 0;
  int capacity = 0;                   // select_capacity(kc)
  const float* prepared = nullptr;    // queries x prepared_cols(), device
  const int64_t* probes = nullptr;    // queries x nprobe lists, device
  const std::vector<int64_t>* start;  // host: list l's pairs are pairs[start[l] .. start[l + 1])
  const int64_t* pairs = nullptr;     // the (query * nprobe + probe) grouped by list, device
  float* slot_keys = nullptr;         // (query * nprobe + probe) * kc + i, device
  int64_t* slot_ranks = nullptr;      //   the same, ranks
  const uint32_t* mask = nullptr;     // the allow-list by position, or null
};

/// A family's part of the search: its query preparation and its list scan.
class IvfListScanner {
 public:
  virtual ~IvfListScanner() = default;
  /// Floats per prepared query.
  virtual int64_t prepared_cols() const = 0;
  /// Whether the coarse probe compares the prepared queries (ivf_pq's rows joined their cells
  /// prepared) rather than the queries as given.
  virtual bool probes_prepared() const = 0;
  /// Device working memory the scan takes beyond the driver's: fixed, and per query of a batch.
  virtual size_t fixed_bytes() const { return 0; }
  virtual size_t bytes_per_query(int64_t /*nprobe*/) const { return 0; }
  /// Takes that memory for batches of up to `batch` queries.
  virtual void carve(Carver& /*carve*/, int64_t /*batch*/, int64_t /*nprobe*/) {}
  /// prepared (rows x prepared_cols()) from the queries as given, both on the device.
  virtual void prepare(const float* Q, int64_t rows, float* prepared, cudaStream_t s) const = 0;
  /// Fills every slot of the batch's pairs.
  virtual void scan(const IvfScanBatch& batch, cudaStream_t s) = 0;
};

/// How step 4 ranks the best kc candidates of a query.
enum class IvfRerank {
  exact,            // knn's rule: float64 keys of the plan's exact metric against the rows
  l1_column_order,  // the GPU k-NN's l1 value: a float32 sum in column order against the rows
  scan_keys,        // the scan's own keys, mapped to values by `value`
};

/// One search through the driver.
struct IvfDeviceSearch {
  const IvfCore* lists = nullptr;    // the compact lists the device copy mirrors
  const ListArena* given = nullptr;  // the index's own arena (a sparse filter is marked through it)
  const IvfDeviceRanks* ranks = nullptr;
  const float* centroids = nullptr;   // nlist x dim on the device, as the probe compares them
  MatrixView<const float> Q;          // host or device
  int64_t k = 0, nprobe = 0, kc = 0;  // kc <= kIvfMaxCandidates, >= k
  MatrixView<float> values;           // host, Q.rows x k
  MatrixView<int64_t> ids;
  const IdFilter* filter = nullptr;
  IvfRerank rerank = IvfRerank::exact;
  IvfValue value = IvfValue::plain;    // scan_keys only
  MatrixView<float> keys{};            // scan_keys: also the keys themselves (host, Q.rows x k; +inf padded)
  const float* rows_device = nullptr;  // exact / l1: the rows by position on the device, or
  const float* rows_host = nullptr;    //   null and these on the host
  int64_t* short_rows = nullptr;       // += queries padded
  int64_t* candidates = nullptr;       // += rows of the probed lists
  const char* what = "ivf search";     // for errors
};

/// One GPU call (cuda/call.hpp) that a family sizes its device copy in (budget()) and then runs
/// its search through.
class IvfDeviceDriver {
 public:
  explicit IvfDeviceDriver(const Context& ctx);
  /// The call's working memory (resources.hpp's working_budget).
  size_t budget() const noexcept { return budget_; }
  void run(const IvfDeviceSearch& s, IvfListScanner& scanner);

 private:
  Context ctx_;
  Call call_;
  size_t budget_;
};

/// The queries on the host (copied down when they are on the device) for a CPU fallback.
MatrixView<const float> host_queries(const Context& ctx, MatrixView<const float> Q, Matrix<float>& holder);

}  // namespace simkit::detail::cuda
