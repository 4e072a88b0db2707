#include "core/rescore.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/exact_metric.hpp"

namespace simkit::detail {

namespace {

// scratch holds the (key, id) pairs of one row; returns the k-th key (+inf with fewer than k).
double rank(const MetricPlan& plan, ExactPairs& scratch, int64_t k, float* values, int64_t* out_ids) {
  const int64_t count = static_cast<int64_t>(scratch.size());
  const int64_t best = std::min(k, count);
  std::partial_sort(scratch.begin(), scratch.begin() + best, scratch.end());
  for (int64_t p = 0; p < k; ++p) {
    const bool empty = p >= best || scratch[size_t(p)].second == kEmptyId;
    values[p] = empty ? std::numeric_limits<float>::quiet_NaN()
                      : static_cast<float>(plan.value_of_key(scratch[size_t(p)].first));
    out_ids[p] = empty ? -1 : scratch[size_t(p)].second;
  }
  return best == k && k > 0 ? scratch[size_t(k - 1)].first : std::numeric_limits<double>::infinity();
}

}  // namespace

void rank_pairs(const MetricPlan& plan, ExactPairs& pairs, int64_t k, float* values, int64_t* out_ids) {
  rank(plan, pairs, k, values, out_ids);
}

double rescore_rank(const MetricPlan& plan, const float* q, MatrixView<const float> X, const int64_t* ids,
                    int64_t count, int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch) {
  const int64_t d = X.cols;
  scratch.clear();
  for (int64_t c = 0; c < count; ++c) {
    const int64_t id = ids[c];
    const double key =
        id == kEmptyId ? std::numeric_limits<double>::infinity() : exact_key(plan.exact, q, X.row(id), d);
    scratch.emplace_back(key, id);
  }
  return rank(plan, scratch, k, values, out_ids);
}

void rescore_all(const MetricPlan& plan, const float* q, MatrixView<const float> X, const uint64_t* mask, double upper,
                 int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch) {
  scratch.clear();
  for (int64_t j = 0; j < X.rows; ++j) {
    if (mask != nullptr && ((mask[j >> 6] >> (j & 63)) & 1u) == 0) continue;
    const double key = exact_key(plan.exact, q, X.row(j), X.cols);
    // Every row of the rule's best k has a key <= upper; the test keeps the scratch short.
    if (!(key > upper)) scratch.emplace_back(key, j);
  }
  rank(plan, scratch, k, values, out_ids);
}

double max_row_norm(MatrixView<const float> X) {
  double most = 0;
#pragma omp parallel for schedule(static) reduction(max : most) if (X.rows * X.cols > (1 << 16))
  for (int64_t j = 0; j < X.rows; ++j) most = std::max(most, query_shift(X.row(j), nullptr, X.cols));
  return std::sqrt(most);
}

double query_shift(const float* q, const float* c, int64_t d) {
  double s = 0;
  for (int64_t t = 0; t < d; ++t) {
    const double e = static_cast<double>(q[t]) - (c != nullptr ? static_cast<double>(c[t]) : 0.0);
    s += e * e;
  }
  return s;
}

KnnCheck KnnCheck::make(const MetricPlan& plan, MatrixView<const float> X, const uint64_t* mask, double relative) {
  KnnCheck c;
  c.plan = plan;
  c.X = X;
  c.mask = mask;
  c.bound.form = plan.exact;
  c.bound.eps = fp32_product_eps(X.cols);
  c.bound.relative = relative;
  // The only bound that needs the base: dot's error grows with the norm of the row.
  if (plan.exact == ExactForm::dot && X.where == Memory::host) c.bound.x_max = max_row_norm(X);
  return c;
}

bool KnnCheck::settle(const float* q, bool all_kept, double kth, float worst, int64_t k, float* values,
                      int64_t* out_ids, ExactPairs& scratch) const {
  if (all_kept || !knn_checked(bound.form)) return false;
  const int64_t d = X.cols;
  double shift = 0, u_norm = 0;
  if (bound.form != ExactForm::cosine) {
    shift = query_shift(q, centre, d);
    u_norm = std::sqrt(shift);
    if (bound.form == ExactForm::dot || !gpu_keys) shift = 0;
  }
  if (knn_settled(kth, shift, knn_key_error(bound, u_norm, kth), worst)) return false;
  rescore_all(plan, q, X, mask, kth, k, values, out_ids, scratch);
  return true;
}

void rescore_rank_rows(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, const int64_t* ids,
                       int64_t ids_stride, int64_t count, int64_t k, float* values, int64_t* out_ids,
                       const KnnCheck* check, const float* worst) {
#pragma omp parallel
  {
    ExactPairs scratch;
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < Q.rows; ++r) {
      const int64_t* row_ids = ids + r * ids_stride;
      const double kth = rescore_rank(plan, Q.row(r), X, row_ids, count, k, values + r * k, out_ids + r * k, scratch);
      if (check != nullptr)
        check->settle(Q.row(r), row_ids[count - 1] == kEmptyId, kth, worst[r], k, values + r * k, out_ids + r * k,
                      scratch);
    }
  }
}

void rank_exact_rows(const MetricPlan& plan, const double* keys, const int64_t* ids, int64_t rows, int64_t count,
                     int64_t k, float* values, int64_t* out_ids) {
#pragma omp parallel
  {
    ExactPairs scratch;
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; ++r) {
      scratch.clear();
      for (int64_t c = 0; c < count; ++c) scratch.emplace_back(keys[r * count + c], ids[r * count + c]);
      rank(plan, scratch, k, values + r * k, out_ids + r * k);
    }
  }
}

}  // namespace simkit::detail
