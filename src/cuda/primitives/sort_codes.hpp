#pragma once
// Sorting 64-bit codes with 32-bit row indices as values on a call's stream, through simkit's sort
// route (CUB's radix sort, or simkit's own merge sort under SIMKIT_PRIMITIVES_OWN): the Morton
// orders of the n-body radix tree and of the point tree. Both sorts are stable, so equal codes
// keep their rows' order.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

/// Device bytes sort_codes carves for n pairs.
size_t sort_codes_bytes(int64_t n);

/// Sorts codes[0, n) ascending, moving index[] with them; scratch from `carve`.
void sort_codes(int64_t* codes, int* index, int64_t n, Carver& carve, cudaStream_t stream);

}  // namespace simkit::detail::cuda
