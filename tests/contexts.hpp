#pragma once
// A Context per backend, the backend parameter of the suites written once for both, what a
// progress callback reports, and the rule by which GPU tests skip where no GPU answers.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/context.hpp>

namespace simkit::test {

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

/// The backend a suite written once for both runs on. The name of every gpu instance ends in
/// "gpu" ("/gpu" alone, "_gpu" after other parameters): tests/CMakeLists.txt labels by it.
enum class Backend { cpu, gpu };

inline constexpr Backend kBackends[] = {Backend::cpu, Backend::gpu};

inline const char* backend_name(Backend backend) { return backend == Backend::gpu ? "gpu" : "cpu"; }

/// How gtest prints the parameter in its messages ("GetParam() = gpu").
inline void PrintTo(Backend backend, std::ostream* os) { *os << backend_name(backend); }

/// The default Context of `backend`: all CPU threads, or the default GPU memory budget. Tests of
/// thread counts or budgets build theirs with cpu_context() / gpu_context().
inline Context context_for(Backend backend) { return backend == Backend::gpu ? gpu_context() : cpu_context(); }

/// Base of the suites parameterised by the backend alone.
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  Backend backend() const { return GetParam(); }
  Context context() const { return context_for(GetParam()); }
  bool on_gpu() const { return GetParam() == Backend::gpu; }
};

/// Names the instances of a BackendTest suite "cpu" and "gpu".
struct BackendName {
  std::string operator()(const ::testing::TestParamInfo<Backend>& info) const { return backend_name(info.param); }
};

/// Records the fractions a Context's progress callback reports. Callers may update a progress
/// bar from the callback, so every report must come from the thread that made the call.
class ProgressLog {
 public:
  /// Installs the recorder on ctx, from the thread that will make the call.
  explicit ProgressLog(Context& ctx) : caller_(std::this_thread::get_id()) {
    ctx.progress = [this](double f) {
      other_thread_ |= std::this_thread::get_id() != caller_;
      seen_.push_back(f);
    };
  }
  ProgressLog(const ProgressLog&) = delete;  // the callback holds `this`
  ProgressLog& operator=(const ProgressLog&) = delete;

  /// At least one report, all from the caller, never decreasing, within [0, 1], the last 1.
  void expect_well_formed(const std::string& label) const {
    ASSERT_FALSE(seen_.empty()) << label;
    EXPECT_FALSE(other_thread_) << label;
    EXPECT_TRUE(std::is_sorted(seen_.begin(), seen_.end())) << label;
    EXPECT_GE(seen_.front(), 0.0) << label;
    EXPECT_EQ(seen_.back(), 1.0) << label;
  }

 private:
  std::thread::id caller_;
  bool other_thread_ = false;
  std::vector<double> seen_;
};

}  // namespace simkit::test

// First statement of every GPU test: skips it, saying why, where no CUDA device is visible
// (CI has nvcc but no GPU, so the gpu-labelled tests build there and skip).
#define SIMKIT_REQUIRE_GPU()                                                               \
  do {                                                                                     \
    if (::simkit::gpus().empty())                                                          \
      GTEST_SKIP() << "no CUDA device visible: "                                           \
                   << (::simkit::built_with_cuda() ? "no GPU answers" : "CPU-only build"); \
  } while (0)

// First statement of every test written for both backends: its gpu instance skips as
// SIMKIT_REQUIRE_GPU() does, its cpu instance always runs.
#define SIMKIT_REQUIRE_BACKEND(backend)                                  \
  do {                                                                   \
    if ((backend) == ::simkit::test::Backend::gpu) SIMKIT_REQUIRE_GPU(); \
  } while (0)
