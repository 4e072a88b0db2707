#pragma once
// Host entry points of the primitives' kernels, element types erased (Dtype) so that the
// dispatch code (primitives.cpp) needs no templates and each .cu file instantiates its own.
// Pointers are device pointers; scratch comes from the caller (the leased arena), sized by the
// matching *_scratch_bytes. Everything is queued on `stream`; nothing synchronises.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <simkit/primitives.hpp>

#include "core/raw_array.hpp"

namespace simkit::detail::cuda {

// scan.cu, segmented_scan.cu
size_t scan_scratch_bytes(Dtype type, ScanOp op, bool segmented, int64_t n);
void launch_scan(Dtype type, ScanOp op, const void* in, void* out, int64_t n, bool exclusive, void* scratch,
                 cudaStream_t stream);
void launch_segmented_scan(Dtype type, ScanOp op, const void* in, const uint8_t* heads, void* out, int64_t n,
                           bool exclusive, void* scratch, cudaStream_t stream);
/// heads (n bytes, zeroed here) from offsets (segments + 1 entries); sets bit 1 of *error when
/// the offsets do not rise from 0 to n.
void launch_heads_from_offsets(Dtype offsets_type, const void* offsets, int64_t segments, int64_t n, uint8_t* heads,
                               int* error, cudaStream_t stream);

// merge.cu, merge_sort.cu. value_bytes: 0 (keys only), 4 or 8.
size_t merge_scratch_bytes(Dtype key, int64_t n);
void launch_merge(Dtype key, size_t value_bytes, Order order, const void* a, const void* a_values, int64_t na,
                  const void* b, const void* b_values, int64_t nb, void* out, void* out_values, void* scratch,
                  cudaStream_t stream);
size_t sort_scratch_bytes(Dtype key, size_t value_bytes, int64_t n);
void launch_sort(Dtype key, size_t value_bytes, Order order, void* keys, void* values, int64_t n, void* scratch,
                 cudaStream_t stream);

// spmv.cu. Sets bit 1 of *error for a column index out of range, bit 2 for offsets that do not
// rise from 0 to nnz.
size_t spmv_scratch_bytes(int64_t rows, int64_t nnz);
void launch_spmv(Dtype value, Dtype index, const void* offsets, const void* indices, const void* values, const void* x,
                 void* y, int64_t rows, int64_t cols, int64_t nnz, void* scratch, int* error, cudaStream_t stream);

}  // namespace simkit::detail::cuda
