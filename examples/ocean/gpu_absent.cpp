// Stands in for the GPU solver where simkit was built without CUDA.

#include <stdexcept>
#include <string>

#include "ocean.hpp"

namespace ocean {

bool gpu_solver_compiled() { return false; }

std::string gpu_tile_description() { return "none (no CUDA in this build)"; }

SolveResult solve_gpu(const Problem&, const SolveSettings&) {
  throw std::runtime_error("this build has no GPU solver (simkit was built without CUDA)");
}

}  // namespace ocean
