#pragma once
// The Morton code of a row in d <= 8 dimensions, shared by the point tree's CPU build
// (point_tree.cpp) and its GPU build (cuda/device_tree.cu), so that both order rows and queries
// alike: 63 / d bits per axis (at most 31), taken from the top, axis 0 the most significant at
// each level; each coordinate is scaled into [0, 2^bits) across the box and clamped to it.

#include <cmath>
#include <cstdint>

#include "core/hd.hpp"

namespace simkit::detail::spatial {

SIMKIT_HD int morton_bits(int64_t d) { return 63 / d < 31 ? int(63 / d) : 31; }

/// The scale of axis c: 2^bits / (hi - lo), or 0 for a flat axis (every cell 0).
SIMKIT_HD double morton_scale(float lo, float hi, int bits) {
  const double extent = double(hi) - double(lo);
  return extent > 0 ? ldexp(1.0, bits) / extent : 0.0;
}

SIMKIT_HD int64_t morton_code(const float* row, int64_t d, const float* lo, const double* scale, int bits) {
  uint64_t cell[8];
  const double top = ldexp(1.0, bits) - 1;
  for (int64_t c = 0; c < d; ++c) {
    const double v = (double(row[c]) - double(lo[c])) * scale[c];
    cell[c] = uint64_t(v < 0 ? 0.0 : (v > top ? top : v));
  }
  uint64_t code = 0;
  for (int b = bits - 1; b >= 0; --b)
    for (int64_t c = 0; c < d; ++c) code = code << 1 | ((cell[c] >> b) & 1u);
  return int64_t(code);
}

}  // namespace simkit::detail::spatial
