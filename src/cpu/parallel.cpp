#include "cpu/parallel.hpp"

#include <mutex>

#include <cblas.h>

namespace simkit::detail::cpu {

int cpu_threads(const Context& ctx) {
  if (ctx.threads > 0) return ctx.threads;
#ifdef _OPENMP
  return std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

namespace {
// Shared by every live BlasSerialScope in the process.
std::mutex blas_mutex;
int blas_depth = 0;  // scopes alive
int blas_saved = 1;  // OpenBLAS thread count to restore when the last scope ends
}  // namespace

BlasSerialScope::BlasSerialScope() {
  std::lock_guard<std::mutex> lock(blas_mutex);
  if (blas_depth++ == 0) {
    blas_saved = openblas_get_num_threads();
    if (blas_saved != 1) openblas_set_num_threads(1);
  }
}

BlasSerialScope::~BlasSerialScope() {
  std::lock_guard<std::mutex> lock(blas_mutex);
  if (--blas_depth == 0 && blas_saved != 1) openblas_set_num_threads(blas_saved);
}

}  // namespace simkit::detail::cpu
