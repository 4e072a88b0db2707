// PLACEHOLDER while the IFGT is written (issue #3): refuses, so that everything links.
#include <simkit/error.hpp>

#include "core/backend.hpp"

namespace simkit::detail::cpu {

IfgtChoice choose_ifgt(const Context&, MatrixView<const float>, const double*, MatrixView<const float>, double,
                       double) {
  IfgtChoice c;
  c.why = "the IFGT is not built yet";
  return c;
}

void gauss_ifgt(const Context&, MatrixView<const float>, const double*, MatrixView<const float>, double,
                const IfgtChoice&, double*) {
  throw Error(ErrorCode::unsupported, "the IFGT is not built yet");
}

}  // namespace simkit::detail::cpu
