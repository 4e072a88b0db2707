#pragma once
// One metric tile: the values metric(q_i, x_j) for a block of query rows against a block of
// base rows, written to device memory, as the metric plan says (core/metric_plan.hpp). Shared
// by pairwise and the k-NN host fallback.
//
//   prepared rows  product of the prepared rows (normalised: cosine; centred and normalised:
//                  pearson; zero rows stay zero, so their values are 0), or the raw product (dot)
//   expanded       -2 x product, then the epilogue adds the squared norms, clamps at 0 and
//                  recomputes directly where cancellation would eat the digits (epilogue.hpp)
//   no product     the tiled l1 kernel (l1_tile.cuh)

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/metric_plan.hpp"

#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

struct Operand {
  const float* raw = nullptr;       // rows x d, stride d, device
  const float* prep = nullptr;      // what the product reads (raw, or the prepared copy)
  const float* sq_norms = nullptr;  // l2 / sqeuclidean
};

/// True when prepare_operand reads every row (and can flag a NaN or Inf on the way).
inline bool reads_rows(const MetricPlan& plan) { return plan.prep != RowPrep::none || plan.expanded; }

/// Floats of device scratch prepare_operand needs for `rows` rows. When `raw_writable`, the
/// raw rows are our own staging copy and cosine / pearson prepare them in place.
size_t operand_scratch_floats(const MetricPlan& plan, int64_t rows, int64_t d, bool raw_writable);

/// Prepares rows x d raw device rows for metric_tile; `scratch` has operand_scratch_floats.
/// When `non_finite` is given, the plans that read every row here (prepared or expanded) set it
/// to 1 on a NaN or Inf (reads_rows false: the caller checks with flag_non_finite).
Operand prepare_operand(const MetricPlan& plan, const float* raw, bool raw_writable, int64_t rows, int64_t d,
                        float* scratch, cudaStream_t stream, int* non_finite = nullptr);

/// out[i * ldo + j] = metric(q_i, x_j), i < m, j < n.
void metric_tile(Resources& r, cudaStream_t stream, const MetricPlan& plan, const Operand& q, int64_t m,
                 const Operand& x, int64_t n, int64_t d, float* out, int64_t ldo, void* workspace,
                 size_t workspace_bytes);

}  // namespace simkit::detail::cuda
