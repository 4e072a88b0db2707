#include "core/parallel.hpp"

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include <cblas.h>

#include <simkit/detail/scan_custom.hpp>

namespace simkit::detail {

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

}  // namespace simkit::detail

namespace simkit::detail {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

int cpu_parallel_width(const Context& ctx) { return cpu_threads(ctx); }

// Equal-sized pieces (the primitives cut their work so), so a static schedule: no per-piece
// hand-out cost, and neighbouring pieces stay on one thread.
void cpu_parallel_for(const Context& ctx, int64_t count, const std::function<void(int64_t)>& body) {
  if (count <= 0) return;
  const int team = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu_threads(ctx), count)));
  if (team == 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<bool> failed{false};
  std::exception_ptr error;
#pragma omp parallel for schedule(static) num_threads(team)
  for (int64_t i = 0; i < count; ++i) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      body(i);
    } catch (...) {
#pragma omp critical(simkit_cpu_parallel_for_error)
      {
        if (!error) error = std::current_exception();
      }
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace simkit::detail
