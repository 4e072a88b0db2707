#include "core/sample_rows.hpp"

#include <algorithm>
#include <unordered_map>

namespace simkit::detail {

std::vector<int64_t> draw_sample_rows(int64_t n, int64_t sample, SplitMix64& rng) {
  // The shuffle's array is the identity except where a swap has touched it: only those
  // positions are stored. Step i swaps positions i and j >= i and never reads position i again.
  std::unordered_map<int64_t, int64_t> moved;
  moved.reserve(static_cast<size_t>(2 * sample));
  const auto at = [&](int64_t i) {
    const auto it = moved.find(i);
    return it == moved.end() ? i : it->second;
  };
  std::vector<int64_t> rows(static_cast<size_t>(sample));
  for (int64_t i = 0; i < sample; ++i) {
    const int64_t j = i + rng.below(n - i);
    const int64_t vi = at(i), vj = at(j);
    moved[j] = vi;
    rows[size_t(i)] = vj;
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng) {
  const std::vector<int64_t> rows = draw_sample_rows(X.rows, sample, rng);
  Matrix<float> out(sample, X.cols);
  for (int64_t i = 0; i < sample; ++i) std::copy_n(X.row(rows[size_t(i)]), X.cols, out.data() + i * X.cols);
  return out;
}

}  // namespace simkit::detail
