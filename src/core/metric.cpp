#include <simkit/error.hpp>
#include <simkit/metric.hpp>

#include <array>
#include <string>

namespace simkit {

namespace {
constexpr std::array<Metric, 6> kAll = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                                        Metric::dot, Metric::pearson,     Metric::l1};
}

const char* to_string(Metric m) noexcept {
  switch (m) {
    case Metric::l2: return "l2";
    case Metric::sqeuclidean: return "sqeuclidean";
    case Metric::cosine: return "cosine";
    case Metric::dot: return "dot";
    case Metric::pearson: return "pearson";
    case Metric::l1: return "l1";
  }
  return "?";
}

Metric parse_metric(std::string_view name) {
  for (Metric m : kAll)
    if (name == to_string(m)) return m;
  throw Error(ErrorCode::invalid_argument, "unknown metric " + simkit::quoted(name) +
                                               " (expected one of: l2, sqeuclidean, cosine, dot, pearson, l1)");
}

}  // namespace simkit
