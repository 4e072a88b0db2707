// Scans and segmented scans on the CPU: the two-pass blocked scan of detail/scan_custom.hpp for
// plain scans; for segmented ones the same blocks, each folding (does it hold a segment start,
// the fold since its last start) in pass 1, so that a block's carry stops at its first start.
// Offsets are turned into head flags first (n bytes).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <simkit/detail/scan_custom.hpp>

#include "core/parallel.hpp"
#include "core/scan_ops.hpp"
#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

namespace {

template <class T, class Op>
void segmented_blocked_scan(const Context& ctx, const T* in, const uint8_t* heads, T* out, int64_t n, Op op,
                            bool exclusive) {
  const T identity = Op::identity();
  const int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  auto scan_block = [&](int64_t b, T running) {
    const int64_t lo = b * kScanBlock, hi = std::min(n, lo + kScanBlock);
    for (int64_t i = lo; i < hi; ++i) {
      const T v = in[i];
      if (i == 0 || heads[i] != 0) running = identity;
      const T next = op(running, v);
      out[i] = exclusive ? running : next;
      running = next;
    }
  };
  if (blocks <= 1) {
    if (n > 0) scan_block(0, identity);
    return;
  }
  // The same schedule as blocked_scan (detail/scan_custom.hpp). Pass 1 folds each block into
  // (does it hold a segment start, the fold since its last start); carry[b] becomes the fold of
  // the segment open where block b begins.
  std::vector<uint8_t> starts(static_cast<size_t>(blocks));
  std::vector<T> carry(static_cast<size_t>(blocks));
  T running = identity;
  scan_in_rounds(
      ctx, blocks, kScanBlock * int64_t(sizeof(T) + 1),
      [&](int64_t b) {
        const int64_t lo = b * kScanBlock, hi = std::min(n, lo + kScanBlock);
        bool start = false;
        T acc = identity;
        for (int64_t k = lo; k < hi; ++k) {
          if (k == 0 || heads[k] != 0) start = true, acc = identity;
          acc = op(acc, in[k]);
        }
        starts[static_cast<size_t>(b)] = start;
        carry[static_cast<size_t>(b)] = acc;
      },
      [&](int64_t first, int64_t count) {
        for (int64_t b = first; b < first + count; ++b) {
          const T tail = carry[static_cast<size_t>(b)];
          carry[static_cast<size_t>(b)] = running;
          running = starts[static_cast<size_t>(b)] ? tail : op(running, tail);
        }
      },
      [&](int64_t b) { scan_block(b, carry[static_cast<size_t>(b)]); });
}

template <class I>
std::vector<uint8_t> heads_from_offsets(const I* offsets, int64_t segments, int64_t n) {
  std::vector<uint8_t> heads(static_cast<size_t>(n), 0);
  for (int64_t s = 0; s < segments; ++s)
    if (offsets[s] < n) heads[static_cast<size_t>(offsets[s])] = 1;
  return heads;
}

template <class T>
void scan_typed(const Context& ctx, const ScanArgs& a) {
  const T* in = a.in.as<const T>();
  T* out = a.out.as<T>();
  const int64_t n = a.in.size;
  with_scan_op<T>(a.op, [&](auto op) {
    using Op = decltype(op);
    if (!a.segments.present()) {
      blocked_scan(ctx, in, out, n, op, Op::identity(), a.exclusive);
      return;
    }
    std::vector<uint8_t> owned;
    const uint8_t* heads = a.segments.as<const uint8_t>();
    if (a.segments.type == Dtype::i32)
      owned = heads_from_offsets(a.segments.as<const int32_t>(), a.segments.size - 1, n);
    else if (a.segments.type == Dtype::i64)
      owned = heads_from_offsets(a.segments.as<const int64_t>(), a.segments.size - 1, n);
    if (!owned.empty()) heads = owned.data();
    segmented_blocked_scan(ctx, in, heads, out, n, op, a.exclusive);
  });
}

}  // namespace

void CpuBackend::scan(const Context& ctx, const ScanArgs& a) const {
  translate_bad_alloc("scan", [&] {
    switch (a.in.type) {
      case Dtype::i32: return scan_typed<int32_t>(ctx, a);
      case Dtype::i64: return scan_typed<int64_t>(ctx, a);
      case Dtype::f32: return scan_typed<float>(ctx, a);
      case Dtype::f64: return scan_typed<double>(ctx, a);
      default: throw Error(ErrorCode::invalid_argument, "internal: scan of an unsupported element type");
    }
  });
}

}  // namespace simkit::detail::cpu
