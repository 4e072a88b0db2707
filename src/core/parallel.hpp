#pragma once
// Host threading, for the CPU backend and every host-side loop (index builds, the GPU's host
// halves): how many threads, how OpenMP and OpenBLAS share them, and a
// task loop that carries exceptions and progress out of the parallel region.
//
// Threading model. simkit owns the parallelism: work is cut into independent tiles and an
// OpenMP team (Context::threads threads, 0 = all) takes tiles dynamically. Every BLAS call
// made from a tile must then run on the calling thread only, or a pthread OpenBLAS would start
// its own workers on top of ours (oversubscription: 2 x 2 threads on 2 cores). So for the
// duration of a call we pin OpenBLAS to one thread (BlasSerialScope) and restore the previous
// count afterwards. That setting is process-wide in OpenBLAS 0.3.21; a reference count keeps
// concurrent simkit calls from restoring it under each other's feet. A caller who uses BLAS on
// another thread while simkit runs gets single-threaded BLAS for that time: correct, slower.
//
// The other obvious design, one multithreaded sgemm per tile with OpenMP only for the
// epilogue, was rejected: the epilogue and k-NN selection would then run behind a barrier
// after every product instead of overlapping with other tiles' products, and k-NN would need
// per-tile synchronisation.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <simkit/context.hpp>
#include <simkit/error.hpp>

namespace simkit::detail {

/// ctx.threads, or every hardware thread OpenMP reports when it is 0 (at least 1).
int cpu_threads(const Context& ctx);

/// While alive, OpenBLAS runs every call on the calling thread (see the header comment).
class BlasSerialScope {
 public:
  BlasSerialScope();
  ~BlasSerialScope();
  BlasSerialScope(const BlasSerialScope&) = delete;
  BlasSerialScope& operator=(const BlasSerialScope&) = delete;
};

/// Runs body(task, thread) for task in [0, tasks) on up to `threads` OpenMP threads, tasks
/// handed out one at a time. The first exception thrown by any task stops the handing out of
/// new tasks and is rethrown here once the team has joined. When ctx.progress is set, the
/// calling thread (OpenMP thread 0) reports lo + (hi - lo) * fraction-of-tasks-done after each
/// task it finishes.
template <class Body>
void run_tasks(const Context& ctx, int threads, int64_t tasks, Body&& body, double lo = 0.0, double hi = 1.0) {
  if (tasks <= 0) return;
  const int team = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, tasks)));
  std::atomic<bool> failed{false};
  std::atomic<int64_t> done{0};
  std::exception_ptr error;
#pragma omp parallel num_threads(team)
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
#else
    const int tid = 0;
#endif
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      if (failed.load(std::memory_order_relaxed)) continue;
      try {
        body(t, tid);
        const int64_t now = done.fetch_add(1, std::memory_order_relaxed) + 1;
        if (tid == 0 && ctx.progress) ctx.progress(lo + (hi - lo) * static_cast<double>(now) / tasks);
      } catch (...) {
#pragma omp critical(simkit_cpu_task_error)
        {
          if (!error) error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

/// Runs f() and turns std::bad_alloc into Error(out_of_memory) naming `what`.
template <class F>
void translate_bad_alloc(const char* what, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::out_of_memory, std::string(what) + ": out of host memory for working buffers");
  }
}

}  // namespace simkit::detail
