#pragma once
// Per-device working resources of the CUDA backend, cached across calls.
//
// Creating a cuBLASLt handle, streams and scratch memory costs far more than a 1000 x 10000
// similarity matrix takes to compute, so none of it may sit in the path of a call. A process
// keeps a pool of Resources per device; each public call leases one for its duration (threads
// calling concurrently get distinct ones) and hands it back, synchronised, at the end. The pool
// is never destroyed: tearing down cuBLAS and CUDA objects from static destructors races the
// CUDA runtime's own shutdown, and the process is about to return everything anyway.
//
// Scratch memory comes from one grow-only device arena per Resources, carved per call by a
// bump allocator (Carver); pinned host staging likewise grows only.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <simkit/context.hpp>

namespace simkit::detail::cuda {

/// Grow-only device allocation.
class DeviceArena {
 public:
  /// Ensures at least `bytes`; reallocates (dropping the contents) when smaller, or when the
  /// current block exceeds `limit` (a caller's budget that shrank since the last call).
  void reserve(size_t bytes, size_t limit);
  void* data() const noexcept { return data_; }
  size_t capacity() const noexcept { return capacity_; }
  void release() noexcept;

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

/// Grow-only pinned host allocation.
class PinnedBuffer {
 public:
  void reserve(size_t bytes);
  void* data() const noexcept { return data_; }
  size_t capacity() const noexcept { return capacity_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

/// Events of one slot of a two-slot tile pipeline (k-NN and its host fallback): the slot's
/// buffers may be refilled once the work that last read them has recorded its event.
struct SlotEvents {
  cudaEvent_t copied = nullptr;    // the copy into (or out of) the slot's staging buffer is done
  cudaEvent_t computed = nullptr;  // the slot's tile has been computed
  cudaEvent_t selected = nullptr;  // the slot's tile has been folded into the running lists
};

struct Resources {
  int device = 0;
  int multiprocessors = 0;
  int sm_major = 0;
  size_t smem_optin = 0;
  // The call's own streams (Call, call.hpp): compute (unless the caller gave a stream), the
  // k-selection next to it, and host copies. Created blocking (not cudaStreamNonBlocking), so
  // they also order after work the caller queued on the legacy default stream.
  cudaStream_t compute = nullptr, select = nullptr, copy = nullptr;
  // Events without timing, for ordering streams.
  cudaEvent_t fork = nullptr;      // the side streams start after the main stream's work so far
  cudaEvent_t join[2] = {};        // the main stream waits for each side stream
  cudaEvent_t released = nullptr;  // an asynchronous call's end: the next lease waits for it
  bool release_pending = false;    // `released` was recorded and nobody has waited for it yet
  SlotEvents slot[2];
  cublasLtHandle_t lt = nullptr;
  DeviceArena arena;
  PinnedBuffer pinned[2];
  PinnedBuffer pinned_small;  // flags and other small round trips
};

/// A Resources leased from the pool of the current device for one call.
class Lease {
 public:
  /// The caller has already made `device` current (DeviceGuard). When the last call on these
  /// Resources left work in flight (release_later), the Resources' own streams and `caller`
  /// (the stream this call will use, if not one of them) wait for it before any work of ours.
  explicit Lease(int device, cudaStream_t caller = nullptr);
  /// Waits for the Resources' own streams, unless release_later() was called.
  ~Lease();
  /// The call's work stays in flight on `stream` (the caller's): the Resources go back to the
  /// pool now, and whoever leases them next waits for `stream`'s work so far, on the device.
  void release_later(cudaStream_t stream);
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Resources& operator*() const noexcept { return *r_; }
  Resources* operator->() const noexcept { return r_; }

 private:
  Resources* r_;
  bool later_ = false;
};

/// Bytes of device scratch this call may use: Context::gpu_memory_budget, or 80% of the
/// memory free now plus what the leased arena already holds.
size_t working_budget(const Context& ctx, const Resources& r);

/// Carves aligned pieces out of the leased arena, in order.
class Carver {
 public:
  static constexpr size_t alignment = 256;
  static size_t round(size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }
  explicit Carver(DeviceArena& a) : base_(static_cast<char*>(a.data())), capacity_(a.capacity()) {}
  template <class T>
  T* take(size_t count) {
    const size_t bytes = round(count * sizeof(T));
    if (used_ + bytes > capacity_) overflow();
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += bytes;
    return p;
  }

 private:
  [[noreturn]] static void overflow();
  char* base_;
  size_t capacity_;
  size_t used_ = 0;
};

/// Makes `to` wait for the work enqueued on `from` so far (no host synchronisation); `event`
/// is recorded on `from`.
void stream_wait(cudaStream_t to, cudaStream_t from, cudaEvent_t event);

}  // namespace simkit::detail::cuda
