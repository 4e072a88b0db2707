// The public scans and segmented scans (primitives.hpp): argument checks, then the backend.
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include <string>

#include "core/primitives_check.hpp"

namespace simkit {

namespace {

using detail::Raw;

template <class T>
void run_scan(const Context& ctx, const char* fn, ArrayView<const T> in, ArrayView<T> out, Raw segments, ScanOp op,
              bool exclusive) {
  const Raw rin = detail::raw(in), rout = detail::raw(out);
  detail::check_length(fn, rin, in.size, "in");
  detail::check_length(fn, rout, in.size, "out");
  detail::check_apart(fn, rout, "out", rin, "in", /*same_ok=*/true);
  if (op != ScanOp::sum && op != ScanOp::product && op != ScanOp::min && op != ScanOp::max)
    detail::primitive_fail(fn, "unknown ScanOp");
  if (segments.type == detail::Dtype::u8) {
    detail::check_length(fn, segments, in.size, "heads");
    detail::check_apart(fn, rout, "out", segments, "heads");
  } else if (segments.present()) {
    if (segments.size < 1) detail::primitive_fail(fn, "offsets is empty (it needs at least the entry 0)");
    detail::check_length(fn, segments, segments.size, "offsets");
    detail::check_apart(fn, rout, "out", segments, "offsets");
    if (segments.where == Memory::host) {
      if (segments.type == detail::Dtype::i32)
        detail::check_offsets(fn, segments.as<const int32_t>(), segments.size, in.size, "offsets");
      else
        detail::check_offsets(fn, segments.as<const int64_t>(), segments.size, in.size, "offsets");
    }
  }
  if (in.size == 0) return;
  const detail::Backend& backend = detail::primitive_backend(ctx, fn, {rin, rout, segments});
  const detail::ScanArgs args{rin, rout, segments, op, exclusive};
  backend.scan(ctx, args);
}

}  // namespace

template <PrimitiveValue T>
void inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<T> out, ScanOp op) {
  run_scan<T>(ctx, "inclusive_scan", in, out, {}, op, false);
}

template <PrimitiveValue T>
void exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<T> out, ScanOp op) {
  run_scan<T>(ctx, "exclusive_scan", in, out, {}, op, true);
}

template <PrimitiveValue T>
void segmented_inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<const uint8_t> heads, ArrayView<T> out,
                              ScanOp op) {
  run_scan<T>(ctx, "segmented_inclusive_scan", in, out, detail::raw(heads), op, false);
}

template <PrimitiveValue T>
void segmented_exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<const uint8_t> heads, ArrayView<T> out,
                              ScanOp op) {
  run_scan<T>(ctx, "segmented_exclusive_scan", in, out, detail::raw(heads), op, true);
}

template <PrimitiveValue T, class I>
requires IndexType<std::remove_const_t<I>>
void segmented_inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<I> offsets, ArrayView<T> out, ScanOp op) {
  run_scan<T>(ctx, "segmented_inclusive_scan", in, out, detail::raw(offsets), op, false);
}

template <PrimitiveValue T, class I>
requires IndexType<std::remove_const_t<I>>
void segmented_exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<I> offsets, ArrayView<T> out, ScanOp op) {
  run_scan<T>(ctx, "segmented_exclusive_scan", in, out, detail::raw(offsets), op, true);
}

#define SIMKIT_SCAN_OFFSETS(T, I)                                                                                  \
  template void segmented_inclusive_scan<T, I>(const Context&, ConstArray<T>, ArrayView<I>, ArrayView<T>, ScanOp); \
  template void segmented_exclusive_scan<T, I>(const Context&, ConstArray<T>, ArrayView<I>, ArrayView<T>, ScanOp);
#define SIMKIT_SCAN(T)                                                                                             \
  template void inclusive_scan<T>(const Context&, ConstArray<T>, ArrayView<T>, ScanOp);                            \
  template void exclusive_scan<T>(const Context&, ConstArray<T>, ArrayView<T>, ScanOp);                            \
  template void segmented_inclusive_scan<T>(const Context&, ConstArray<T>, ArrayView<const uint8_t>, ArrayView<T>, \
                                            ScanOp);                                                               \
  template void segmented_exclusive_scan<T>(const Context&, ConstArray<T>, ArrayView<const uint8_t>, ArrayView<T>, \
                                            ScanOp);                                                               \
  SIMKIT_SCAN_OFFSETS(T, int32_t)                                                                                  \
  SIMKIT_SCAN_OFFSETS(T, const int32_t) SIMKIT_SCAN_OFFSETS(T, int64_t) SIMKIT_SCAN_OFFSETS(T, const int64_t)

SIMKIT_SCAN(int32_t)
SIMKIT_SCAN(int64_t)
SIMKIT_SCAN(float)
SIMKIT_SCAN(double)

}  // namespace simkit
