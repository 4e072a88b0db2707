#pragma once
// The merge sort study of issue 32 (seed 003, "Ordenación por fusión paralela: MergePath"):
// the seed's hybrid merge sort of int32 keys -- insertion sort of runs of `size_i` keys, then
// levels of pairwise merges -- in the three versions it times, kept here with the benchmarks and
// never on the library's production path (simkit::sort in <simkit/primitives.hpp> is that):
//   hybrid_sort_sequential  the CPU version (its section 2.2, `multisort`)
//   naive_merge_sort_cuda   insertion kernel + one thread per pair of runs per level (section 3.3)
//   merge_path_sort_cuda    insertion kernel + Merge Path: every thread merges an equal slice of
//                           every level, found by a binary search on a cross diagonal (3.4)
//
// The seed assumes n and size_i are powers of two; these take any n >= 0 and size_i >= 1. The
// runs are laid out as the seed's tree lays them out -- run r covers [r * size_i, (r+1) * size_i),
// a level of width w merges [2pw, 2pw + w) with [2pw + w, 2pw + 2w) -- and the last run of every
// level is simply shorter (or has no partner, and passes through) when n is not a multiple.
//
// All three sort ascending, in place, and are stable (never observable on bare keys, but it keeps
// the merges equal to the seed's `<=` rule). Errors are simkit::Error: invalid_argument for
// n < 0, size_i < 1, a null pointer with n > 0, a block outside [1, 1024] or a launch whose grid
// would not fit; device / out_of_memory for a failed CUDA call (its message); unsupported for the
// CUDA versions in a build without CUDA.

#include <cstdint>

namespace simkit::mergesort {

/// Sorts v[0, n): insertion sort of every size_i run, then the merges, recursively as the seed's
/// `multisort` does (left half, right half, merge through a scratch buffer of n keys).
void hybrid_sort_sequential(int32_t* v, int64_t n, int64_t size_i);

/// Where a GPU version's time went, in milliseconds.
struct StudyTiming {
  double kernel_ms = 0;     // insertion + every merge level, by CUDA events (the seed's "T. Kernels")
  double total_ms = 0;      // host clock: copy in, the kernels, copy out (no allocation, no warm-up)
  double insertion_ms = 0;  // the insertion kernel alone
  double merge_ms = 0;      // the merge levels alone
};

/// Sorts host[0, n) on the current CUDA device: copy in, the insertion kernel (one thread per run),
/// then one launch per level, each thread merging one pair of runs into the other buffer of a
/// ping-pong pair, so fewer threads work at every level; copy out. `block` = threads per block.
StudyTiming naive_merge_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block);

/// As naive_merge_sort_cuda, but every level runs ceil(n / size_i) threads -- as many as the
/// insertion kernel -- each writing size_i consecutive keys of the level's output, so every
/// thread does the same work at every level; a thread finds where its slice starts in the two
/// runs it reads by a binary search on the cross diagonal of the merge matrix.
StudyTiming merge_path_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block);

}  // namespace simkit::mergesort
