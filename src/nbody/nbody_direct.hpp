#pragma once
// The n-body family's direct sum, one searcher per backend beside the family (cpu/, cuda/), and
// what the entry points (nbody.cpp) hand them once the inputs are checked: host copies of the
// targets and sources, outputs wherever the caller has them. A build without CUDA has no GPU
// searcher (gpu_absent.cpp).

#include <cstdint>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

struct NbodyArgs {
  const float* targets = nullptr;  // host, m rows of `target_stride` floats, x y z first
  int64_t m = 0;
  int64_t target_stride = 3;       // 3, or 4 when the targets are the bodies themselves
  const float* sources = nullptr;  // host, n rows of 4 floats: x, y, z, mass
  int64_t n = 0;
  MatrixView<float> accel;     // m x 3, host or device
  ArrayView<float> potential;  // m values or empty, host or device
  double G = 1.0;
  double softening = 0.0;
};

namespace cpu {
/// OpenMP over the targets, SIMD lanes over the sources (cpu/nbody_direct.cpp).
void nbody_direct(const Context& ctx, const NbodyArgs& a);
}  // namespace cpu

namespace cuda {
/// Shared-memory tiles of sources, a target per thread (cuda/nbody_direct.cu).
void nbody_direct(const Context& ctx, const NbodyArgs& a);
}  // namespace cuda

}  // namespace simkit::detail
