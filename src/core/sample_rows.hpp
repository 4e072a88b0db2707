#pragma once
// A uniform sample of rows without replacement, reproducible from the seed on every platform.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/splitmix.hpp"

namespace simkit::detail {

/// `sample` (<= n) distinct row numbers of n rows, ascending: the rows draw_sample copies, for a
/// caller that holds the rows elsewhere (a sharded index gathers them from the ranks that own them).
std::vector<int64_t> sample_indices(int64_t n, int64_t sample, SplitMix64& rng);

/// `sample` (<= X.rows) distinct rows of host X, in row order: those of sample_indices(X.rows).
Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng);

}  // namespace simkit::detail
