// A build without CUDA: no CUDA backend, and DeviceMatrix constructible only empty.
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"

namespace simkit {

namespace detail {
const Backend* cuda_backend() { return nullptr; }
}  // namespace detail

namespace {
[[noreturn]] void refuse() {
  throw Error(ErrorCode::unsupported, "this simkit was built without CUDA: no device memory");
}
}  // namespace

template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context&, int64_t, int64_t) {
  refuse();
}
template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context&, MatrixView<const T>) {
  refuse();
}
template <class T>
DeviceMatrix<T>::~DeviceMatrix() = default;
template <class T>
DeviceMatrix<T>::DeviceMatrix(DeviceMatrix&&) noexcept = default;
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(DeviceMatrix&&) noexcept = default;
template <class T>
void DeviceMatrix<T>::copy_to_host(MatrixView<T>) const {
  refuse();
}
template class DeviceMatrix<float>;
template class DeviceMatrix<int64_t>;
template class DeviceMatrix<double>;
template class DeviceMatrix<int32_t>;
template class DeviceMatrix<uint8_t>;
void synchronize(const Context&) {}
}  // namespace simkit
