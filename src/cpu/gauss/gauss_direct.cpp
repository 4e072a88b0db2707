// CPU direct Gauss transform: out[j] = sum_i q_i exp(-|y_j - x_i|^2 / h^2), never forming the
// m x n kernel matrix.
//
// Precision. The exponent argument a = |y - x|^2 / h^2 is computed in float64. In float32 its
// rounding is ~(d + 2) ulp relative, i.e. an absolute error of a * (d + 2) * 6e-8 in a, which is
// the relative error of the term exp(-a): for a target whose nearest sources sit at a ~ 20
// (small h, or a target away from the data) that is already ~5e-6, over the 1e-6 the issue
// asks for, and exp(-a) underflows in float32 for a > 87 where float64 still has 1e-38..1e-308.
// Source coordinates are therefore transposed once into float64 columns, and exp runs in
// float64 through exp_neg below: a polynomial the compiler vectorises (glibc's vector exp is
// only reachable with -ffast-math, which this library does not use), accurate to ~1e-11
// relative, far inside the 1e-6 target. Terms with a > 708 (below the smallest normal float64)
// are flushed to zero.
//
// Measured on this repository's 2-core x86-64-v3 build machine, N = M = 65,536, d = 3,
// h = 0.9: this float64 path 3.1 s (1.4e9 pairs/s) with max relative error 8e-13; the same
// loop in float32 (8 lanes, float32 exponent and exp) 1.5 s with 7e-8 at that h but 8.6e-7 at
// h = 0.05, i.e. at the 1e-6 limit already for d = 3 and beyond it for larger d or smaller h,
// so float32 is not used.
//
// Summation. Each (target, source block) partial over kBlock sources is summed in float64 lanes
// and then added to the target's float64 accumulator, so rounding grows with kBlock + n / kBlock
// float64 ulps (~1e-13 at n = 2^20), not with n float32 ulps.
//
// Blocking. A task owns kTargetTile targets; it walks the sources in blocks of kBlock (a block
// of 8-d float64 coordinates plus weights is 36 KiB, so it stays in L1/L2 while every target of
// the tile streams over it). The inner loop runs over the sources of a block, with d fixed at
// compile time for d <= 8.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kBlock = 512;
constexpr int64_t kTargetTile = 64;

/// exp(-a) for a >= 0, branch-free so that a simd loop can inline it. Range reduction
/// -a = k ln2 + r with |r| <= ln2 / 2 (ln2 split in two for an exact k ln2), then a degree-9
/// Taylor polynomial (truncation <= 0.347^10 / 10! ~ 7e-12 relative: degree 11 measured 27%
/// slower for accuracy nobody downstream can see) and the scale 2^k built from the exponent
/// bits. k is recovered from the rounding constant's low mantissa bits because AVX2 has no
/// double -> int64 conversion.
[[gnu::always_inline]] inline double exp_neg(double a) {
  constexpr double kMaxA = 708.0;  // exp(-708) ~ 3.3e-308, the last normal power of two is 2^-1022
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double x = -(a < kMaxA ? a : kMaxA);
  const double t = std::fma(x, kLog2e, kRound);
  const double k = t - kRound;
  const double r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, x));
  double p = 1.0 / 362880.0;
  p = std::fma(p, r, 1.0 / 40320.0);
  p = std::fma(p, r, 1.0 / 5040.0);
  p = std::fma(p, r, 1.0 / 720.0);
  p = std::fma(p, r, 1.0 / 120.0);
  p = std::fma(p, r, 1.0 / 24.0);
  p = std::fma(p, r, 1.0 / 6.0);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  // memcpy, not std::bit_cast: GCC 12 lowers bit_cast through a memset that stops the simd loop.
  int64_t tb, rb;
  std::memcpy(&tb, &t, sizeof t);
  std::memcpy(&rb, &kRound, sizeof rb);
  const int64_t sb = (tb - rb + 1023) << 52;
  double scale;
  std::memcpy(&scale, &sb, sizeof scale);
  // A select between constants, not between p * scale and 0: GCC will not if-convert a
  // possibly trapping multiply, and the branch would stop the simd loop.
  const double keep = a < kMaxA ? 1.0 : 0.0;
  return p * scale * keep;
}

/// Sources in float64, transposed per block: block b holds coordinate c of its sources at
/// cols[(b * d + c) * kBlock + i]; the tail of the last block is padded with weight 0.
struct SourceBlocks {
  std::vector<double> cols;
  std::vector<double> q;
  int64_t blocks = 0;
};

SourceBlocks transpose_sources(MatrixView<const float> X, const double* q) {
  const int64_t n = X.rows, d = X.cols;
  SourceBlocks s;
  s.blocks = (n + kBlock - 1) / kBlock;
  s.cols.assign(static_cast<size_t>(s.blocks * d * kBlock), 0.0);
  s.q.assign(static_cast<size_t>(s.blocks * kBlock), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / kBlock, o = i % kBlock;
    const float* x = X.row(i);
    for (int64_t c = 0; c < d; ++c) s.cols[static_cast<size_t>((b * d + c) * kBlock + o)] = double(x[c]);
    s.q[static_cast<size_t>(i)] = q != nullptr ? q[i] : 1.0;
  }
  return s;
}

/// sum over one block of q_i exp(-|y - x_i|^2 / h^2). Differences of float32 inputs are exact
/// in float64 and their squares cannot overflow, so a = s / h^2 is finite or +inf (a term of 0),
/// never NaN; core rejects an h whose 1 / h^2 overflows. The terms go
/// through a stack buffer and are summed in 8 interleaved lanes: an `omp simd reduction` would
/// do the same, but GCC 12 privatises its accumulator through a memset that blocks the loop.
template <int D>
double block_sum(const double* y, const double* cols, const double* q, double inv_h2, int64_t d_runtime) {
  const int64_t d = D > 0 ? D : d_runtime;
  alignas(64) double terms[kBlock];
  if constexpr (D == 0) {
    // d unknown at compile time: one pass per coordinate keeps every loop a plain simd loop.
    alignas(64) double a[kBlock] = {};
    for (int64_t c = 0; c < d; ++c) {
      const double yc = y[c];
      const double* col = cols + c * kBlock;
      for (int64_t i = 0; i < kBlock; ++i) {
        const double t = yc - col[i];
        a[i] = std::fma(t, t, a[i]);
      }
    }
#pragma omp simd
    for (int64_t i = 0; i < kBlock; ++i) terms[i] = q[i] * exp_neg(a[i] * inv_h2);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < kBlock; ++i) {
      double a = 0.0;
      for (int64_t c = 0; c < d; ++c) {
        const double t = y[c] - cols[c * kBlock + i];
        a = std::fma(t, t, a);
      }
      terms[i] = q[i] * exp_neg(a * inv_h2);
    }
  }
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  for (int64_t i = 0; i < kBlock; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += terms[i + l];
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

template <int D>
void run(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
         double* out) {
  const int64_t d = X.cols, m = Y.rows;
  const double inv_h2 = 1.0 / (h * h);
  const SourceBlocks src = transpose_sources(X, q);
  const int threads = cpu_threads(ctx);
  const int64_t tiles = (m + kTargetTile - 1) / kTargetTile;
  run_tasks(ctx, threads, tiles, [&](int64_t tile, int) {
    const int64_t lo = tile * kTargetTile, hi = std::min(m, lo + kTargetTile);
    const int64_t count = hi - lo;
    double ys[kTargetTile * 8];  // d <= 8: on the stack
    std::vector<double> ys_wide;
    double* yv = ys;
    if (d > 8) {
      ys_wide.resize(static_cast<size_t>(count * d));
      yv = ys_wide.data();
    }
    for (int64_t j = 0; j < count; ++j)
      for (int64_t c = 0; c < d; ++c) yv[j * d + c] = double(Y(lo + j, c));
    double acc[kTargetTile] = {};
    for (int64_t b = 0; b < src.blocks; ++b) {
      const double* cols = src.cols.data() + b * d * kBlock;
      const double* qb = src.q.data() + b * kBlock;
      for (int64_t j = 0; j < count; ++j) acc[j] += block_sum<D>(yv + j * d, cols, qb, inv_h2, d);
    }
    std::copy(acc, acc + count, out + lo);
  });
}

}  // namespace

void CpuBackend::gauss_direct(const Context& ctx, const GaussArgs& a) const {
  const MatrixView<const float> X = a.X, Y = a.Y;
  const double* q = a.q;
  const double h = a.h;
  double* out = a.out.data;
  translate_bad_alloc("gauss_transform", [&] {
    switch (X.cols) {
      case 1: return run<1>(ctx, X, q, Y, h, out);
      case 2: return run<2>(ctx, X, q, Y, h, out);
      case 3: return run<3>(ctx, X, q, Y, h, out);
      case 4: return run<4>(ctx, X, q, Y, h, out);
      case 5: return run<5>(ctx, X, q, Y, h, out);
      case 6: return run<6>(ctx, X, q, Y, h, out);
      case 7: return run<7>(ctx, X, q, Y, h, out);
      case 8: return run<8>(ctx, X, q, Y, h, out);
      default: return run<0>(ctx, X, q, Y, h, out);
    }
  });
}

}  // namespace simkit::detail::cpu
