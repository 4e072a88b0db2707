#include "core/row_stats.hpp"

#include <climits>
#include <cmath>

#include <cblas.h>

#include <simkit/error.hpp>

#include "core/simd.hpp"

namespace simkit::detail {

namespace {

using simd::d4;

double row_sum(const float* r, int64_t d) {
  d4 acc = {0, 0, 0, 0};
  int64_t t = 0;
  for (; t + 4 <= d; t += 4) acc += simd::load4_as_double(r + t);
  double s = simd::sum(acc);
  for (; t < d; ++t) s += r[t];
  return s;
}

double row_sum_sq(const float* r, int64_t d) {
  d4 acc = {0, 0, 0, 0};
  int64_t t = 0;
  for (; t + 4 <= d; t += 4) {
    const d4 v = simd::load4_as_double(r + t);
    acc += v * v;
  }
  double s = simd::sum(acc);
  for (; t < d; ++t) s += static_cast<double>(r[t]) * r[t];
  return s;
}

// Squared norm of the row as centre_rows will hand it to sgemm: float(r - mean), squared in
// double. Using the rounded centred values keeps the cosine of a row with itself at 1.
double centred_sum_sq(const float* r, int64_t d, double mean) {
  double s = 0;
  for (int64_t t = 0; t < d; ++t) {
    const double c = static_cast<float>(static_cast<double>(r[t]) - mean);
    s += c * c;
  }
  return s;
}

double inverse_norm(double sq) { return sq > 0 ? 1.0 / std::sqrt(sq) : 0.0; }

}  // namespace

RowStats row_stats(MatrixView<const float> A, const MetricPlan& plan, int threads) {
  RowStats s;
  const int64_t rows = A.rows, d = A.cols;
  const bool parallel = rows * d > (1 << 16);
  if (plan.expanded) {
    s.sq.resize(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t i = 0; i < rows; ++i) s.sq[static_cast<size_t>(i)] = row_sum_sq(A.row(i), d);
  } else if (plan.prep == RowPrep::normalize) {
    s.inv.resize(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t i = 0; i < rows; ++i) s.inv[static_cast<size_t>(i)] = inverse_norm(row_sum_sq(A.row(i), d));
  } else if (plan.prep == RowPrep::centre_normalize) {
    s.inv.resize(static_cast<size_t>(rows));
    s.mean.resize(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t i = 0; i < rows; ++i) {
      const double mean = row_sum(A.row(i), d) / static_cast<double>(d);
      s.mean[static_cast<size_t>(i)] = mean;
      s.inv[static_cast<size_t>(i)] = inverse_norm(centred_sum_sq(A.row(i), d, mean));
    }
  }
  return s;
}

void centre_rows(const float* src, int64_t rows, int64_t d, const double* mean, float* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    const double m = mean[i];
    const float* r = src + i * d;
    float* o = dst + i * d;
    for (int64_t t = 0; t < d; ++t) o[t] = static_cast<float>(static_cast<double>(r[t]) - m);
  }
}

void gemm_nt(const float* a, int64_t rows_a, const float* b, int64_t rows_b, int64_t d, float* c, int64_t ldc) {
  if (rows_a > INT_MAX || rows_b > INT_MAX || d > INT_MAX || ldc > INT_MAX)
    throw Error(ErrorCode::unsupported, "a dimension exceeds the BLAS integer range (d = " + std::to_string(d) +
                                            ", leading dimension " + std::to_string(ldc) + ")");
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows_a), static_cast<int>(rows_b),
              static_cast<int>(d), 1.0f, a, static_cast<int>(d), b, static_cast<int>(d), 0.0f, c,
              static_cast<int>(ldc));
}

// When may the expanded form D' = S - 2 g, with S = ||q||^2 + ||x||^2 (float64) and
// g = fl32(q.x) from sgemm, be trusted to 1e-5 relative?
//
// The norms and the combination are float64, so the error of D' is twice the error of g.
// sgemm adds the d products into a running float sum s_t (one FMA per step, sequentially
// within a K block); step t rounds with a relative error of at most u = 2^-24, so
//   |g - q.x| <= u * sum_t |s_t|,   |s_t| <= sum |q_i x_i| <= S / 2.
// The worst case, d u S / 2, is hopelessly pessimistic for d in the hundreds. Treating the
// per-step rounding errors as independent, zero-mean, uniform in [-u, u] (the probabilistic
// model of Higham & Mary, SIAM J. Sci. Comput. 2019, which holds well for sgemm outputs), the
// error of g has a standard deviation of at most (u / sqrt 3) * sqrt(d) * S / 2, so D' is off
// by sigma <= 0.58 u sqrt(d) S, and by less than 2 u sqrt(d) S (3.5 sigma; 6 sigma when the
// partial sums grow linearly, as they do for near neighbours) in practice. Requiring
//   2 u sqrt(d) S / D <= eps = 1e-5     gives     D >= tau S,  tau = 2 u sqrt(d) / eps.
// For d <= 4 the worst-case bound d u S / 2 is already inside 2 u sqrt(d) S, so tau is a
// guarantee there. Values: d = 1: 0.012, 64: 0.095, 384: 0.23, 1000: 0.38, 4096: 0.76. As
// D <= 2 S always, tau is capped at 2 (everything recomputed). Entries of unrelated points
// have D ~ S and are kept; near neighbours and near duplicates (D << S) are recomputed with
// exact_sqdist at a few times the cost of their share of the product.
}  // namespace simkit::detail
