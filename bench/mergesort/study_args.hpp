#pragma once
// The argument checks every version of the study shares (mergesort_study.hpp lists the errors).

#include <cstdint>

namespace simkit::mergesort::detail {

/// n >= 0, size_i >= 1, and keys present when n > 0; Error(invalid_argument) otherwise.
void check_sort_args(const int32_t* keys, int64_t n, int64_t size_i);

/// Blocks of `block` threads that cover `threads` threads: block within [1, 1024] (CUDA's limit)
/// and a grid that fits gridDim.x; Error(invalid_argument) otherwise.
unsigned blocks_for(int64_t threads, int block);

}  // namespace simkit::mergesort::detail
