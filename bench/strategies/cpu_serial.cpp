// CPU strategy 1: one thread, every pair in order, each pair's sums in sequence.

#include "pair_metrics.hpp"

namespace simkit::strategies {

void cpu_serial(const Problem& p, StudyMetric metric, float* out) {
  with_metric(metric, [&](auto M) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) out[i * p.n + j] = pair_value<M.value>(p.Q + i * p.d, p.X + j * p.d, p.d);
  });
}

}  // namespace simkit::strategies
