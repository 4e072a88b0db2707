// The CPU backend object, and the two operations that are not a capability file of their own.
#include "cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/ifgt_plan.hpp"

namespace simkit::detail {

const Backend& cpu_backend() {
  static const cpu::CpuBackend backend;
  return backend;
}

namespace cpu {

IfgtSample CpuBackend::ifgt_sample(const Context&, MatrixView<const float> X, MatrixView<const float> Y) const {
  return detail::ifgt_sample(X, Y);
}

// Chunks scanned branch-free (the exponent bits of NaN and Inf are all ones), which the
// compiler vectorises: ~4x faster than a test-and-branch loop, i.e. ~15 ms instead of ~57 ms
// on 128M floats.
bool CpuBackend::all_finite(const Context&, MatrixView<const float> m) const {
  const int64_t n = m.size();
  constexpr int64_t kChunk = int64_t{1} << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  uint32_t bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > (1 << 20))
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
    uint32_t any = 0;
    for (int64_t i = lo; i < hi; ++i) {
      uint32_t bits;
      std::memcpy(&bits, m.data + i, sizeof bits);
      any |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    bad |= any;
  }
  return bad == 0;
}

}  // namespace cpu
}  // namespace simkit::detail
