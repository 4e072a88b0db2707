// The study's metric names.

#include <stdexcept>

#include "strategies.hpp"

namespace simkit::strategies {

const char* name(StudyMetric metric) {
  switch (metric) {
    case StudyMetric::euclidean: return "euclidean";
    case StudyMetric::cosine: return "cosine";
    case StudyMetric::pearson: return "pearson";
    case StudyMetric::pearson_opt: break;
  }
  return "pearson_opt";
}

StudyMetric parse_study_metric(const std::string& text) {
  for (StudyMetric m : {StudyMetric::euclidean, StudyMetric::cosine, StudyMetric::pearson, StudyMetric::pearson_opt})
    if (text == name(m)) return m;
  throw std::invalid_argument("unknown metric '" + text + "' (the study's: euclidean, cosine, pearson, pearson_opt)");
}

}  // namespace simkit::strategies
