#include "core/sample_rows.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace simkit::detail {

std::vector<int64_t> sample_indices(int64_t n, int64_t sample, SplitMix64& rng) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = 0; i < sample; ++i) std::swap(order[size_t(i)], order[size_t(i + rng.below(n - i))]);
  order.resize(static_cast<size_t>(sample));
  std::sort(order.begin(), order.end());
  return order;
}

Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng) {
  const int64_t d = X.cols;
  const std::vector<int64_t> rows = sample_indices(X.rows, sample, rng);
  Matrix<float> out(sample, d);
  for (int64_t i = 0; i < sample; ++i) std::copy_n(X.row(rows[size_t(i)]), d, out.data() + i * d);
  return out;
}

}  // namespace simkit::detail
