#pragma once
// CUDA plumbing for the study's GPU versions: plain cudaMalloc / cudaMemcpy as the seed uses,
// every call checked (a failure becomes simkit::Error with CUDA's message), and owners that free
// buffers and events when a check throws halfway through a run.

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include <simkit/error.hpp>

namespace simkit::mergesort::detail {

inline void check_cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so the caller's next sweep point starts clean
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::device;
  throw Error(code, std::string("mergesort study: ") + call + ": " + cudaGetErrorString(e));
}

/// After a launch: a bad configuration shows up here, a fault in the kernel at the next sync.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

/// n int32 keys of device memory.
class DeviceKeys {
 public:
  explicit DeviceKeys(int64_t n) { check_cuda(cudaMalloc(&data_, size_t(n) * sizeof(int32_t)), "cudaMalloc"); }
  ~DeviceKeys() { (void)cudaFree(data_); }
  DeviceKeys(const DeviceKeys&) = delete;
  DeviceKeys& operator=(const DeviceKeys&) = delete;
  int32_t* get() const { return data_; }

 private:
  int32_t* data_ = nullptr;
};

/// A CUDA event on the default stream, where every launch of the study goes.
class Event {
 public:
  Event() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~Event() { (void)cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record() { check_cuda(cudaEventRecord(event_), "cudaEventRecord"); }
  /// Milliseconds from `start` to this event; both must have completed.
  float since(const Event& start) const {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start.event_, event_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace simkit::mergesort::detail
