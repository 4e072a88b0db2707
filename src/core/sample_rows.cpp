#include "core/sample_rows.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace simkit::detail {

Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng) {
  const int64_t n = X.rows, d = X.cols;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = 0; i < sample; ++i) std::swap(order[size_t(i)], order[size_t(i + rng.below(n - i))]);
  std::sort(order.begin(), order.begin() + sample);
  Matrix<float> out(sample, d);
  for (int64_t i = 0; i < sample; ++i) std::copy_n(X.row(order[size_t(i)]), d, out.data() + i * d);
  return out;
}

}  // namespace simkit::detail
