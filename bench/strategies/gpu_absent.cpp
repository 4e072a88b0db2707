// A build without CUDA has no GPU strategies (`simkit bench strategies --device gpu` says so).

#include "strategies.hpp"

namespace simkit::strategies {

const std::vector<GpuStrategy>& gpu_strategies() {
  static const std::vector<GpuStrategy> none;
  return none;
}

}  // namespace simkit::strategies
