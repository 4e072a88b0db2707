#pragma once
// The 3-D Morton code both n-body trees sort their bodies by (cpu/octree.cpp, cuda/radix_tree.cu):
// 21 bits per axis of a cell index, interleaved x in bit 3k + 2, y in 3k + 1, z in 3k, so that
// sorting by the code walks the octree's cells depth first.

#include <cstdint>

#include "core/hd.hpp"

namespace simkit::detail::nbody {

/// The low 21 bits of v moved to every third bit: bit k to bit 3k.
SIMKIT_HD uint64_t spread_bits(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

/// The code of cell (x, y, z), each below 2^21.
SIMKIT_HD uint64_t morton_code(uint64_t x, uint64_t y, uint64_t z) {
  return spread_bits(x) << 2 | spread_bits(y) << 1 | spread_bits(z);
}

}  // namespace simkit::detail::nbody
