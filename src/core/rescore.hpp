#pragma once
// The k-NN re-score rule on the host, shared by the CPU backend and by the CUDA backend when
// the base lives in host memory: each candidate's float64 key (core/exact_metric.hpp), ranked
// by (key, id), the best k written as the metric's values. The device does the same in
// cuda/rescore.cu. Ties go to the lower id; an empty slot (id kEmptyId) ranks last and comes
// out as (NaN, -1).

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

inline constexpr int64_t kEmptyId = std::numeric_limits<int64_t>::max();

using ExactPairs = std::vector<std::pair<double, int64_t>>;

/// One query q against the `count` candidate rows ids[0..count) of X: the best k, best first.
/// `scratch` is reused between calls.
void rescore_rank(const MetricPlan& plan, const float* q, MatrixView<const float> X, const int64_t* ids, int64_t count,
                  int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch);

/// rescore_rank for `rows` queries (Q rows, stride Q.cols), the candidates of row r at
/// ids[r * ids_stride ..], outputs row-major with stride k; OpenMP over the rows.
void rescore_rank_rows(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, const int64_t* ids,
                       int64_t ids_stride, int64_t count, int64_t k, float* values, int64_t* out_ids);

/// The ranking half alone, for keys computed elsewhere (the device): each row's `count`
/// (keys[r * count + c], ids[r * count + c]) pairs ranked by (key, id), the best k written as
/// the metric's values; OpenMP over the rows.
void rank_exact_rows(const MetricPlan& plan, const double* keys, const int64_t* ids, int64_t rows, int64_t count,
                     int64_t k, float* values, int64_t* out_ids);

}  // namespace simkit::detail
