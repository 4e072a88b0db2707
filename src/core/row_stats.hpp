#pragma once
// Per-row statistics of host rows -- the norms and means a metric plan's epilogue needs -- and
// the host matrix product: shared by the CPU backend's blocks, the indexes' add paths (computed
// once per stored row) and the host halves of the GPU searches.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

/// Per-row numbers the epilogues need; which vectors are filled depends on the plan.
struct RowStats {
  std::vector<double> sq;    // expanded (l2, sqeuclidean): ||row||^2
  std::vector<double> inv;   // normalised rows: 1 / ||row|| (after centring), 0 when the norm is 0
  std::vector<double> mean;  // centred rows (pearson): the row mean
};

/// Row statistics of A for the plan, rows split over `threads` OpenMP threads.
RowStats row_stats(MatrixView<const float> A, const MetricPlan& plan, int threads);

/// dst row r = float(src row r - mean[r]), rows x d, both contiguous.
void centre_rows(const float* src, int64_t rows, int64_t d, const double* mean, float* dst);

/// c[i * ldc + j] = sum_t a[i * d + t] * b[j * d + t]: C = A B^T through cblas_sgemm on the
/// calling thread's BLAS.
void gemm_nt(const float* a, int64_t rows_a, const float* b, int64_t rows_b, int64_t d, float* c, int64_t ldc);

}  // namespace simkit::detail
