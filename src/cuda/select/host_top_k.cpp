#include "cuda/select/host_top_k.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace simkit::detail::cuda {

using Pair = std::pair<float, int64_t>;

HostTopK::HostTopK(int64_t rows, int64_t keep, bool larger_is_better)
    : keep_(keep), larger_(larger_is_better), best_(size_t(rows)) {}

void HostTopK::add_tile(const float* tile, int64_t ld, int64_t cols, int64_t id0) {
  auto better = [this](const Pair& a, const Pair& b) { return this->better(a, b); };
  const int64_t rows = int64_t(best_.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < rows; ++r) {
    auto& v = best_[size_t(r)];
    const float* t = tile + r * ld;
    for (int64_t j = 0; j < cols; ++j) v.emplace_back(t[j], id0 + j);
    // Keep the list near `keep` so that memory stays O(rows * (keep + cols)).
    if (int64_t(v.size()) > keep_) {
      std::nth_element(v.begin(), v.begin() + keep_, v.end(), better);
      v.resize(size_t(keep_));
    }
  }
}

void HostTopK::finish() {
  auto better = [this](const Pair& a, const Pair& b) { return this->better(a, b); };
  const int64_t rows = int64_t(best_.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < rows; ++r) std::sort(best_[size_t(r)].begin(), best_[size_t(r)].end(), better);
}

}  // namespace simkit::detail::cuda
