#pragma once
// The seam between the k-NN entry (core/knn.cpp) and the low-dimensional point tree that serves
// some of its calls (src/spatial/tree_knn.cpp): what the tree takes, and the call itself.

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>
#include <simkit/tree.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

/// Empty when the tree serves `metric` in dimension d with k neighbours on `device`, else why
/// not (for Error(unsupported)); k = 0 leaves k out (radius search).
const char* tree_refusal(Metric metric, int64_t d, int64_t k = 0, Device device = Device::cpu);

/// k-NN through the tree on `device` (the backend the call resolved to): inputs checked by the
/// caller, tree_refusal empty.
TreeReport tree_knn(const Context& ctx, Device device, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                    const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids,
                    const TreeOptions& options);

}  // namespace simkit::detail
