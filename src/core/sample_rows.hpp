#pragma once
// A uniform sample of rows without replacement, reproducible from the seed on every platform.

#include <cstdint>

#include <simkit/matrix.hpp>

#include "core/splitmix.hpp"

namespace simkit::detail {

/// `sample` (<= X.rows) distinct rows of host X, in row order.
Matrix<float> draw_sample(MatrixView<const float> X, int64_t sample, SplitMix64& rng);

}  // namespace simkit::detail
