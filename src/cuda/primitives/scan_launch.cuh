#pragma once
// Launch sequences of the scan (scan_kernels.cuh) for one element type and operator: the
// single pass with its status initialisation, or the two reading passes of a float sum or
// product. Included by scan.cu (plain) and segmented_scan.cu.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/scan_ops.hpp"
#include "cuda/check.hpp"
#include "cuda/primitives/scan_kernels.cuh"

namespace simkit::detail::cuda {

/// Float sums and products take the deterministic two-pass route (scan_kernels.cuh).
template <class T, class Op>
constexpr bool two_pass_scan() {
  return std::is_floating_point_v<T> && (std::is_same_v<Op, SumOp<T>> || std::is_same_v<Op, ProductOp<T>>);
}

inline size_t round_256(size_t b) { return (b + 255) / 256 * 256; }

template <class T, bool SEG, class Op>
size_t scan_bytes_for(int64_t n) {
  const int64_t tiles = (n + ScanShape<T>::TILE - 1) / ScanShape<T>::TILE;
  if constexpr (two_pass_scan<T, Op>())
    return round_256(size_t(tiles) * sizeof(ScanItem<T, SEG>));
  else
    return round_256(TileStatus<ScanItem<T, SEG>>::bytes(tiles)) + 256;  // + the tile counter
}

template <class T, bool SEG, class Op>
void run_scan(const T* in, const uint8_t* heads, T* out, int64_t n, bool exclusive, void* scratch,
              cudaStream_t stream) {
  using S = ScanShape<T>;
  using Item = ScanItem<T, SEG>;
  const int64_t tiles = (n + S::TILE - 1) / S::TILE;
  ScanParams<T, SEG> p{in, heads, out, n, exclusive, {}, nullptr, nullptr};
  if constexpr (two_pass_scan<T, Op>()) {
    p.tile_values = static_cast<Item*>(scratch);
    scan_tiles<T, Op, PrefixMode::totals, SEG><<<unsigned(tiles), S::THREADS, 0, stream>>>(p);
    check_launch("scan_tiles (totals)");
    scan_tile_totals<T, Op, SEG><<<1, 1024, 0, stream>>>(p.tile_values, tiles);
    check_launch("scan_tile_totals");
    scan_tiles<T, Op, PrefixMode::given, SEG><<<unsigned(tiles), S::THREADS, 0, stream>>>(p);
    check_launch("scan_tiles (given)");
  } else {
    p.status.carve_from(scratch, tiles);
    p.counter = reinterpret_cast<int*>(static_cast<char*>(scratch) + round_256(TileStatus<Item>::bytes(tiles)));
    Item identity;
    if constexpr (SEG)
      identity = Seg<T>{Op::identity(), 0u};
    else
      identity = Op::identity();
    const int64_t slots = tiles + kLookBackPad;
    init_tile_status<Item><<<unsigned((slots + 255) / 256), 256, 0, stream>>>(p.status, tiles, identity, p.counter);
    check_launch("init_tile_status");
    scan_tiles<T, Op, PrefixMode::look_back, SEG><<<unsigned(tiles), S::THREADS, 0, stream>>>(p);
    check_launch("scan_tiles (look-back)");
  }
}

template <bool SEG, class F>
decltype(auto) with_scan_type(Dtype type, F&& f) {
  switch (type) {
    case Dtype::i32: return f(int32_t{});
    case Dtype::i64: return f(int64_t{});
    case Dtype::f32: return f(float{});
    default: return f(double{});
  }
}

template <bool SEG>
size_t scan_bytes(Dtype type, ScanOp op, int64_t n) {
  return with_scan_type<SEG>(type, [&](auto t) {
    using T = decltype(t);
    return with_scan_op<T>(op, [&](auto o) { return scan_bytes_for<T, SEG, decltype(o)>(n); });
  });
}

template <bool SEG>
void scan_any(Dtype type, ScanOp op, const void* in, const uint8_t* heads, void* out, int64_t n, bool exclusive,
              void* scratch, cudaStream_t stream) {
  with_scan_type<SEG>(type, [&](auto t) {
    using T = decltype(t);
    with_scan_op<T>(op, [&](auto o) {
      run_scan<T, SEG, decltype(o)>(static_cast<const T*>(in), heads, static_cast<T*>(out), n, exclusive, scratch,
                                    stream);
    });
  });
}

}  // namespace simkit::detail::cuda
