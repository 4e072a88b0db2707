// The direct sum on the CPU: every pair, through the list sum of pair_sums.hpp (AVX2 intrinsics,
// eight sources per instruction).
//
// The sources are transposed once into x, y, z, mass arrays padded to a multiple of 8 with
// massless entries at the origin, which add nothing: mass 0 times a finite 1 / r is 0, and a
// target at the origin is at distance zero from them, a pair masked as every such pair is. The
// targets go in blocks of kBlock, OpenMP over the blocks (static schedule); a block is copied into
// x, y, z arrays and sums the sources tile by tile (kPairTile), so that a tile (16 KiB) stays in
// L1 while every target of the block passes over it: float32 within a tile, float64 across tiles
// and for G and the conversion to the float32 outputs. 1 / sqrt is InvSqrt::exact (vsqrtps,
// vdivps; 1.f / std::sqrt as before): InvSqrt::estimate is about 1.2x faster (5.9e9 pairs/s at
// 2^16 below) but not exact at exact distances, which the CLI's contract checks.
//
// Why intrinsics: this file was a `#pragma omp simd` loop that GCC 12 left scalar (a square root
// is "control flow in loop" without -fno-math-errno and -fno-trapping-math), and its float32
// partial sums over all n sources lost accuracy as n grew. `simkit bench nbody --device cpu
// --threads 2` (2-core Xeon, AVX2, otherwise idle), interactions/s and the bench's error at 64
// bodies against float64, before -> after:
//     n = 2^12:  7.5e8 -> 5.0e9,  error 8.0e-7 -> 8.1e-8
//     n = 2^14:  7.2e8 -> 4.8e9,  error 1.8e-6 -> 6.9e-8
//     n = 2^16:  7.4e8 -> 4.8e9,  error 4.2e-6 -> 9.2e-8
// At 2^12 a run sometimes takes 2.5x longer when both OpenMP threads start on one CPU (the old
// loop too); OMP_PROC_BIND=close avoids it.

#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "nbody/cpu/pair_sums.hpp"
#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cpu {

namespace {

/// Targets that sum a tile of sources together: small enough for their x, y, z and sums to stay
/// in L1 beside the tile, large enough that reading the tile costs little per target.
constexpr int64_t kBlock = 64;

}  // namespace

void nbody_direct(const Context& ctx, const NbodyArgs& a) {
  const int64_t n = a.n, m = a.m;
  const int64_t padded = (n + 7) / 8 * 8;
  std::vector<float> sx(size_t(padded), 0.f), sy(size_t(padded), 0.f), sz(size_t(padded), 0.f), sm(size_t(padded), 0.f);
  for (int64_t j = 0; j < n; ++j) {
    const float* s = a.sources + j * 4;
    sx[size_t(j)] = s[0], sy[size_t(j)] = s[1], sz[size_t(j)] = s[2], sm[size_t(j)] = s[3];
  }
  const float eps2 = float(a.softening * a.softening);
  const float *X = sx.data(), *Y = sy.data(), *Z = sz.data(), *M = sm.data();
  float* acc = a.accel.data;
  float* phi = a.potential.data;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  const int threads = cpu_threads(ctx);
#pragma omp parallel num_threads(threads)
  {
    float tx[kBlock], ty[kBlock], tz[kBlock];
    double sums[kBlock * 4];
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kBlock, count = std::min(kBlock, m - first);
      for (int64_t t = 0; t < count; ++t) {
        const float* p = a.targets + (first + t) * a.target_stride;
        tx[t] = p[0], ty[t] = p[1], tz[t] = p[2];
      }
      std::fill_n(sums, count * 4, 0.0);
      for (int64_t j = 0; j < padded; j += kPairTile)
        sum_monopoles(X, Y, Z, M, j, std::min(padded, j + kPairTile), tx, ty, tz, count, eps2, InvSqrt::exact, sums);
      for (int64_t t = 0; t < count; ++t) {
        const int64_t i = first + t;
        for (int c = 0; c < 3; ++c) acc[i * 3 + c] = float(a.G * sums[t * 4 + c]);
        if (phi) phi[i] = float(a.G * sums[t * 4 + 3]);
      }
    }
  }
}

}  // namespace simkit::detail::cpu
