#pragma once
// One public call on the GPU: the device made current, a Resources leased from the pool, and
// the streams its work goes on.
//
// The main stream is Context::stream when the caller gave one, else the lease's own compute
// stream. Side streams (the k-NN selection beside the products, host copies) fork from the main
// stream when first asked for and join back into it at finish(), so all of a call's work is
// ordered after what the caller had queued on its stream and before what it queues next.
//
// finish() waits for the main stream -- what every call does by default. With a caller's
// stream and nothing the host must read (every array on the device, no device-side check to
// report), finish(false) returns at once: the results are ready when the stream gets there,
// and the next call that leases these Resources waits for it on the device (Lease).

#include <cuda_runtime.h>

#include <simkit/context.hpp>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

class Call {
 public:
  explicit Call(const Context& ctx);
  /// After an error: waits for whatever the call had queued on the caller's stream (the
  /// lease's own streams are waited for by the Lease).
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Resources& r() const noexcept { return *lease_; }
  cudaStream_t stream() const noexcept { return main_; }
  /// The selection side stream (the main stream itself when `separate` is false).
  cudaStream_t select_stream(bool separate = true);
  /// The host-copy side stream.
  cudaStream_t copy_stream();
  /// True when the call runs on a stream the caller gave.
  bool on_callers_stream() const noexcept { return callers_; }

  /// Joins the side streams into the main one, then waits for it unless `host_reads` is false
  /// and the stream is the caller's (see above).
  void finish(bool host_reads = true);
  /// finish(), then the int at `word` (device memory), read back through pinned memory.
  int finish_reading(const int* word);

 private:
  cudaStream_t fork(cudaStream_t side, int which);

  DeviceGuard guard_;
  Lease lease_;
  cudaStream_t main_;
  bool callers_;
  bool forked_[2] = {false, false};
  bool finished_ = false;
};

}  // namespace simkit::detail::cuda
