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

#include "core/knn_certify.hpp"
#include "core/metric_plan.hpp"

namespace simkit::detail {

inline constexpr int64_t kEmptyId = std::numeric_limits<int64_t>::max();

using ExactPairs = std::vector<std::pair<double, int64_t>>;

/// One query q against the `count` candidate rows ids[0..count) of X: the best k, best first.
/// `scratch` is reused between calls. Returns the k-th best key (+inf with fewer than k).
double rescore_rank(const MetricPlan& plan, const float* q, MatrixView<const float> X, const int64_t* ids,
                    int64_t count, int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch);

/// The exact pass for a query its candidates did not settle (core/knn_certify.hpp): every row
/// of X allowed by `mask` (bit r of word r / 64; null: all) scored in float64, those with a key
/// above `upper` (an upper bound on the k-th best key; NaN: none) dropped, the best k written.
void rescore_all(const MetricPlan& plan, const float* q, MatrixView<const float> X, const uint64_t* mask, double upper,
                 int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch);

/// The (key, id) pairs in `pairs` ranked, the best k written as the metric's values.
void rank_pairs(const MetricPlan& plan, ExactPairs& pairs, int64_t k, float* values, int64_t* out_ids);

/// The largest norm of a row of host X (OpenMP over rows): KnnBound::x_max.
double max_row_norm(MatrixView<const float> X);

/// ||q - c||^2 in float64 over d coordinates (c null: ||q||^2).
double query_shift(const float* q, const float* c, int64_t d);

/// The check of core/knn_certify.hpp on the host, fixed for one k-NN call.
struct KnnCheck {
  MetricPlan plan;
  KnnBound bound;
  MatrixView<const float> X;
  const uint64_t* mask = nullptr;
  const float* centre = nullptr;  // the GPU's translation of sqdist keys (d floats), or null
  bool gpu_keys = false;          // sqdist keys leave ||q - centre||^2 out (the GPU's), else whole

  /// The bound of a call: eps for d and, for dot, the largest base norm (for a device X the
  /// caller sets bound.x_max); `relative` as KnnBound::relative.
  static KnnCheck make(const MetricPlan& plan, MatrixView<const float> X, const uint64_t* mask, double relative = 0);

  /// After rescore_rank wrote query q's best k from its candidates: unless every allowed row
  /// was kept, the k-th key `kth` and the worst kept float key `worst` settle the query, or it
  /// is redone by rescore_all. True when it was redone.
  bool settle(const float* q, bool all_kept, double kth, float worst, int64_t k, float* values, int64_t* out_ids,
              ExactPairs& scratch) const;
};

/// rescore_rank for `rows` queries (Q rows, stride Q.cols), the candidates of row r at
/// ids[r * ids_stride ..], outputs row-major with stride k; OpenMP over the rows. With `check`,
/// each query is then settled (KnnCheck::settle) by worst[r], the float key of its last
/// candidate (every allowed row was kept when that slot is empty).
void rescore_rank_rows(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, const int64_t* ids,
                       int64_t ids_stride, int64_t count, int64_t k, float* values, int64_t* out_ids,
                       const KnnCheck* check = nullptr, const float* worst = nullptr);

/// The ranking half alone, for keys computed elsewhere (the device): each row's `count`
/// (keys[r * count + c], ids[r * count + c]) pairs ranked by (key, id), the best k written as
/// the metric's values; OpenMP over the rows.
void rank_exact_rows(const MetricPlan& plan, const double* keys, const int64_t* ids, int64_t rows, int64_t count,
                     int64_t k, float* values, int64_t* out_ids);

}  // namespace simkit::detail
