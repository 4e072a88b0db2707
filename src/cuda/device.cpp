// Devices: what gpus() reports, DeviceMatrix (cudaMalloc-owned rows), synchronize(), and the
// architectures this library was compiled for.
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "build_config.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"

namespace simkit::detail::cuda {

namespace {

// FP32 lanes per multiprocessor: 64 on sm_80 (and older parts we do not target), 128 on
// sm_86 / sm_89 / sm_90 and later.
int fp32_lanes(int major, int minor) {
  if (major >= 9) return 128;
  if (major == 8) return minor == 0 ? 64 : 128;
  return 64;
}

// The parts of GpuInfo that do not change while the process runs, read once. Never throws:
// a machine without a driver or a device simply has none.
const std::vector<GpuInfo>& static_info() {
  static const std::vector<GpuInfo> info = [] {
    std::vector<GpuInfo> out;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      return out;
    }
    for (int id = 0; id < count; ++id) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
      (void)cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, id);
      (void)cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, id);
      (void)cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, id);
      (void)cudaGetLastError();
      GpuInfo g;
      g.id = id;
      g.name = p.name;
      g.sm_major = p.major;
      g.sm_minor = p.minor;
      g.multiprocessors = p.multiProcessorCount;
      g.total_memory = p.totalGlobalMem;
      g.fp32_tflops = double(p.multiProcessorCount) * fp32_lanes(p.major, p.minor) * 2.0 * clock_khz * 1e3 / 1e12;
      // Double data rate: two transfers per memory clock, bus_bits / 8 bytes each.
      g.memory_bandwidth_gbs = double(mem_clock_khz) * 1e3 * 2.0 * (bus_bits / 8.0) / 1e9;
      out.push_back(std::move(g));
    }
    return out;
  }();
  return info;
}

}  // namespace

std::vector<GpuInfo> CudaBackend::gpus() const {
  std::vector<GpuInfo> out = static_info();
  int previous = -1;
  if (out.empty() || cudaGetDevice(&previous) != cudaSuccess) {
    (void)cudaGetLastError();
    return out;
  }
  for (GpuInfo& g : out) {
    size_t free_bytes = 0, total = 0;
    if (cudaSetDevice(g.id) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total) == cudaSuccess)
      g.free_memory = free_bytes;
    (void)cudaGetLastError();
  }
  (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
  return out;
}

int CudaBackend::device_count() const { return static_cast<int>(static_info().size()); }

const char* CudaBackend::architectures() const noexcept {
  // CMake hands the list over space-separated; report it the way CMake spells it.
  static const std::string archs = [] {
    std::string s = SIMKIT_CUDA_ARCHITECTURES;
    for (char& c : s)
      if (c == ' ') c = ';';
    return s;
  }();
  return archs.c_str();
}

}  // namespace simkit::detail::cuda

namespace simkit {

using detail::cuda::check_cuda;
using detail::cuda::DeviceGuard;

template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context& ctx, int64_t rows, int64_t cols)
    : rows_(rows), cols_(cols), gpu_id_(ctx.gpu_id) {
  if (rows < 0 || cols < 0)
    throw Error(ErrorCode::invalid_argument,
                "DeviceMatrix shape must be non-negative, got " + std::to_string(rows) + " x " + std::to_string(cols));
  DeviceGuard guard(gpu_id_);
  const size_t bytes = size_t(rows) * size_t(cols) * sizeof(T);
  if (bytes > 0) check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), bytes), "cudaMalloc");
}

template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context& ctx, MatrixView<const T> host) : DeviceMatrix(ctx, host.rows, host.cols) {
  const size_t bytes = size_t(rows_) * size_t(cols_) * sizeof(T);
  if (bytes == 0) return;
  if (host.data == nullptr) {
    // The delegating constructor has finished, so the destructor frees data_.
    throw Error(ErrorCode::invalid_argument, "DeviceMatrix: source view has a null data pointer");
  }
  DeviceGuard guard(gpu_id_);
  // cudaMemcpyDefault: the source may be pageable host memory or another device view.
  check_cuda(cudaMemcpy(data_, host.data, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

template <class T>
DeviceMatrix<T>::~DeviceMatrix() {
  if (data_ == nullptr) return;
  int previous = -1;
  const bool have_previous = cudaGetDevice(&previous) == cudaSuccess;
  if (previous != gpu_id_) (void)cudaSetDevice(gpu_id_);
  (void)cudaFree(data_);
  if (have_previous && previous != gpu_id_) (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
}

template <class T>
DeviceMatrix<T>::DeviceMatrix(DeviceMatrix&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      rows_(std::exchange(o.rows_, 0)),
      cols_(std::exchange(o.cols_, 0)),
      gpu_id_(o.gpu_id_) {}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(DeviceMatrix&& o) noexcept {
  if (this != &o) {
    DeviceMatrix dying(std::move(*this));
    data_ = std::exchange(o.data_, nullptr);
    rows_ = std::exchange(o.rows_, 0);
    cols_ = std::exchange(o.cols_, 0);
    gpu_id_ = o.gpu_id_;
  }
  return *this;
}

template <class T>
void DeviceMatrix<T>::copy_to_host(MatrixView<T> host) const {
  if (host.rows != rows_ || host.cols != cols_)
    throw Error(ErrorCode::invalid_argument, "copy_to_host: destination must be " + std::to_string(rows_) + " x " +
                                                 std::to_string(cols_) + ", got " + std::to_string(host.rows) + " x " +
                                                 std::to_string(host.cols));
  const size_t bytes = size_t(rows_) * size_t(cols_) * sizeof(T);
  if (bytes == 0) return;
  if (host.data == nullptr) throw Error(ErrorCode::invalid_argument, "copy_to_host: destination is a null pointer");
  DeviceGuard guard(gpu_id_);
  check_cuda(cudaMemcpy(host.data, data_, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

template class DeviceMatrix<float>;
template class DeviceMatrix<int64_t>;
template class DeviceMatrix<double>;
template class DeviceMatrix<int32_t>;
template class DeviceMatrix<uint8_t>;

void synchronize(const Context& ctx) {
  if (ctx.device == Device::cpu) return;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return;  // nothing can have been queued on a GPU that is not there
  }
  DeviceGuard guard(ctx.gpu_id);
  if (ctx.stream != nullptr)
    check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(ctx.stream)), "cudaStreamSynchronize");
  else
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace simkit
