#pragma once
// The k-NN re-score rule on the device: the float64 key of each candidate, the same forms and
// zero-row conventions as core/exact_metric.hpp on the host. The keys are then ranked by
// (key, id) with sort_output (select/top_k_lists.hpp), as core/rescore.cpp does on the host.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/metric_plan.hpp"

namespace simkit::detail::cuda {

/// keys[r * key_stride + c] = the float64 key (smaller is better) of query row r against base
/// row ids[r * ids_stride + c], for c < kc, r < rows; an empty slot (id INT64_MAX) gives +inf.
/// Q and X are device rows (strides ldq, ldx). `form` is not ExactForm::none.
void rescore_keys(ExactForm form, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
                  const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc,
                  cudaStream_t stream);

}  // namespace simkit::detail::cuda
