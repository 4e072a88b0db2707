#pragma once
// The blocked two-pass CPU scan behind primitives.hpp's custom-operator scans (and, with the
// built-in operators, behind the CPU backend's own). Not part of the API; included by
// primitives.hpp because a template taking the caller's operator must be seen by the caller.
//
// The array is cut in blocks of kScanBlock elements, a size fixed by n alone: pass 1 folds
// each block (in parallel), a serial scan of the block totals gives each block its carry, and
// pass 2 scans each block from its carry (in parallel). Because the cut does not depend on the
// thread count, neither does the rounding of a float scan.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>

namespace simkit::detail {

inline constexpr int64_t kScanBlock = int64_t{1} << 16;

/// Runs body(b) for every b in [0, count) on the CPU threads of ctx (OpenMP inside the
/// library); the first exception a body throws is rethrown once all have stopped.
void cpu_parallel_for(const Context& ctx, int64_t count, const std::function<void(int64_t)>& body);

/// out may equal in. exclusive: out[i] = identity op in[0] ... op in[i - 1].
template <class T, class Op>
void blocked_scan(const Context& ctx, const T* in, T* out, int64_t n, Op op, T identity, bool exclusive) {
  const int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  auto scan_block = [&](int64_t b, T running) {
    const int64_t lo = b * kScanBlock, hi = lo + kScanBlock < n ? lo + kScanBlock : n;
    for (int64_t i = lo; i < hi; ++i) {
      const T v = in[i];  // read before the write: in may be out
      const T next = op(running, v);
      out[i] = exclusive ? running : next;
      running = next;
    }
  };
  if (blocks <= 1) {
    if (n > 0) scan_block(0, identity);
    return;
  }
  std::vector<T> carry(static_cast<size_t>(blocks));
  cpu_parallel_for(ctx, blocks, [&](int64_t b) {
    const int64_t lo = b * kScanBlock, hi = lo + kScanBlock < n ? lo + kScanBlock : n;
    T total = in[lo];
    for (int64_t i = lo + 1; i < hi; ++i) total = op(total, in[i]);
    carry[static_cast<size_t>(b)] = total;
  });
  T running = identity;
  for (T& c : carry) {
    const T total = c;
    c = running;
    running = op(running, total);
  }
  cpu_parallel_for(ctx, blocks, [&](int64_t b) { scan_block(b, carry[static_cast<size_t>(b)]); });
}

template <class T>
void check_scan_spans(std::span<const T> in, std::span<T> out) {
  if (in.size() != out.size())
    throw Error(ErrorCode::invalid_argument,
                "scan: out has " + std::to_string(out.size()) + " elements but in has " + std::to_string(in.size()));
  const auto a = reinterpret_cast<std::uintptr_t>(in.data()), b = reinterpret_cast<std::uintptr_t>(out.data());
  const std::uintptr_t bytes = in.size() * sizeof(T);
  if (a != b && a < b + bytes && b < a + bytes)
    throw Error(ErrorCode::invalid_argument, "scan: in and out overlap without being the same array");
}

}  // namespace simkit::detail

namespace simkit {

template <class T, class Op>
void inclusive_scan(const Context& ctx, std::span<const T> in, std::span<T> out, Op op, T identity) {
  detail::check_scan_spans(in, out);
  detail::blocked_scan(ctx, in.data(), out.data(), static_cast<int64_t>(in.size()), op, identity, false);
}

template <class T, class Op>
void exclusive_scan(const Context& ctx, std::span<const T> in, std::span<T> out, Op op, T identity) {
  detail::check_scan_spans(in, out);
  detail::blocked_scan(ctx, in.data(), out.data(), static_cast<int64_t>(in.size()), op, identity, true);
}

}  // namespace simkit
