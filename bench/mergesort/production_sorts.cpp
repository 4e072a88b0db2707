// The production sorts and the copy bandwidths of `simkit bench mergesort` (mergesort_timing.hpp).

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>
#if SIMKIT_MERGESORT_TBB
#include <execution>
#endif

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "mergesort_timing.hpp"

namespace simkit::mergesort {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Sets SIMKIT_PRIMITIVES_OWN for its lifetime (the sort route reads it at every call).
class OwnPrimitives {
 public:
  explicit OwnPrimitives(bool on) : on_(on) {
    if (on_) setenv("SIMKIT_PRIMITIVES_OWN", "1", 1);
  }
  ~OwnPrimitives() {
    if (on_) unsetenv("SIMKIT_PRIMITIVES_OWN");
  }
  OwnPrimitives(const OwnPrimitives&) = delete;
  OwnPrimitives& operator=(const OwnPrimitives&) = delete;

 private:
  bool on_;
};

}  // namespace

void parallel_std_sort(int32_t* v, int64_t n) {
#if SIMKIT_MERGESORT_TBB
  std::sort(std::execution::par, v, v + n);
#else
  std::sort(v, v + n);
#endif
}

const char* parallel_std_sort_name() {
#if SIMKIT_MERGESORT_TBB
  return "std::sort(par)";
#else
  return "std::sort(par: no TBB, serial)";
#endif
}

StudyTiming simkit_sort_gpu(const Context& ctx, int32_t* host, int64_t n, bool own) {
  const auto t0 = std::chrono::steady_clock::now();
  DeviceMatrix<int32_t> keys(ctx, MatrixView<const int32_t>(host, n, 1));
  synchronize(ctx);
  const auto t1 = std::chrono::steady_clock::now();
  {
    OwnPrimitives route(own);
    sort(ctx, ArrayView<int32_t>(keys.view()));
    synchronize(ctx);
  }
  StudyTiming t;
  t.kernel_ms = ms_since(t1);
  keys.copy_to_host(MatrixView<int32_t>(host, n, 1));
  t.total_ms = ms_since(t0);
  return t;
}

double host_copy_gbps() {
  const size_t bytes = size_t(256) << 20;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, ms_since(t0));
  }
  if (b[bytes / 2] != 1) throw Error(ErrorCode::io, "host_copy_gbps: the copy did not happen");
  return 2.0 * double(bytes) / (best * 1e6);
}

}  // namespace simkit::mergesort
