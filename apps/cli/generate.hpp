#pragma once
// Synthetic point sets for `simkit gen` and the benchmarks. Rows are generated independently
// from (seed, row) so the result is the same whatever the thread count.

#include <cstdint>

#include <simkit/matrix.hpp>

namespace simkit::cli {

enum class Distribution {
  uniform,    // each coordinate uniform in [-1, 1)
  gaussian,   // each coordinate standard normal
  clustered,  // `clusters` uniform centres in [-1, 1)^d, each row = a centre + N(0, std^2) noise
};

struct GenSpec {
  int64_t rows = 0;
  int64_t dim = 0;
  Distribution distribution = Distribution::uniform;
  int64_t clusters = 16;
  float std = 0.1f;
  bool normalize = false;  // scale every row to unit L2 norm (zero rows stay zero)
  uint64_t seed = 0;
};

/// Throws simkit::Error(invalid_argument) for rows/dim < 1, clusters < 1, std < 0.
Matrix<float> generate(const GenSpec& spec);

}  // namespace simkit::cli
