// The frame both GPU versions run in, timed the way the seed reports them (section 3.6.2):
// "T. Kernels" from CUDA events around the insertion kernel and the merge levels, and the time
// with the host<->device copies -- the price the seed insists on paying when comparing against
// the CPU -- from the host clock around copy in, kernels and copy out.

#include <chrono>

#include "cuda_check.cuh"
#include "gpu_sort.cuh"
#include "run_ops.hpp"
#include "study_args.hpp"

namespace simkit::mergesort::detail {
namespace {

/// The seed's first kernel: thread r sorts run r in global memory, where the merges will read it.
__global__ void insertion_kernel(int32_t* keys, int64_t n, int64_t size_i) {
  const int64_t run = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t begin = run * size_i;
  if (begin >= n) return;
  insertion_sort(keys + begin, size_i < n - begin ? size_i : n - begin);
}

}  // namespace

void launch_insertion(int32_t* keys, int64_t n, int64_t size_i, int block) {
  const int64_t runs = (n + size_i - 1) / size_i;
  insertion_kernel<<<blocks_for(runs, block), block>>>(keys, n, size_i);
  check_launch("insertion_kernel");
}

StudyTiming sort_on_gpu(int32_t* host, int64_t n, int64_t size_i, int block, MergeLevels merge_levels) {
  check_sort_args(host, n, size_i);
  (void)blocks_for((n + size_i - 1) / size_i, block);  // the widest launch of both versions, checked up front
  if (n == 0) return {};
  const size_t bytes = size_t(n) * sizeof(int32_t);
  // Allocation (and the context's creation, on a first call) stay outside every timer.
  DeviceKeys keys(n), spare(n);
  Event start, after_insertion, stop;
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  const auto t0 = std::chrono::steady_clock::now();
  check_cuda(cudaMemcpy(keys.get(), host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  start.record();
  launch_insertion(keys.get(), n, size_i, block);
  after_insertion.record();
  const int32_t* sorted = merge_levels(keys.get(), spare.get(), n, size_i, block);
  stop.record();
  check_cuda(cudaMemcpy(host, sorted, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  const auto t1 = std::chrono::steady_clock::now();

  StudyTiming timing;
  timing.total_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  timing.insertion_ms = after_insertion.since(start);
  timing.merge_ms = stop.since(after_insertion);
  timing.kernel_ms = stop.since(start);
  return timing;
}

}  // namespace simkit::mergesort::detail
