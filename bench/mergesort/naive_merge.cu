// The seed's first merge (section 3.3, its cudaFirstMerge): the bottom-up tree of a reduction
// applied to merging. Level by level the runs double and one thread merges one pair of them, so
// each level has half the threads of the one before, each doing twice the work -- the loss of
// parallelism the seed blames for this version losing to the sequential one.

#include <utility>

#include "cuda_check.cuh"
#include "gpu_sort.cuh"
#include "run_ops.hpp"
#include "study_args.hpp"

namespace simkit::mergesort {
namespace {

/// Thread p merges the pair of runs of width `width` starting at 2 p width, from src into dst.
/// The seed merges in place through an aux array; writing to the other buffer of a ping-pong pair
/// instead saves the copy back and keeps the memory traffic equal to merge_path.cu's, so the
/// two versions differ only in how the work is split. A last run without a partner is copied.
__global__ void naive_merge_level(const int32_t* src, int32_t* dst, int64_t n, int64_t width) {
  const int64_t pair = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t base = pair * 2 * width;
  if (base >= n) return;
  const detail::RunPair p = detail::pair_around(base, width, n);
  detail::merge_steps(src + p.base, p.mid - p.base, src + p.mid, p.end - p.mid, 0, 0, dst + p.base, p.end - p.base);
}

/// One launch per level, as the seed does: the kernel boundary is the barrier that keeps a level
/// from reading runs the previous one has not finished.
int32_t* naive_levels(int32_t* keys, int32_t* spare, int64_t n, int64_t size_i, int block) {
  for (int64_t width = size_i; width < n; width *= 2) {
    const int64_t pairs = (n + 2 * width - 1) / (2 * width);
    naive_merge_level<<<detail::blocks_for(pairs, block), block>>>(keys, spare, n, width);
    detail::check_launch("naive_merge_level");
    std::swap(keys, spare);
  }
  return keys;
}

}  // namespace

StudyTiming naive_merge_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block) {
  return detail::sort_on_gpu(host, n, size_i, block, naive_levels);
}

}  // namespace simkit::mergesort
