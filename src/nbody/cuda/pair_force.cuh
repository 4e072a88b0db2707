#pragma once
// One source's pull on one target, as both GPU sums evaluate it (the direct tiles and the
// Barnes-Hut lists): float32, a single rsqrt per pair.
//
// The rsqrt is the hardware's approximation with denormals flushed (rsqrt.approx.ftz.f32, 2 ulp):
// without .ftz, rsqrtf() also guards against denormal arguments, several more instructions in a
// loop of a dozen. A squared distance below FLT_MIN (points closer than ~1e-19) therefore counts
// as distance zero, and such a pair, like a coincident one, adds nothing.

#include <cfloat>

namespace simkit::detail::cuda {

__device__ __forceinline__ float rsqrt_ftz(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// Adds the pull of source s (x, y, z, mass) on the target at (x, y, z) to (ax, ay, az) and,
/// with kPotential, s.w / r to p. kGuard: the pair may be at distance zero (no softening, or the
/// potential wanted: a body's own m / eps), which costs a select; softened accelerations alone
/// need none (the offset is 0, so is the term).
template <bool kGuard, bool kPotential>
__device__ __forceinline__ void add_pull(float4 s, float x, float y, float z, float eps2, float& ax, float& ay,
                                         float& az, float& p) {
  const float dx = s.x - x, dy = s.y - y, dz = s.z - z;
  float inv;
  if constexpr (kGuard) {
    const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
    inv = r2 >= FLT_MIN ? rsqrt_ftz(r2 + eps2) : 0.f;
  } else {
    inv = rsqrt_ftz(fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2))));
  }
  const float w = s.w * inv, w3 = w * inv * inv;
  ax = fmaf(w3, dx, ax), ay = fmaf(w3, dy, ay), az = fmaf(w3, dz, az);
  if constexpr (kPotential) p += w;
}

}  // namespace simkit::detail::cuda
