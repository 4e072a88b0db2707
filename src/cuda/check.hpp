#pragma once
// CUDA / cuBLAS status checking for the CUDA backend, and a guard that makes a device current.
//
// Every CUDA runtime and cuBLAS call in src/cuda goes through check_cuda / check_cublas, and
// every kernel launch is followed by check_launch. Failures become simkit::Error:
//   allocation failures           -> ErrorCode::out_of_memory
//   everything else               -> ErrorCode::device, "<call>: <cudaGetErrorString>"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include <simkit/error.hpp>

namespace simkit::detail::cuda {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::device;
  throw Error(code, std::string(call) + ": " + cudaGetErrorString(e));
}

inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw_cuda(e, call);
}

inline void check_cublas(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const ErrorCode code = s == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::device;
  throw Error(code, std::string(call) + ": " + cublasLtGetStatusString(s));
}

/// After a kernel launch: a bad configuration shows up here, a fault at the next sync.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

/// Makes `id` the current device for the scope and restores the caller's device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int id) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != id) check_cuda(cudaSetDevice(id), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace simkit::detail::cuda
