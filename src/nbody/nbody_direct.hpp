#pragma once
// The n-body family's direct sum, one searcher per backend beside the family (cpu/, cuda/), and
// what the entry points (nbody.cpp) hand them once the inputs are checked: the targets and
// sources and the outputs wherever the caller has them (the CPU's all on the host). A build without CUDA has no GPU
// searcher (gpu_absent.cpp).

#include <cstdint>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

struct NbodyArgs {
  const float* targets = nullptr;  // m rows of `target_stride` floats, x y z first
  Memory targets_where = Memory::host;
  int64_t m = 0;
  int64_t target_stride = 3;       // 3, or 4 when the targets are the bodies themselves
  const float* sources = nullptr;  // n rows of 4 floats: x, y, z, mass
  Memory sources_where = Memory::host;
  int64_t n = 0;
  MatrixView<float> accel;     // m x 3, host or device
  ArrayView<float> potential;  // m values or empty, host or device
  double G = 1.0;
  double softening = 0.0;
};

namespace cpu {
/// OpenMP over blocks of 64 targets, AVX2 lanes over tiles of 1,024 sources (cpu/nbody_direct.cpp).
void nbody_direct(const Context& ctx, const NbodyArgs& a);
}  // namespace cpu

namespace cuda {
/// Shared-memory tiles of sources, a target per thread (cuda/nbody_direct.cu).
void nbody_direct(const Context& ctx, const NbodyArgs& a);
/// The first of `count` rows of `cols` device floats holding a non-finite value, or (with
/// `masses`) a negative fourth column, as row * cols + column; -1 when every value is fine
/// (cuda/nbody_inputs.cu).
int64_t first_invalid_value(const Context& ctx, const float* rows, int64_t count, int64_t cols, bool masses);
}  // namespace cuda

}  // namespace simkit::detail
