#pragma once
// What the two GPU versions share: the insertion kernel and the run around it -- copy in,
// insertion, the version's merge levels, copy out, timed (gpu_sort.cu) -- so that they differ
// only in the merge levels, the one thing the seed's sections 3.3 and 3.4 compare.

#include <cstdint>

#include "mergesort_study.hpp"

namespace simkit::mergesort::detail {

/// Launches every merge level of one version on the default stream, ping-ponging between
/// `keys` (holding the sorted size_i runs) and `spare`; returns the one that ends up sorted.
using MergeLevels = int32_t* (*)(int32_t* keys, int32_t* spare, int64_t n, int64_t size_i, int block);

/// Launches the insertion kernel: one thread per size_i run (the last one may be short).
void launch_insertion(int32_t* keys, int64_t n, int64_t size_i, int block);

/// Sorts host[0, n) with `merge_levels` after the insertion kernel, as mergesort_study.hpp says.
StudyTiming sort_on_gpu(int32_t* host, int64_t n, int64_t size_i, int block, MergeLevels merge_levels);

}  // namespace simkit::mergesort::detail
