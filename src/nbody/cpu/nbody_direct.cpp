// The direct sum on the CPU: the sources transposed once into x, y, z, mass arrays, then per
// target (OpenMP, static blocks) one pass over them that the compiler vectorises (AVX2: eight
// sources per instruction, the square root and the division in vector form too). The lanes keep
// eight partial sums, which also shortens each float32 accumulation chain eightfold.

#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cpu {

void nbody_direct(const Context& ctx, const NbodyArgs& a) {
  const int64_t n = a.n, m = a.m;
  const size_t count = static_cast<size_t>(n);
  std::vector<float> sx(count), sy(count), sz(count), sm(count);
  for (int64_t j = 0; j < n; ++j) {
    const float* s = a.sources + j * 4;
    sx[size_t(j)] = s[0], sy[size_t(j)] = s[1], sz[size_t(j)] = s[2], sm[size_t(j)] = s[3];
  }
  const float eps2 = float(a.softening * a.softening), G = float(a.G);
  const float *X = sx.data(), *Y = sy.data(), *Z = sz.data(), *M = sm.data();
  float* acc = a.accel.data;
  float* phi = a.potential.data;
  const int threads = cpu_threads(ctx);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < m; ++i) {
    const float* t = a.targets + i * a.target_stride;
    const float x = t[0], y = t[1], z = t[2];
    float ax = 0, ay = 0, az = 0, p = 0;
#pragma omp simd reduction(+ : ax, ay, az, p)
    for (int64_t j = 0; j < n; ++j) {
      const float dx = X[j] - x, dy = Y[j] - y, dz = Z[j] - z;
      const float d2 = dx * dx + dy * dy + dz * dz;
      // A pair at distance zero (the body itself) contributes nothing (nbody.hpp).
      const float inv = d2 > 0.f ? 1.f / std::sqrt(d2 + eps2) : 0.f;
      const float w = M[j] * inv;
      const float w3 = w * inv * inv;
      ax += w3 * dx, ay += w3 * dy, az += w3 * dz;
      p += w;
    }
    acc[i * 3 + 0] = G * ax, acc[i * 3 + 1] = G * ay, acc[i * 3 + 2] = G * az;
    if (phi) phi[i] = -G * p;
  }
}

}  // namespace simkit::detail::cpu
