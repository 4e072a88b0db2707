#include "index/ivf/cuda/filter_mask.hpp"

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "index/ivf/cuda/ivf_driver_kernels.hpp"

namespace simkit::detail::cuda {

DeviceFilterMask::DeviceFilterMask(const IdFilter* filter, const ListArena& arena, const int64_t* uid_of_rank,
                                   const int64_t* rank_of_pos, int64_t n, cudaStream_t s)
    : stream_(s) {
  if (!filter) return;
  const size_t words = size_t(std::max<int64_t>(1, (n + 63) / 64)) * 2;  // 32-bit words, whole 64-bit ones
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&mask_), words * 4, s), "cudaMallocAsync");
  const std::vector<uint64_t>& dense = filter->bitmap();
  if (!dense.empty()) {
    check_cuda(cudaMallocAsync(&bitmap_, dense.size() * 8, s), "cudaMallocAsync");
    check_cuda(cudaMemcpyAsync(bitmap_, dense.data(), dense.size() * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    ivf_mark_allowed(uid_of_rank, rank_of_pos, n, static_cast<const uint64_t*>(bitmap_), filter->limit(), mask_, s);
    return;
  }
  const std::vector<uint64_t> host = arena.mask(*filter, /*compact=*/true);
  check_cuda(cudaMemsetAsync(mask_, 0, words * 4, s), "cudaMemsetAsync");
  check_cuda(cudaMemcpyAsync(mask_, host.data(), host.size() * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");  // `host` goes out of scope
}

DeviceFilterMask::~DeviceFilterMask() {
  if (mask_) cudaFreeAsync(mask_, stream_);
  if (bitmap_) cudaFreeAsync(bitmap_, stream_);
}

}  // namespace simkit::detail::cuda
