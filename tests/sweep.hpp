#pragma once
// What the accuracy tests sweep: both backends, every metric at the awkward dimensions the
// contract names, and the test names those parameters give.

#include <cstdint>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <simkit/metric.hpp>

#include "contexts.hpp"
#include "reference.hpp"

namespace simkit::test {

inline constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                                      Metric::dot, Metric::pearson,     Metric::l1};

/// d = 1 and 3 sit below every vector width; 127 is prime; 384 and 1000 are the workloads' sizes.
inline constexpr int64_t kAwkwardDims[] = {1, 3, 127, 384, 1000};

inline std::string name_of(Metric metric, int64_t d) {
  return std::string(to_string(metric)) + "_d" + std::to_string(d);
}

/// Base of the (backend, metric, d) suites: the run's seed, traced in every failure so it can be
/// replayed.
class BackendMetricDimSweep : public ::testing::TestWithParam<std::tuple<Backend, Metric, int64_t>> {
 protected:
  const uint64_t seed = test_seed();

 private:
  const ::testing::ScopedTrace trace_{__FILE__, __LINE__, "seed " + std::to_string(seed)};
};

/// Every backend, metric and awkward dimension.
inline auto backend_metric_dims() {
  return ::testing::Combine(::testing::ValuesIn(kBackends), ::testing::ValuesIn(kMetrics),
                            ::testing::ValuesIn(kAwkwardDims));
}

/// Names the cases of a (backend, metric, d) suite with the backend last, e.g. "cosine_d127_gpu".
struct BackendMetricDimName {
  std::string operator()(const ::testing::TestParamInfo<std::tuple<Backend, Metric, int64_t>>& info) const {
    return name_of(std::get<1>(info.param), std::get<2>(info.param)) + "_" + backend_name(std::get<0>(info.param));
  }
};

}  // namespace simkit::test
