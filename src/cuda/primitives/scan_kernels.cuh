#pragma once
// The scan kernel: plain and segmented, inclusive and exclusive, in one template.
//
// A block scans one tile of ScanShape::TILE items. Each warp loads its 32 x ITEMS items
// coalesced (16-byte vectors) and transposes them through shared memory so that every thread
// holds ITEMS consecutive items in registers; the thread scans those serially, the block scans
// the thread totals with shuffles (prim_warp.cuh), and the tile's own prefix comes from one of:
//   look_back   the single pass: decoupled look-back over the tiles before (tile_status.cuh).
//               Exact for integers and for min / max, whose results do not depend on how the
//               operands are grouped.
//   totals      pass 1 of 2 for float and double sums and products: only the tile's total is
//               written; scan_tile_totals then scans the totals in one block, in a fixed order.
//   given       pass 2 of 2: the tile reads its prefix from that scan. Two reading passes cost
//               3n memory traffic instead of 2n, but the rounding no longer depends on which
//               tiles happened to finish first, so the same input gives the same bits.
// A segmented scan scans (value, head) pairs with (a, ha) . (b, hb) = (hb ? b : a op b, ha | hb),
// which is associative and restarts at every head.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/primitives/prim_warp.cuh"
#include "cuda/primitives/tile_status.cuh"

namespace simkit::detail::cuda {

/// Tile shape of the scan: 256 threads, 16 items each for 4-byte values (16 KiB per tile, four
/// 16-byte loads per thread), 8 for 8-byte ones, chosen from the memory-level parallelism an
/// H100 needs (~32 KiB in flight per SM). Measured on the H100 (bench/results/
/// 2026-11-23-h100-primitives.md), 2^27 int32, whole call: 16 items 0.525 ms (0.88x CUB
/// DeviceScan), 24 items 0.512 (0.89x), 12 items 0.626 (0.73x); CUB stays ahead, so integer
/// scans go to CUB (cub_routes.hpp).
#ifndef SIMKIT_TUNE_SCAN_ITEMS  // a tuning run may build other shapes (scripts/tune-primitives.sh)
#define SIMKIT_TUNE_SCAN_ITEMS 16
#endif
#ifndef SIMKIT_TUNE_SCAN_THREADS
#define SIMKIT_TUNE_SCAN_THREADS 256
#endif

template <class T>
struct ScanShape {
  static constexpr int THREADS = SIMKIT_TUNE_SCAN_THREADS;
  static constexpr int ITEMS = sizeof(T) <= 4 ? SIMKIT_TUNE_SCAN_ITEMS : SIMKIT_TUNE_SCAN_ITEMS / 2;
  static constexpr int TILE = THREADS * ITEMS;
  static constexpr int WARPS = THREADS / 32;
};

enum class PrefixMode { look_back, totals, given };

/// The segmented form of an operator.
template <class Op>
struct SegOp {
  Op op;
  template <class T>
  __device__ __forceinline__ Seg<T> operator()(Seg<T> a, Seg<T> b) const {
    return {b.head ? b.value : op(a.value, b.value), a.head | b.head};
  }
};

template <class T, bool SEG>
using ScanItem = std::conditional_t<SEG, Seg<T>, T>;

template <class T, bool SEG>
struct ScanParams {
  const T* in;
  const uint8_t* heads;  // SEG only
  T* out;
  int64_t n;
  bool exclusive;
  TileStatus<ScanItem<T, SEG>> status;  // look_back only
  ScanItem<T, SEG>* tile_values;        // totals: written; given: the tiles' exclusive prefixes
  int* counter;                         // look_back: the tile-id counter
};

template <class T, bool SEG, class Op>
__device__ __forceinline__ ScanItem<T, SEG> item_identity() {
  if constexpr (SEG)
    return Seg<T>{Op::identity(), 0u};
  else
    return Op::identity();
}

template <class T, class Op, PrefixMode MODE, bool SEG>
__global__ void __launch_bounds__(ScanShape<T>::THREADS) scan_tiles(ScanParams<T, SEG> p) {
  using S = ScanShape<T>;
  using Item = ScanItem<T, SEG>;
  constexpr int ITEMS = S::ITEMS;
  const auto iop = [] {
    if constexpr (SEG)
      return SegOp<Op>{Op{}};
    else
      return Op{};
  }();
  const Item identity = item_identity<T, SEG, Op>();

  __shared__ T s_values[S::WARPS][warp_exchange_size<ITEMS>()];
  __shared__ uint8_t s_heads[SEG ? S::WARPS : 1][SEG ? warp_exchange_size<ITEMS>() : 1];
  __shared__ Item s_warp_totals[S::WARPS];
  __shared__ Item s_prefix;
  __shared__ int64_t s_tile;

  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  int64_t tile = blockIdx.x;
  if constexpr (MODE == PrefixMode::look_back) {
    if (threadIdx.x == 0) s_tile = atomicAdd(p.counter, 1);
    __syncthreads();
    tile = s_tile;
  }
  const int64_t warp_base = tile * S::TILE + int64_t(warp) * 32 * ITEMS;
  const int64_t left = p.n - warp_base;
  const int valid = left <= 0 ? 0 : left >= 32 * ITEMS ? 32 * ITEMS : int(left);

  T v[ITEMS];
  load_blocked<T, ITEMS>(p.in + warp_base, valid, Op::identity(), v, s_values[warp], lane);
  Item items[ITEMS];
  if constexpr (SEG) {
    uint8_t h[ITEMS];
    load_blocked<uint8_t, ITEMS>(p.heads + warp_base, valid, uint8_t(0), h, s_heads[warp], lane);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = Seg<T>{v[i], uint32_t(h[i] != 0 || warp_base + lane * ITEMS + i == 0)};
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = v[i];
  }

  Item local[ITEMS];  // the thread's inclusive scan of its own items
  local[0] = items[0];
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) local[i] = iop(local[i - 1], items[i]);
  Item thread_prefix, total;
  block_exclusive_scan<S::THREADS>(local[ITEMS - 1], iop, identity, thread_prefix, total, s_warp_totals);

  Item tile_prefix = identity;
  if constexpr (MODE == PrefixMode::totals) {
    if (threadIdx.x == 0) p.tile_values[tile] = total;
    return;
  } else if constexpr (MODE == PrefixMode::given) {
    tile_prefix = p.tile_values[tile];
  } else {
    if (warp == 0) {
      if (tile == 0) {
        if (lane == 0) p.status.publish(0, kTilePrefix, total);
      } else {
        if (lane == 0) p.status.publish(tile, kTileAggregate, total);
        const Item before = look_back<Item>(p.status, tile, iop, lane);
        if (lane == 0) {
          p.status.publish(tile, kTilePrefix, iop(before, total));
          s_prefix = before;
        }
      }
    }
    __syncthreads();
    if (tile > 0) tile_prefix = s_prefix;
  }

  const Item run = iop(tile_prefix, thread_prefix);
  T o[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (p.exclusive) {
      const Item ex = i == 0 ? run : iop(run, local[i - 1]);
      if constexpr (SEG)
        o[i] = items[i].head ? Op::identity() : ex.value;
      else
        o[i] = ex;
    } else {
      const Item in = iop(run, local[i]);
      if constexpr (SEG)
        o[i] = in.value;
      else
        o[i] = in;
    }
  }
  store_blocked<T, ITEMS>(p.out + warp_base, valid, o, s_values[warp], lane);
}

/// The exclusive scan of `count` tile totals in place, by one block of 1024 threads in chunks
/// of 8 per thread, in a fixed order (pass 2 of the deterministic float scan reads it).
template <class T, class Op, bool SEG>
__global__ void __launch_bounds__(1024) scan_tile_totals(ScanItem<T, SEG>* totals, int64_t count) {
  using Item = ScanItem<T, SEG>;
  constexpr int ITEMS = 8;
  const auto iop = [] {
    if constexpr (SEG)
      return SegOp<Op>{Op{}};
    else
      return Op{};
  }();
  const Item identity = item_identity<T, SEG, Op>();
  __shared__ Item s_warp_totals[32];
  Item carry = identity;
  for (int64_t c0 = 0; c0 < count; c0 += 1024 * ITEMS) {
    const int64_t first = c0 + int64_t(threadIdx.x) * ITEMS;
    Item mine = identity;
    for (int i = 0; i < ITEMS; ++i)
      if (first + i < count) mine = iop(mine, totals[first + i]);
    Item prefix, total;
    block_exclusive_scan<1024>(mine, iop, identity, prefix, total, s_warp_totals);
    Item run = iop(carry, prefix);
    for (int i = 0; i < ITEMS; ++i)
      if (first + i < count) {
        const Item t = totals[first + i];
        totals[first + i] = run;
        run = iop(run, t);
      }
    carry = iop(carry, total);
  }
}

}  // namespace simkit::detail::cuda
