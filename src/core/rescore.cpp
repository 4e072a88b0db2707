#include "core/rescore.hpp"

#include <algorithm>
#include <limits>

#include "core/exact_metric.hpp"

namespace simkit::detail {

namespace {

// scratch holds the (key, id) pairs of one row.
void rank(const MetricPlan& plan, ExactPairs& scratch, int64_t k, float* values, int64_t* out_ids) {
  const int64_t count = static_cast<int64_t>(scratch.size());
  const int64_t best = std::min(k, count);
  std::partial_sort(scratch.begin(), scratch.begin() + best, scratch.end());
  for (int64_t p = 0; p < k; ++p) {
    const bool empty = p >= best || scratch[size_t(p)].second == kEmptyId;
    values[p] = empty ? std::numeric_limits<float>::quiet_NaN()
                      : static_cast<float>(plan.value_of_key(scratch[size_t(p)].first));
    out_ids[p] = empty ? -1 : scratch[size_t(p)].second;
  }
}

}  // namespace

void rescore_rank(const MetricPlan& plan, const float* q, MatrixView<const float> X, const int64_t* ids, int64_t count,
                  int64_t k, float* values, int64_t* out_ids, ExactPairs& scratch) {
  const int64_t d = X.cols;
  scratch.clear();
  for (int64_t c = 0; c < count; ++c) {
    const int64_t id = ids[c];
    const double key =
        id == kEmptyId ? std::numeric_limits<double>::infinity() : exact_key(plan.exact, q, X.row(id), d);
    scratch.emplace_back(key, id);
  }
  rank(plan, scratch, k, values, out_ids);
}

void rescore_rank_rows(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, const int64_t* ids,
                       int64_t ids_stride, int64_t count, int64_t k, float* values, int64_t* out_ids) {
#pragma omp parallel
  {
    ExactPairs scratch;
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < Q.rows; ++r)
      rescore_rank(plan, Q.row(r), X, ids + r * ids_stride, count, k, values + r * k, out_ids + r * k, scratch);
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
