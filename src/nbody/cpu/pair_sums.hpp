#pragma once
// The CPU n-body kernels: the pulls of a list of sources, float32 structure of arrays, on a few
// targets, eight sources at a time (pair_sums.cpp). The direct sum (nbody_direct.cpp) and
// Barnes-Hut (barnes_hut.cpp, whose lists are taken nodes and bodies) both call them tile by
// tile: float32 within a call, float64 across calls, so float32 accumulation chains stay short
// whatever the list's length.
//
// Conventions shared by both sums, with G = 1 (the caller scales):
//   - A list range [begin, end) has a length that is a multiple of 8; lists are padded with
//     massless entries at the origin (and zero quadrupoles), which add nothing (see below).
//   - sums holds four float64 values per target, ax, ay, az, phi, and is added to, never
//     overwritten: the acceleration towards the sources and the potential (negative).
//   - A pair at distance zero contributes nothing (nbody.hpp: a body and itself, a target on a
//     body); so does a padding entry, massless, or at distance zero from a target at the origin.
//   - 1 / sqrt(d^2 + eps2) is chosen per call on AVX2 + FMA builds (InvSqrt); plain C++ builds
//     always take 1 / std::sqrt.

#include <cstdint>

namespace simkit::detail::cpu {

/// Sources summed per call before the float32 partial sums go into float64: 4 KiB of each
/// array, so that a tile of x, y, z, mass (16 KiB) stays in L1 while a block of targets sums it.
constexpr int64_t kPairTile = 1024;

/// How the monopole sum takes 1 / sqrt(d^2 + eps2) on AVX2 + FMA builds.
enum class InvSqrt {
  /// vrsqrtps and one Newton step: relative error below 3e-7 (a little low), the faster
  /// (about 1.2x on the direct sum, measured; Barnes-Hut takes it).
  estimate,
  /// vsqrtps and vdivps, each correctly rounded, as 1.f / std::sqrt: exact where the distance
  /// is (two unit masses a unit apart pull with exactly 1, as the CLI's contract checks; the
  /// direct sum takes it).
  exact,
};

/// Adds to sums[t * 4 + 0..3] (ax, ay, az, phi) the pulls of the point masses [begin, end) of
/// X, Y, Z, M (end - begin a multiple of 8) on each of the `count` targets (tx[t], ty[t], tz[t]),
/// softened by eps2:
///     a   += m (x_j - x) / (d^2 + eps2)^(3/2),    phi -= m / sqrt(d^2 + eps2),
/// float32 within the range, added into float64.
void sum_monopoles(const float* X, const float* Y, const float* Z, const float* M, int64_t begin, int64_t end,
                   const float* tx, const float* ty, const float* tz, int64_t count, float eps2, InvSqrt inv_sqrt,
                   double* sums);

/// Adds to sums (as sum_monopoles, with InvSqrt::estimate) the terms of the traceless
/// quadrupoles Q about the points X, Y, Z over [begin, end) (a multiple of 8, padded with zero
/// moments), Q[0..5] being the arrays of the components xx, yy, zz, xy, xz, yz: with r from the
/// point to the target and softened distances as the monopole's,
///     phi -= (1/2) r.Q.r / r^5,    a += Q r / r^5 - (5/2) (r.Q.r) r / r^7.
void sum_quadrupoles(const float* X, const float* Y, const float* Z, const float* const Q[6], int64_t begin,
                     int64_t end, const float* tx, const float* ty, const float* tz, int64_t count, float eps2,
                     double* sums);

}  // namespace simkit::detail::cpu
