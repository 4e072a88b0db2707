#pragma once
// What every library test file needs besides the float64 reference: the metrics to sweep, a
// Context per backend, and the rule by which GPU tests skip where no GPU answers.

#include <cstddef>

#include <gtest/gtest.h>
#include <simkit/context.hpp>
#include <simkit/metric.hpp>

namespace simkit::test {

inline constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::cosine,
                                      Metric::dot, Metric::pearson,     Metric::l1};

inline Context cpu_context(int threads = 0) {
  Context ctx;
  ctx.device = Device::cpu;
  ctx.threads = threads;
  return ctx;
}

/// budget 0: the default (80% of free GPU memory).
inline Context gpu_context(size_t budget = 0) {
  Context ctx;
  ctx.device = Device::gpu;
  ctx.gpu_memory_budget = budget;
  return ctx;
}

}  // namespace simkit::test

// First statement of every GPU test: skips it, saying why, where no CUDA device is visible
// (CI has nvcc but no GPU, so the gpu-labelled tests build there and skip).
#define SIMKIT_REQUIRE_GPU()                                                               \
  do {                                                                                     \
    if (::simkit::gpus().empty())                                                          \
      GTEST_SKIP() << "no CUDA device visible: "                                           \
                   << (::simkit::built_with_cuda() ? "no GPU answers" : "CPU-only build"); \
  } while (0)
