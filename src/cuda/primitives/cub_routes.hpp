#pragma once
// The calls of the primitives that CUB serves instead of simkit's own kernels, because CUB was
// measured faster on them and the result is the same (bench/results/2026-11-23-h100-primitives.md):
//
//   scan   int32 / int64, every operator, not segmented: CUB DeviceScan (decoupled look-back).
//          Integer results do not depend on grouping, so they are the same bits.
//   merge  int32 / int64 keys without values: CUB DeviceMerge. CUB's merge is not stable, but
//          equal integer keys cannot be told apart; with values, simkit's stable merge runs.
//   sort   int32 / int64 keys (with or without values): CUB DeviceRadixSort, which is stable;
//          float keys: CUB DeviceMergeSort with simkit's key order (NaNs last, -0.0 == +0.0),
//          which a radix sort cannot express.
//
// Float scans (deterministic two-pass), segmented scans, float and key-value merges, SpMV and
// select_k keep simkit's kernels. SIMKIT_PRIMITIVES_OWN=1 in the environment turns every route
// off (the tests run both ways; the benchmark times both). Pointers are device pointers; temp
// is scratch from the caller's arena, sized by the matching *_bytes call.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <simkit/primitives.hpp>

#include "core/raw_array.hpp"

namespace simkit::detail::cuda::cub_route {

/// False when SIMKIT_PRIMITIVES_OWN is set to anything but "0" (read at every call).
bool enabled();

bool serves_scan(Dtype type, ScanOp op, bool segmented);
size_t scan_bytes(Dtype type, ScanOp op, int64_t n, bool exclusive);
void scan(Dtype type, ScanOp op, const void* in, void* out, int64_t n, bool exclusive, void* temp, size_t temp_bytes,
          cudaStream_t stream);

bool serves_merge(Dtype key, size_t value_bytes);
size_t merge_bytes(Dtype key, Order order, int64_t na, int64_t nb);
void merge(Dtype key, Order order, const void* a, int64_t na, const void* b, int64_t nb, void* out, void* temp,
           size_t temp_bytes, cudaStream_t stream);

bool serves_sort(Dtype key, size_t value_bytes);
/// Includes, for the radix sort, a second buffer of n keys and n values.
size_t sort_bytes(Dtype key, size_t value_bytes, Order order, int64_t n);
void sort(Dtype key, size_t value_bytes, Order order, void* keys, void* values, int64_t n, void* temp,
          size_t temp_bytes, cudaStream_t stream);

}  // namespace simkit::detail::cuda::cub_route
