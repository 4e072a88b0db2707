// The seed's second merge (section 3.4, its cudaPathMerge, after Green, McColl and Bader's "GPU
// Merge Path"): every level runs as many threads as the insertion kernel did, each writing
// size_i consecutive keys of the level's output, so no thread idles and none does more work as
// the runs grow. The seed ties the slice to size_i, which is why its best size_i (2) is also
// its most parallel one (section 3.4.4); this keeps that tie.

#include <utility>

#include "cuda_check.cuh"
#include "gpu_sort.cuh"
#include "run_ops.hpp"
#include "study_args.hpp"

namespace simkit::mergesort {
namespace {

/// Thread t writes dst[t slice, (t + 1) slice). The slice divides 2 width (both are size_i times
/// a power of two), so it never straddles two pairs of runs; the thread finds where its first key
/// comes from by a binary search on its diagonal of the pair's merge matrix, then merges forward.
__global__ void merge_path_level(const int32_t* src, int32_t* dst, int64_t n, int64_t width, int64_t slice) {
  const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * slice;
  if (first >= n) return;
  const detail::RunPair p = detail::pair_around(first, width, n);
  const int32_t *a = src + p.base, *b = src + p.mid;
  const int64_t na = p.mid - p.base, nb = p.end - p.mid, diag = first - p.base;
  const int64_t i = detail::path_crossing(a, na, b, nb, diag);
  const int64_t count = slice < p.end - first ? slice : p.end - first;
  detail::merge_steps(a, na, b, nb, i, diag - i, dst + first, count);
}

/// One launch per level, the kernel boundary again the barrier between levels.
int32_t* merge_path_levels(int32_t* keys, int32_t* spare, int64_t n, int64_t size_i, int block) {
  const unsigned blocks = detail::blocks_for((n + size_i - 1) / size_i, block);
  for (int64_t width = size_i; width < n; width *= 2) {
    merge_path_level<<<blocks, block>>>(keys, spare, n, width, size_i);
    detail::check_launch("merge_path_level");
    std::swap(keys, spare);
  }
  return keys;
}

}  // namespace

StudyTiming merge_path_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block) {
  return detail::sort_on_gpu(host, n, size_i, block, merge_path_levels);
}

}  // namespace simkit::mergesort
