#include "cpu/l1.hpp"

#include <algorithm>
#include <cmath>

#include "core/simd.hpp"

namespace simkit::detail::cpu {

namespace {

using simd::f8;

constexpr int64_t kFlushEvery = 16 * 8;  // floats per lane-run before folding into double
constexpr int64_t kSliceBytes = 256 * 1024;

// R query rows x C base rows, all of length d; writes out[r * ldo + c].
template <int R, int C>
void patch(const float* q, const float* x, int64_t d, float* out, int64_t ldo) {
  double total[R][C] = {};
  const int64_t d8 = d - d % 8;
  int64_t t = 0;
  while (t < d8) {
    const int64_t stop = std::min(d8, t + kFlushEvery);
    f8 acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) acc[r][c] = f8{};
    for (; t < stop; t += 8) {
      f8 xv[C];
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) xv[c] = simd::load8(x + c * d + t);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const f8 qv = simd::load8(q + r * d + t);
#pragma GCC unroll 2
        for (int c = 0; c < C; ++c) acc[r][c] += simd::abs8(qv - xv[c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) total[r][c] += simd::sum_as_double(acc[r][c]);
  }
  for (; t < d; ++t)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        total[r][c] += std::abs(static_cast<double>(q[r * d + t]) - static_cast<double>(x[c * d + t]));
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) out[r * ldo + c] = static_cast<float>(total[r][c]);
}

template <int R>
void patch_rows(const float* q, const float* x, int64_t cols, int64_t d, float* out, int64_t ldo) {
  int64_t c = 0;
  for (; c + 2 <= cols; c += 2) patch<R, 2>(q, x + c * d, d, out + c, ldo);
  if (c < cols) patch<R, 1>(q, x + c * d, d, out + c, ldo);
}

}  // namespace

void l1_block(const float* q, int64_t tq, const float* x, int64_t tx, int64_t d, float* out, int64_t ldo) {
  const int64_t slice = std::max<int64_t>(2, kSliceBytes / (d * static_cast<int64_t>(sizeof(float))));
  for (int64_t j0 = 0; j0 < tx; j0 += slice) {
    const int64_t cols = std::min(slice, tx - j0);
    const float* xs = x + j0 * d;
    int64_t i = 0;
    for (; i + 4 <= tq; i += 4) patch_rows<4>(q + i * d, xs, cols, d, out + i * ldo + j0, ldo);
    switch (tq - i) {
      case 3: patch_rows<3>(q + i * d, xs, cols, d, out + i * ldo + j0, ldo); break;
      case 2: patch_rows<2>(q + i * d, xs, cols, d, out + i * ldo + j0, ldo); break;
      case 1: patch_rows<1>(q + i * d, xs, cols, d, out + i * ldo + j0, ldo); break;
      default: break;
    }
  }
}

}  // namespace simkit::detail::cpu
