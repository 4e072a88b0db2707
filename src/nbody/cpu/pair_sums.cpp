// The list sums of pair_sums.hpp. They are AVX2 intrinsics because GCC 12 leaves a
// `#pragma omp simd` loop with a square root scalar ("control flow in loop": sqrt may set errno)
// unless -fno-math-errno and -fno-trapping-math are given, which this build does not; other
// targets get the same loops in plain C++, scalar for that reason (about 7e8 pairs/s on 2
// threads). Each target keeps eight lanes of partial sums per quantity, reduced into float64 at
// the end of the call. The monopole sum is one template over InvSqrt, branched on once per call.

#include "nbody/cpu/pair_sums.hpp"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace simkit::detail::cpu {

#if defined(__AVX2__) && defined(__FMA__)

namespace {

/// 1 / sqrt(r2) to about 2^-22: the estimate of vrsqrtps and one Newton step.
inline __m256 rsqrt(__m256 r2) {
  const __m256 y = _mm256_rsqrt_ps(r2);
  const __m256 t = _mm256_fnmadd_ps(_mm256_mul_ps(r2, y), y, _mm256_set1_ps(3.f));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), y), t);
}

/// The eight lanes' sum, in float64.
inline double lanes(__m256 v) {
  const __m256d s =
      _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

/// 1 / sqrt(r2): rsqrt, or the quotient of correctly rounded vsqrtps and vdivps.
template <bool kExact>
inline __m256 inv_sqrt(__m256 r2) {
  if constexpr (kExact) {
    return _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_sqrt_ps(r2));
  } else {
    return rsqrt(r2);
  }
}

/// sum_monopoles with InvSqrt::exact (kExact) or InvSqrt::estimate.
template <bool kExact>
void monopoles(const float* X, const float* Y, const float* Z, const float* M, int64_t begin, int64_t end,
               const float* tx, const float* ty, const float* tz, int64_t count, float eps2, double* sums) {
  const __m256 e2 = _mm256_set1_ps(eps2), zero = _mm256_setzero_ps();
  for (int64_t t = 0; t < count; ++t) {
    const __m256 x = _mm256_set1_ps(tx[t]), y = _mm256_set1_ps(ty[t]), z = _mm256_set1_ps(tz[t]);
    __m256 ax = zero, ay = zero, az = zero, p = zero;
    for (int64_t j = begin; j < end; j += 8) {
      const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(X + j), x), dy = _mm256_sub_ps(_mm256_loadu_ps(Y + j), y),
                   dz = _mm256_sub_ps(_mm256_loadu_ps(Z + j), z);
      const __m256 d2 = _mm256_fmadd_ps(dz, dz, _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dx, dx)));
      // A pair at distance zero (the body itself) contributes nothing (nbody.hpp).
      const __m256 inv = _mm256_and_ps(inv_sqrt<kExact>(_mm256_add_ps(d2, e2)), _mm256_cmp_ps(d2, zero, _CMP_GT_OQ));
      const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(M + j), inv);
      const __m256 w3 = _mm256_mul_ps(w, _mm256_mul_ps(inv, inv));
      ax = _mm256_fmadd_ps(w3, dx, ax), ay = _mm256_fmadd_ps(w3, dy, ay), az = _mm256_fmadd_ps(w3, dz, az);
      p = _mm256_add_ps(p, w);
    }
    double* out = sums + t * 4;
    out[0] += lanes(ax), out[1] += lanes(ay), out[2] += lanes(az), out[3] -= lanes(p);
  }
}

}  // namespace

void sum_monopoles(const float* X, const float* Y, const float* Z, const float* M, int64_t begin, int64_t end,
                   const float* tx, const float* ty, const float* tz, int64_t count, float eps2, InvSqrt inv_sqrt,
                   double* sums) {
  if (inv_sqrt == InvSqrt::exact)
    monopoles<true>(X, Y, Z, M, begin, end, tx, ty, tz, count, eps2, sums);
  else
    monopoles<false>(X, Y, Z, M, begin, end, tx, ty, tz, count, eps2, sums);
}

void sum_quadrupoles(const float* X, const float* Y, const float* Z, const float* const Q[6], int64_t begin,
                     int64_t end, const float* tx, const float* ty, const float* tz, int64_t count, float eps2,
                     double* sums) {
  const __m256 e2 = _mm256_set1_ps(eps2), zero = _mm256_setzero_ps(), five_halves = _mm256_set1_ps(2.5f);
  for (int64_t t = 0; t < count; ++t) {
    const __m256 x = _mm256_set1_ps(tx[t]), y = _mm256_set1_ps(ty[t]), z = _mm256_set1_ps(tz[t]);
    __m256 ax = zero, ay = zero, az = zero, p = zero;
    for (int64_t j = begin; j < end; j += 8) {
      const __m256 rx = _mm256_sub_ps(x, _mm256_loadu_ps(X + j)), ry = _mm256_sub_ps(y, _mm256_loadu_ps(Y + j)),
                   rz = _mm256_sub_ps(z, _mm256_loadu_ps(Z + j));
      const __m256 r2 = _mm256_add_ps(_mm256_fmadd_ps(rz, rz, _mm256_fmadd_ps(ry, ry, _mm256_mul_ps(rx, rx))), e2);
      // r2 = 0 only for a padding entry (massless, at the origin) seen from a target there.
      const __m256 inv = _mm256_and_ps(rsqrt(r2), _mm256_cmp_ps(r2, zero, _CMP_GT_OQ)), inv2 = _mm256_mul_ps(inv, inv),
                   inv5 = _mm256_mul_ps(_mm256_mul_ps(inv2, inv2), inv);
      const __m256 xx = _mm256_loadu_ps(Q[0] + j), yy = _mm256_loadu_ps(Q[1] + j), zz = _mm256_loadu_ps(Q[2] + j),
                   xy = _mm256_loadu_ps(Q[3] + j), xz = _mm256_loadu_ps(Q[4] + j), yz = _mm256_loadu_ps(Q[5] + j);
      const __m256 qx = _mm256_fmadd_ps(xz, rz, _mm256_fmadd_ps(xy, ry, _mm256_mul_ps(xx, rx)));
      const __m256 qy = _mm256_fmadd_ps(yz, rz, _mm256_fmadd_ps(yy, ry, _mm256_mul_ps(xy, rx)));
      const __m256 qz = _mm256_fmadd_ps(zz, rz, _mm256_fmadd_ps(yz, ry, _mm256_mul_ps(xz, rx)));
      const __m256 rqr = _mm256_fmadd_ps(rz, qz, _mm256_fmadd_ps(ry, qy, _mm256_mul_ps(rx, qx)));
      const __m256 k = _mm256_mul_ps(_mm256_mul_ps(five_halves, rqr), inv2);
      ax = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, rx, qx), ax);
      ay = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, ry, qy), ay);
      az = _mm256_fmadd_ps(inv5, _mm256_fnmadd_ps(k, rz, qz), az);
      p = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), rqr), inv5, p);
    }
    double* out = sums + t * 4;
    out[0] += lanes(ax), out[1] += lanes(ay), out[2] += lanes(az), out[3] -= lanes(p);
  }
}

#else  // the same sums in plain C++ (see the header comment), 1 / sqrt always InvSqrt::exact

void sum_monopoles(const float* X, const float* Y, const float* Z, const float* M, int64_t begin, int64_t end,
                   const float* tx, const float* ty, const float* tz, int64_t count, float eps2, InvSqrt,
                   double* sums) {
  for (int64_t t = 0; t < count; ++t) {
    const float x = tx[t], y = ty[t], z = tz[t];
    float ax = 0, ay = 0, az = 0, p = 0;
#pragma omp simd reduction(+ : ax, ay, az, p)
    for (int64_t j = begin; j < end; ++j) {
      const float dx = X[j] - x, dy = Y[j] - y, dz = Z[j] - z;
      const float d2 = dx * dx + dy * dy + dz * dz;
      const float inv = d2 > 0.f ? 1.f / std::sqrt(d2 + eps2) : 0.f;  // distance zero: nothing
      const float w = M[j] * inv;
      const float w3 = w * inv * inv;
      ax += w3 * dx, ay += w3 * dy, az += w3 * dz;
      p += w;
    }
    double* out = sums + t * 4;
    out[0] += ax, out[1] += ay, out[2] += az, out[3] -= p;
  }
}

void sum_quadrupoles(const float* X, const float* Y, const float* Z, const float* const Q[6], int64_t begin,
                     int64_t end, const float* tx, const float* ty, const float* tz, int64_t count, float eps2,
                     double* sums) {
  const float *Qxx = Q[0], *Qyy = Q[1], *Qzz = Q[2], *Qxy = Q[3], *Qxz = Q[4], *Qyz = Q[5];
  for (int64_t t = 0; t < count; ++t) {
    const float x = tx[t], y = ty[t], z = tz[t];
    float ax = 0, ay = 0, az = 0, p = 0;
#pragma omp simd reduction(+ : ax, ay, az, p)
    for (int64_t j = begin; j < end; ++j) {
      const float rx = x - X[j], ry = y - Y[j], rz = z - Z[j];
      const float r2 = rx * rx + ry * ry + rz * rz + eps2;
      const float inv = r2 > 0.f ? 1.f / std::sqrt(r2) : 0.f, inv2 = inv * inv, inv5 = inv2 * inv2 * inv;
      const float qx = Qxx[j] * rx + Qxy[j] * ry + Qxz[j] * rz, qy = Qxy[j] * rx + Qyy[j] * ry + Qyz[j] * rz,
                  qz = Qxz[j] * rx + Qyz[j] * ry + Qzz[j] * rz;
      const float rqr = rx * qx + ry * qy + rz * qz, k = 2.5f * rqr * inv2;
      ax += inv5 * (qx - k * rx), ay += inv5 * (qy - k * ry), az += inv5 * (qz - k * rz);
      p += 0.5f * rqr * inv5;
    }
    double* out = sums + t * 4;
    out[0] += ax, out[1] += ay, out[2] += az, out[3] -= p;
  }
}

#endif

}  // namespace simkit::detail::cpu
