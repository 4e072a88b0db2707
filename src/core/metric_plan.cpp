#include "core/metric_plan.hpp"

#include <simkit/error.hpp>

namespace simkit::detail {

MetricPlan plan_metric(Metric metric) {
  MetricPlan p;
  p.metric = metric;
  switch (metric) {
    case Metric::l2: p.root = true; [[fallthrough]];
    case Metric::sqeuclidean:
      p.expanded = true;
      p.exact = ExactForm::sqdist;
      return p;
    case Metric::dot:
      p.negate = true;
      p.exact = ExactForm::dot;
      return p;
    case Metric::cosine:
      p.negate = true;
      p.prep = RowPrep::normalize;
      p.exact = ExactForm::cosine;
      return p;
    case Metric::pearson:
      p.negate = true;
      p.prep = RowPrep::centre_normalize;
      p.exact = ExactForm::centred_cosine;
      return p;
    case Metric::l1: p.product = false; return p;
  }
  throw Error(ErrorCode::invalid_argument, "unknown metric");
}

}  // namespace simkit::detail
