// CPU strategy 2: the query rows shared among OpenMP threads (dynamic schedule, as the study's
// parallel_compare_one_to_many); each thread runs its rows' pairs in sequence. Every thread
// streams the whole base per row, so the base is read m times from memory or cache.

#include "pair_metrics.hpp"

namespace simkit::strategies {

void cpu_query_parallel(const Problem& p, StudyMetric metric, float* out, int threads) {
  with_metric(metric, [&](auto M) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) out[i * p.n + j] = pair_value<M.value>(p.Q + i * p.d, p.X + j * p.d, p.d);
  });
}

}  // namespace simkit::strategies
