#pragma once
// The seam between the k-NN entry (core/knn.cpp) and the low-dimensional point tree that serves
// some of its calls (src/spatial/tree_knn.cpp): what the tree takes, and the call itself.

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

/// Empty when the tree serves `metric` in dimension d, else why not (for Error(unsupported)).
const char* tree_refusal(Metric metric, int64_t d);

/// k-NN through the tree: host inputs and outputs, checked by the caller, tree_refusal empty.
void tree_knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
              const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids);

}  // namespace simkit::detail
