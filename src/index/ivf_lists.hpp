#pragma once
// What an ivf_flat index stores, in the form both backends scan (core/backend.hpp,
// Backend::ivf_search). The index (index/ivf_flat_index.cpp) owns it and changes it only under
// its exclusive lock; a search reads it under the shared lock.
//
// Layout: the rows of list l are rows offsets[l] .. offsets[l + 1] of `vectors`, one contiguous
// row-major block per list, so the CPU scans a list with one sgemm per tile of it and the GPU
// uploads the whole array once. The rows are kept as given, not normalised: the final float64
// re-score then sees exactly what simkit::knn sees, which is what makes nprobe = nlist return
// the flat result bit for bit. The per-row norms the scan's epilogue needs (cosine: 1/|x|,
// pearson: the mean and 1/|x - mean|, l2: |x|^2) are computed once at add time instead.
//
// Within a list the rows are in id order. The scan keeps a list's best candidates by (float key,
// row), which among equal keys is then (key, id); the merge across lists ranks by (key, id)
// outright. So where more rows tie than candidates are kept, the lower ids win, as in knn.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"
#include "cpu/dot_family.hpp"

namespace simkit::detail {

/// Whatever a GPU backend keeps resident for one IvfLists (cuda/ivf/); dropped on any change.
class IvfDeviceLists {
 public:
  virtual ~IvfDeviceLists() = default;
};

struct IvfLists {
  int64_t dim = 0;
  int64_t nlist = 0;
  MetricPlan plan;                      // the index's metric
  Metric coarse = Metric::sqeuclidean;  // how queries and added rows are compared with centroids
  std::vector<float> centroids;         // nlist x dim
  std::vector<int64_t> offsets;         // nlist + 1
  std::vector<float> vectors;           // size() x dim, list after list
  std::vector<int64_t> ids;             // the user id of each row
  cpu::RowStats stats;                  // per row, what plan's epilogue needs (cpu/dot_family.hpp)

  int64_t size() const noexcept { return offsets.empty() ? 0 : offsets.back(); }
  MatrixView<const float> rows() const noexcept { return {vectors.data(), size(), dim}; }
  MatrixView<const float> centroid_rows() const noexcept { return {centroids.data(), nlist, dim}; }

  /// The device copy, made by the CUDA backend on first use and reset by every change.
  mutable std::mutex device_mutex;
  mutable std::shared_ptr<IvfDeviceLists> device;
};

}  // namespace simkit::detail
