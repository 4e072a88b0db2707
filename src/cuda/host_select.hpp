#pragma once
// Host-side pieces of k-NN on the GPU: exact re-scoring when the base lives in host memory,
// and the selection of the k > 1024 fallback (knn_fallback.cpp). OpenMP over queries.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace simkit::detail::cuda {

/// For each row r < rows: the exact |Q_r - X_id|^2 (sqrt for l2), summed in double, of the
/// candidates ids[r * ids_stride + c], c < kc (INT64_MAX = empty slot, ranked last); sorted by
/// (value, id); the best k written to out_values / out_ids (row stride k). Q and X on the host.
void host_rescore_sort(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t ids_stride, int64_t rows,
                       int64_t kc, int64_t k, bool take_sqrt, float* out_values, int64_t* out_ids);

/// Sorts each row's kc (value, id) pairs ascending by (value, id) and writes the best k.
void host_sort_pairs(const float* values, const int64_t* ids, int64_t rows, int64_t kc, int64_t k, float* out_values,
                     int64_t* out_ids);

/// The best `keep` (value, id) pairs per row over a stream of tiles, by the metric's order
/// (largest first for similarities), ties by the lower id.
class HostTopK {
 public:
  HostTopK(int64_t rows, int64_t keep, bool larger_is_better);
  /// tile[r * ld + j] is the value of row r against id id0 + j, j < cols.
  void add_tile(const float* tile, int64_t ld, int64_t cols, int64_t id0);
  /// Sorts each row's survivors best first (call once, after the last tile).
  void finish();
  const std::vector<std::pair<float, int64_t>>& row(int64_t r) const { return best_[std::size_t(r)]; }

 private:
  // The metric's order on (value, id): the better value first, the lower id among equals.
  bool better(const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) const {
    if (a.first != b.first) return larger_ ? a.first > b.first : a.first < b.first;
    return a.second < b.second;
  }

  int64_t keep_;
  bool larger_;
  std::vector<std::vector<std::pair<float, int64_t>>> best_;
};

}  // namespace simkit::detail::cuda
