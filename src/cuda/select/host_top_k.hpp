#pragma once
// The host-side selection of the k > 1024 fallback of k-NN on the GPU (knn_fallback.cpp):
// the device computes the tiles, the host keeps each row's best. OpenMP over rows.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace simkit::detail::cuda {

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
