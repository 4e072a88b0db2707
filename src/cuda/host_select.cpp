#include "host_select.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace simkit::detail::cuda {

namespace {

using Pair = std::pair<float, int64_t>;

// Ascending (value, id): std::pair's own order.
void write_best(std::vector<Pair>& v, int64_t k, float* out_values, int64_t* out_ids) {
  std::sort(v.begin(), v.end());
  for (int64_t c = 0; c < k; ++c) {
    out_values[c] = v[size_t(c)].first;
    out_ids[c] = v[size_t(c)].second;
  }
}

}  // namespace

void host_rescore_sort(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t ids_stride, int64_t rows,
                       int64_t kc, int64_t k, bool take_sqrt, float* out_values, int64_t* out_ids) {
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Pair> v(static_cast<size_t>(kc));
    const float* q = Q + r * d;
    for (int64_t c = 0; c < kc; ++c) {
      const int64_t id = ids[r * ids_stride + c];
      if (id == std::numeric_limits<int64_t>::max()) {
        v[size_t(c)] = {std::numeric_limits<float>::infinity(), id};
        continue;
      }
      const float* x = X + id * d;
      double acc = 0;
      for (int64_t t = 0; t < d; ++t) {
        const double diff = double(q[t]) - double(x[t]);
        acc += diff * diff;
      }
      v[size_t(c)] = {float(take_sqrt ? std::sqrt(acc) : acc), id};
    }
    write_best(v, k, out_values + r * k, out_ids + r * k);
  }
}

void host_sort_pairs(const float* values, const int64_t* ids, int64_t rows, int64_t kc, int64_t k, float* out_values,
                     int64_t* out_ids) {
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Pair> v(static_cast<size_t>(kc));
    for (int64_t c = 0; c < kc; ++c) v[size_t(c)] = {values[r * kc + c], ids[r * kc + c]};
    write_best(v, k, out_values + r * k, out_ids + r * k);
  }
}

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
