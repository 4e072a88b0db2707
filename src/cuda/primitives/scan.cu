// Plain scans on the GPU (scan_kernels.cuh, scan_launch.cuh). scan_scratch_bytes covers the
// segmented ones too (segmented_scan.cu).
#include "cuda/primitives/prim_launch.hpp"
#include "cuda/primitives/scan_launch.cuh"

namespace simkit::detail::cuda {

size_t scan_scratch_bytes(Dtype type, ScanOp op, bool segmented, int64_t n) {
  return segmented ? scan_bytes<true>(type, op, n) : scan_bytes<false>(type, op, n);
}

void launch_scan(Dtype type, ScanOp op, const void* in, void* out, int64_t n, bool exclusive, void* scratch,
                 cudaStream_t stream) {
  if (n > 0) scan_any<false>(type, op, in, nullptr, out, n, exclusive, scratch, stream);
}

}  // namespace simkit::detail::cuda
