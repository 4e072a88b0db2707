#pragma once
// The GPU peers `simkit bench primitives` times simkit against, run on the same device in the
// same process: CUB (DeviceScan, DeviceMerge, DeviceMergeSort) and cuSPARSE (SpMV), plus the
// few raw CUDA calls the suite needs around them (device fill, copies). Built only with the
// CUDA backend (SIMKIT_CLI_CUDA); gpu_peers.cu.
//
// Each peer is set up once (temporary storage sized and allocated, descriptors made) and
// returned as a callable that runs it once and waits for it, so that it is timed exactly as a
// simkit call is: host clock around a call that returns when its work is done.

#include <cstddef>
#include <cstdint>
#include <functional>

namespace simkit::cli::bench::gpu_peers {

using Run = std::function<void()>;

/// out = inclusive prefix sum of in (n elements), cub::DeviceScan::InclusiveSum.
template <class T>
Run cub_inclusive_sum(const T* in, T* out, int64_t n);

/// out = stable merge of ascending a and b, cub::DeviceMerge::MergeKeys.
Run cub_merge_keys(const int32_t* a, int64_t na, const int32_t* b, int64_t nb, int32_t* out);

/// Stable ascending sort of keys in place (with values when not null), cub::DeviceMergeSort.
Run cub_merge_sort(int32_t* keys, int32_t* values, int64_t n);

/// keys_out = keys_in sorted ascending (values_out the values with them, when not null) by
/// cub::DeviceRadixSort, for reference only: a radix sort is not a comparison sort (it needs
/// the bit layout of its keys), but it is what a user who only sorts int32 would reach for.
Run cub_radix_sort(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out, int64_t n);

/// y = A x with cuSPARSE (CSR, int32 indices, float values, CUSPARSE_SPMV_ALG_DEFAULT).
Run cusparse_spmv(int64_t rows, int64_t cols, int64_t nnz, const int32_t* offsets, const int32_t* indices,
                  const float* values, const float* x, float* y);

/// Fills device memory with uniform floats in (0, 1] (cuRAND's Philox generator).
void fill_uniform(float* device, int64_t n, uint64_t seed);

/// Plain copies; each returns when its copy is complete.
void to_device(void* device, const void* host, size_t bytes);
void to_host(void* host, const void* device, size_t bytes);
void device_copy(void* to, const void* from, size_t bytes);

}  // namespace simkit::cli::bench::gpu_peers
