// Segmented scans on the GPU: the scan kernel over (value, head) pairs (scan_kernels.cuh), and
// the conversion of segment offsets into head flags, which also checks the offsets.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/primitives/prim_launch.hpp"
#include "cuda/primitives/scan_launch.cuh"

namespace simkit::detail::cuda {

namespace {

template <class I>
__global__ void heads_from_offsets(const I* off, int64_t segments, int64_t n, uint8_t* heads, int* error) {
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s <= segments;
       s += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = off[s];
    bool bad = o < 0 || o > n || (s == 0 && o != 0) || (s == segments && o != n);
    if (s < segments) {
      bad = bad || int64_t(off[s + 1]) < o;
      if (o >= 0 && o < n) heads[o] = 1;  // repeated offsets (empty segments) write the same 1
    }
    if (bad) atomicOr(error, 1);
  }
}

}  // namespace

void launch_segmented_scan(Dtype type, ScanOp op, const void* in, const uint8_t* heads, void* out, int64_t n,
                           bool exclusive, void* scratch, cudaStream_t stream) {
  if (n > 0) scan_any<true>(type, op, in, heads, out, n, exclusive, scratch, stream);
}

void launch_heads_from_offsets(Dtype offsets_type, const void* offsets, int64_t segments, int64_t n, uint8_t* heads,
                               int* error, cudaStream_t stream) {
  if (n > 0) check_cuda(cudaMemsetAsync(heads, 0, size_t(n), stream), "cudaMemsetAsync");
  const int64_t want = (segments + 1 + 255) / 256;
  const unsigned grid = unsigned(want < 4096 ? want : 4096);
  if (offsets_type == Dtype::i32)
    heads_from_offsets<<<grid, 256, 0, stream>>>(static_cast<const int32_t*>(offsets), segments, n, heads, error);
  else
    heads_from_offsets<<<grid, 256, 0, stream>>>(static_cast<const int64_t*>(offsets), segments, n, heads, error);
  check_launch("heads_from_offsets");
}

}  // namespace simkit::detail::cuda
