#pragma once
// A uniform sample of rows without replacement, reproducible from the seed on every platform.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/splitmix.hpp"

namespace simkit::detail {

/// `sample` (<= n) distinct rows of [0, n), ascending: the first `sample` steps of a
/// Fisher-Yates shuffle of 0, ..., n - 1 (one rng.below per step), in O(sample) memory, so that
/// MPI ranks holding slices of the rows can draw the same global rows without n of anything.
std::vector<int64_t> draw_sample_rows(int64_t n, int64_t sample, SplitMix64& rng);

/// The rows draw_sample_rows(X.rows, sample, rng) names, in row order.
Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng);

}  // namespace simkit::detail
