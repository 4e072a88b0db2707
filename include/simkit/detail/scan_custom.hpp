#pragma once
// The blocked two-pass CPU scan behind primitives.hpp's custom-operator scans (and, with the
// built-in operators, behind the CPU backend's own). Not part of the API; included by
// primitives.hpp because a template taking the caller's operator must be seen by the caller.
//
// The array is cut in blocks of kScanBlock elements, a size fixed by n alone: pass 1 folds
// each block (in parallel), a serial scan of the block totals gives each block its carry, and
// pass 2 scans each block from its carry (in parallel), the two passes taken a round of blocks
// at a time so that pass 2 finds its blocks in cache (scan_in_rounds). Because the cut does
// not depend on the thread count, neither does the rounding of a float scan.

#include <algorithm>
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
/// library); the first exception a body throws is rethrown once all have stopped. When count
/// is at most cpu_parallel_width(ctx), body(i) runs on the i-th thread of the team, the same
/// thread from one call to the next.
void cpu_parallel_for(const Context& ctx, int64_t count, const std::function<void(int64_t)>& body);

/// How many threads cpu_parallel_for uses for ctx (at least 1).
int cpu_parallel_width(const Context& ctx);

/// The schedule of the CPU scans: blocks [0, blocks) of block_bytes each go in rounds of `per`
/// consecutive blocks per thread (about 512 KiB a thread, half an L2 of today's x86 cores).
/// Each round runs fold(b) for its blocks in parallel, then settle(first, count) serially, then
/// scan(b) in parallel, every thread on the blocks it just folded, which are still in its
/// cache: the array crosses the memory bus twice (read, write) instead of three times.
template <class Fold, class Settle, class Scan>
void scan_in_rounds(const Context& ctx, int64_t blocks, int64_t block_bytes, Fold&& fold, Settle&& settle,
                    Scan&& scan) {
  const int64_t per = std::max<int64_t>(1, (int64_t{512} << 10) / std::max<int64_t>(block_bytes, 1));
  const int64_t team = std::min<int64_t>(std::max(cpu_parallel_width(ctx), 1), (blocks + per - 1) / per);
  for (int64_t first = 0; first < blocks; first += team * per) {
    const int64_t count = std::min(team * per, blocks - first), threads = (count + per - 1) / per;
    cpu_parallel_for(ctx, threads, [&](int64_t t) {
      for (int64_t b = first + t * per; b < first + std::min((t + 1) * per, count); ++b) fold(b);
    });
    settle(first, count);
    cpu_parallel_for(ctx, threads, [&](int64_t t) {
      for (int64_t b = first + t * per; b < first + std::min((t + 1) * per, count); ++b) scan(b);
    });
  }
}

/// out may equal in. exclusive: out[i] = identity op in[0] ... op in[i - 1]. Blocks and the
/// order of every fold are those of the block cut alone (scan_in_rounds only schedules them),
/// so the result is the same whatever the thread count.
template <class T, class Op>
void blocked_scan(const Context& ctx, const T* in, T* out, int64_t n, Op op, T identity, bool exclusive) {
  const int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  auto scan_block = [&](int64_t b, T running) {
    const int64_t lo = b * kScanBlock, hi = lo + kScanBlock < n ? lo + kScanBlock : n;
    if (exclusive) {
      for (int64_t i = lo; i < hi; ++i) {
        const T v = in[i];  // read before the write: in may be out
        out[i] = running;
        running = op(running, v);
      }
    } else {
      for (int64_t i = lo; i < hi; ++i) out[i] = running = op(running, in[i]);
    }
  };
  if (blocks <= 1) {
    if (n > 0) scan_block(0, identity);
    return;
  }
  std::vector<T> carry(static_cast<size_t>(blocks));  // block totals, then each block's carry
  T running = identity;
  scan_in_rounds(
      ctx, blocks, kScanBlock * int64_t(sizeof(T)),
      [&](int64_t b) {
        const int64_t lo = b * kScanBlock, hi = lo + kScanBlock < n ? lo + kScanBlock : n;
        T total = in[lo];
        for (int64_t k = lo + 1; k < hi; ++k) total = op(total, in[k]);
        carry[static_cast<size_t>(b)] = total;
      },
      [&](int64_t first, int64_t count) {
        for (int64_t b = first; b < first + count; ++b) {
          const T total = carry[static_cast<size_t>(b)];
          carry[static_cast<size_t>(b)] = running;
          running = op(running, total);
        }
      },
      [&](int64_t b) { scan_block(b, carry[static_cast<size_t>(b)]); });
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
