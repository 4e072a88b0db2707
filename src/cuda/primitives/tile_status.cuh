#pragma once
// Decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016): each tile of a single-pass scan publishes its total (status AGGREGATE) as
// soon as it has scanned itself, and its inclusive prefix (status PREFIX) once it knows it. A
// tile finds its exclusive prefix by reading its predecessors from the nearest backwards,
// 32 at a time (one per lane), folding aggregates until it meets a prefix. Tiles get their ids
// in the order they start (an atomic counter), so every predecessor a tile waits for is
// already running and will publish: no deadlock, whatever the scheduling.
//
// Two layouts of the per-tile status:
//   packed  value and status in one 64-bit word written and read atomically: for 4-byte values
//           and (head flag, 4-byte value) pairs. One load per predecessor, no fences.
//   split   a status word plus separate aggregate and prefix arrays, for wider values: the value
//           is stored first and the status published with release semantics; a reader acquires
//           the status before it reads the value (two arrays, because a tile's aggregate may be
//           read while its prefix is being written).
// 32 slots before tile 0 hold PREFIX(identity), so a look-back never runs off the front.

#include <cuda_runtime.h>
#include <cuda/atomic>

#include <cstdint>
#include <type_traits>

#include "cuda/primitives/prim_warp.cuh"

namespace simkit::detail::cuda {

enum : uint32_t { kTileEmpty = 0, kTileAggregate = 1, kTilePrefix = 2 };
constexpr int kLookBackPad = 32;

/// A segmented scan's item: a value and whether a segment starts at it (or anywhere in the
/// run it summarises).
template <class T>
struct Seg {
  T value;
  uint32_t head;
};

/// Bits of a value that packs into 62 bits, or none.
template <class T>
struct Pack {
  static constexpr bool ok = false;
};
template <>
struct Pack<int32_t> {
  static constexpr bool ok = true;
  __device__ static uint64_t to(int32_t v) { return uint32_t(v); }
  __device__ static int32_t from(uint64_t w) { return int32_t(uint32_t(w)); }
};
template <>
struct Pack<float> {
  static constexpr bool ok = true;
  __device__ static uint64_t to(float v) { return __float_as_uint(v); }
  __device__ static float from(uint64_t w) { return __uint_as_float(uint32_t(w)); }
};
template <class T>
struct Pack<Seg<T>> {
  static constexpr bool ok = Pack<T>::ok;
  __device__ static uint64_t to(Seg<T> s) { return Pack<T>::to(s.value) | (uint64_t(s.head != 0) << 32); }
  __device__ static Seg<T> from(uint64_t w) { return {Pack<T>::from(w & 0xffffffffull), uint32_t((w >> 32) & 1)}; }
};

template <class Item, bool PACKED = Pack<Item>::ok>
struct TileStatus;

template <class Item>
struct TileStatus<Item, true> {
  uint64_t* words;  // tiles + kLookBackPad

  static size_t bytes(int64_t tiles) { return size_t(tiles + kLookBackPad) * sizeof(uint64_t); }
  void carve_from(void* p, int64_t) { words = static_cast<uint64_t*>(p); }

  __device__ void init(int64_t slot, Item identity) const {
    words[slot] = slot < kLookBackPad ? (uint64_t(kTilePrefix) << 62) | Pack<Item>::to(identity) : 0;
  }
  __device__ void publish(int64_t tile, uint32_t status, Item v) const {
    ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device> w(words[tile + kLookBackPad]);
    w.store((uint64_t(status) << 62) | Pack<Item>::to(v), ::cuda::memory_order_relaxed);
  }
  __device__ void peek(int64_t tile, uint32_t& status, Item& v) const {
    ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device> w(words[tile + kLookBackPad]);
    const uint64_t x = w.load(::cuda::memory_order_relaxed);
    status = uint32_t(x >> 62);
    v = Pack<Item>::from(x & ((uint64_t(1) << 62) - 1));
  }
};

template <class Item>
struct TileStatus<Item, false> {
  uint32_t* status;
  Item* aggregate;
  Item* prefix;

  static size_t round(size_t b) { return (b + 255) / 256 * 256; }
  static size_t bytes(int64_t tiles) {
    const size_t slots = size_t(tiles + kLookBackPad);
    return round(slots * sizeof(uint32_t)) + 2 * round(slots * sizeof(Item));
  }
  void carve_from(void* p, int64_t tiles) {
    const size_t slots = size_t(tiles + kLookBackPad);
    char* c = static_cast<char*>(p);
    status = reinterpret_cast<uint32_t*>(c);
    aggregate = reinterpret_cast<Item*>(c + round(slots * sizeof(uint32_t)));
    prefix = reinterpret_cast<Item*>(c + round(slots * sizeof(uint32_t)) + round(slots * sizeof(Item)));
  }

  __device__ void init(int64_t slot, Item identity) const {
    status[slot] = slot < kLookBackPad ? kTilePrefix : kTileEmpty;
    if (slot < kLookBackPad) prefix[slot] = identity;
  }
  __device__ void publish(int64_t tile, uint32_t s, Item v) const {
    const int64_t slot = tile + kLookBackPad;
    (s == kTilePrefix ? prefix : aggregate)[slot] = v;
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> w(status[slot]);
    w.store(s, ::cuda::memory_order_release);
  }
  __device__ void peek(int64_t tile, uint32_t& s, Item& v) const {
    const int64_t slot = tile + kLookBackPad;
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> w(status[slot]);
    s = w.load(::cuda::memory_order_acquire);
    if (s == kTileAggregate) v = aggregate[slot];
    if (s == kTilePrefix) v = prefix[slot];
  }
};

/// Called by all 32 lanes of one warp of tile `tile` (> 0) after it published its aggregate:
/// returns (to every lane) the combination of all tiles before it.
template <class Item, class Op, class Status>
__device__ Item look_back(const Status& st, int64_t tile, Op op, int lane) {
  Item exclusive{};
  bool started = false;
  for (int64_t newest = tile - 1;; newest -= 32) {
    const int64_t t = newest - lane;  // lane 0 reads the nearest predecessor
    uint32_t s;
    Item v{};
    do {
      st.peek(t, s, v);
    } while (__any_sync(kFullMask, s == kTileEmpty));
    const unsigned prefixes = __ballot_sync(kFullMask, s == kTilePrefix);
    const int last = prefixes ? __ffs(prefixes) - 1 : 31;  // lanes 0..last count
                                                           // Fold lanes 0..last, the older (higher lane) first.
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Item o = shfl_down(v, d);
      if (lane + d <= last) v = op(o, v);
    }
    const Item window = shfl_idx(v, 0);
    exclusive = started ? op(window, exclusive) : window;
    started = true;
    if (prefixes) return exclusive;
  }
}

template <class Item, class Status>
__global__ void init_tile_status(Status st, int64_t tiles, Item identity, int* counter) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < tiles + kLookBackPad) st.init(i, identity);
  if (i == 0 && counter != nullptr) *counter = 0;
}

}  // namespace simkit::detail::cuda
