#pragma once
// An owning row-major matrix in GPU memory, for callers who keep data resident on the device
// across calls (benchmarks, servers). Pass view() to pairwise/knn like any other view.
// In a CPU-only build, or without a usable GPU, the constructor throws Error(unsupported /
// device).

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit {

template <class T>
class DeviceMatrix {
 public:
  DeviceMatrix() = default;
  /// Uninitialised rows x cols on device ctx.gpu_id.
  DeviceMatrix(const Context& ctx, int64_t rows, int64_t cols);
  /// A device copy of a host matrix.
  DeviceMatrix(const Context& ctx, MatrixView<const T> host);
  ~DeviceMatrix();
  DeviceMatrix(DeviceMatrix&& o) noexcept;
  DeviceMatrix& operator=(DeviceMatrix&& o) noexcept;
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  int64_t rows() const noexcept { return rows_; }
  int64_t cols() const noexcept { return cols_; }
  MatrixView<T> view() noexcept { return {data_, rows_, cols_, Memory::device}; }
  MatrixView<const T> view() const noexcept { return {data_, rows_, cols_, Memory::device}; }

  /// Copies the whole matrix into `host` (same shape).
  void copy_to_host(MatrixView<T> host) const;

 private:
  T* data_ = nullptr;
  int64_t rows_ = 0, cols_ = 0;
  int gpu_id_ = 0;
};

/// Blocks until all simkit work queued on the context's GPU has finished: on Context::stream when
/// one is set, else on the whole device (no-op on CPU).
void synchronize(const Context& ctx);

extern template class DeviceMatrix<float>;
extern template class DeviceMatrix<double>;
extern template class DeviceMatrix<int32_t>;
extern template class DeviceMatrix<int64_t>;
extern template class DeviceMatrix<uint8_t>;

}  // namespace simkit
