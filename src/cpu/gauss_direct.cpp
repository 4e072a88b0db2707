// CPU direct Gauss transform: out[j] = sum_i q_i exp(-|y_j - x_i|^2 / h^2), never forming the
// m x n kernel matrix.
//
// Precision. The exponent argument a = |y - x|^2 / h^2 is computed in float64. In float32 its
// rounding is ~(d + 2) ulp relative, i.e. an absolute error of a * (d + 2) * 6e-8 in a, which is
// the relative error of the term exp(-a): for a target whose nearest sources sit at a ~ 20
// (small h, or a target away from the data) that is already ~5e-6, over the 1e-6 the issue
// asks for, and exp(-a) underflows in float32 for a > 87 where float64 still has 1e-38..1e-308.
// Source coordinates are therefore scaled by 1/h and transposed once into float64 columns,
// and exp runs in float64 through exp_neg below: a polynomial the compiler vectorises (glibc's
// vector exp is only reachable with -ffast-math, which this library does not use), accurate to
// ~1e-13 relative, far inside the 1e-6 target. Terms with a > 708 (below the smallest normal
// float64) are flushed to zero.
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
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "cpu/parallel.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kBlock = 512;
constexpr int64_t kTargetTile = 64;

/// exp(-a) for a >= 0, branch-free so that a simd loop can inline it. Range reduction
/// -a = k ln2 + r with |r| <= ln2 / 2 (ln2 split in two for an exact k ln2), then a degree-11
/// Taylor polynomial (truncation ~2e-14 relative) and the scale 2^k built from the exponent
/// bits. k is recovered from the rounding constant's low mantissa bits because AVX2 has no
/// double -> int64 conversion.
inline double exp_neg(double a) {
  constexpr double kMaxA = 708.0;  // exp(-708) ~ 3.3e-308, the last normal power of two is 2^-1022
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double x = -std::min(a, kMaxA);
  const double t = std::fma(x, kLog2e, kRound);
  const double k = t - kRound;
  const double r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, x));
  double p = 1.0 / 39916800.0;
  p = std::fma(p, r, 1.0 / 3628800.0);
  p = std::fma(p, r, 1.0 / 362880.0);
  p = std::fma(p, r, 1.0 / 40320.0);
  p = std::fma(p, r, 1.0 / 5040.0);
  p = std::fma(p, r, 1.0 / 720.0);
  p = std::fma(p, r, 1.0 / 120.0);
  p = std::fma(p, r, 1.0 / 24.0);
  p = std::fma(p, r, 1.0 / 6.0);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  const int64_t ki = std::bit_cast<int64_t>(t) - std::bit_cast<int64_t>(kRound);
  const double scale = std::bit_cast<double>((ki + 1023) << 52);
  return a < kMaxA ? p * scale : 0.0;
}

/// Sources scaled by 1/h, transposed per block: block b holds coordinate c of its sources at
/// cols[(b * d + c) * kBlock + i]; the tail of the last block is padded with weight 0.
struct ScaledSources {
  std::vector<double> cols;
  std::vector<double> q;
  int64_t blocks = 0;
};

ScaledSources scale_sources(MatrixView<const float> X, const double* q, double inv_h) {
  const int64_t n = X.rows, d = X.cols;
  ScaledSources s;
  s.blocks = (n + kBlock - 1) / kBlock;
  s.cols.assign(static_cast<size_t>(s.blocks * d * kBlock), 0.0);
  s.q.assign(static_cast<size_t>(s.blocks * kBlock), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / kBlock, o = i % kBlock;
    const float* x = X.row(i);
    for (int64_t c = 0; c < d; ++c) s.cols[static_cast<size_t>((b * d + c) * kBlock + o)] = double(x[c]) * inv_h;
    s.q[static_cast<size_t>(i)] = q != nullptr ? q[i] : 1.0;
  }
  return s;
}

/// sum over one block of q_i exp(-|y - x_i|^2), y and x already scaled by 1/h.
template <int D>
double block_sum(const double* y, const double* cols, const double* q, int64_t d_runtime) {
  const int64_t d = D > 0 ? D : d_runtime;
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < kBlock; ++i) {
    double a = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      const double t = y[c] - cols[c * kBlock + i];
      a = std::fma(t, t, a);
    }
    acc = std::fma(q[i], exp_neg(a), acc);
  }
  return acc;
}

template <int D>
void run(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
         double* out) {
  const int64_t d = X.cols, m = Y.rows;
  const double inv_h = 1.0 / h;
  const ScaledSources src = scale_sources(X, q, inv_h);
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
      for (int64_t c = 0; c < d; ++c) yv[j * d + c] = double(Y(lo + j, c)) * inv_h;
    double acc[kTargetTile] = {};
    for (int64_t b = 0; b < src.blocks; ++b) {
      const double* cols = src.cols.data() + b * d * kBlock;
      const double* qb = src.q.data() + b * kBlock;
      for (int64_t j = 0; j < count; ++j) acc[j] += block_sum<D>(yv + j * d, cols, qb, d);
    }
    std::copy(acc, acc + count, out + lo);
  });
}

}  // namespace

void gauss_direct(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
                  double* out) {
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
