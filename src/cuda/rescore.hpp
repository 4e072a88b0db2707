#pragma once
// The k-NN re-score rule on the device: the float64 key of each candidate, the same forms and
// zero-row conventions as core/exact_metric.hpp on the host. The keys are then ranked by
// (key, id) with sort_output (select/top_k_lists.hpp), as core/rescore.cpp does on the host.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/knn_certify.hpp"
#include "core/metric_plan.hpp"
#include "cuda/select/top_k_lists.hpp"

namespace simkit::detail::cuda {

/// keys[r * key_stride + c] = the float64 key (smaller is better) of query row r against base
/// row ids[r * ids_stride + c], for c < kc, r < rows; an empty slot (id INT64_MAX) gives +inf.
/// Q and X are device rows (strides ldq, ldx). `form` is not ExactForm::none.
void rescore_keys(ExactForm form, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
                  const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc,
                  cudaStream_t stream);

/// The check of core/knn_certify.hpp for a batch of device queries, one per row r < rows: Q raw
/// rows (stride ldq); the selection's lists (list_keys, list_ids, stride C, the kc-th entry the
/// worst kept); the sorted output values (stride k, the k-th one gives U through
/// key_upper_of_value). `centre` (d floats) is the translation of sqdist keys, or null.
/// upper[r] = NaN where the query is settled, else U, the bound its exact pass filters by.
struct UnsettledArgs {
  KnnBound bound;
  KeyToValue to;
  const float* Q;
  int64_t ldq, d;
  const float* centre;
  const float* list_keys;
  const int64_t* list_ids;
  int64_t C, kc;
  const float* values;
  int64_t k, rows;
};
void unsettled_queries(const UnsettledArgs& a, double* upper, cudaStream_t stream);

/// keys[c] = the float64 key of query q (device, d floats) against base row j0 + c of X, c < count.
void exact_keys_rows(ExactForm form, const float* q, const float* X, int64_t ldx, int64_t d, int64_t j0, int64_t count,
                     double* keys, cudaStream_t stream);

/// *out = the largest squared norm of a row of device X (n x d, stride ldx) as the bits of a
/// double (non-negative doubles order as their bits do); *out must start at 0.
void max_sq_norm(const float* X, int64_t ldx, int64_t n, int64_t d, unsigned long long* out, cudaStream_t stream);

}  // namespace simkit::detail::cuda
