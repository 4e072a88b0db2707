// The CUDA seam in a CPU-only build: no devices, and every GPU entry refuses politely.
#include <simkit/error.hpp>

#include "backend.hpp"
#include "primitives_backend.hpp"

namespace simkit::detail::cuda {

namespace {
[[noreturn]] void refuse() {
  throw Error(ErrorCode::unsupported, "this simkit was built without CUDA; use --device cpu");
}
}  // namespace

std::vector<GpuInfo> gpus() { return {}; }
int device_count() { return 0; }
void pairwise(const Context&, MatrixView<const float>, MatrixView<const float>, Metric, MatrixView<float>) { refuse(); }
void knn(const Context&, MatrixView<const float>, MatrixView<const float>, int64_t, Metric, MatrixView<float>,
         MatrixView<int64_t>) {
  refuse();
}
void gauss_direct(const Context&, MatrixView<const float>, const double*, MatrixView<const float>, double,
                  MatrixView<double>) {
  refuse();
}
IfgtFinal gauss_ifgt(const Context&, MatrixView<const float>, const double*, MatrixView<const float>, double,
                     const IfgtChoice&, MatrixView<double>) {
  refuse();
}
IfgtSample ifgt_sample(const Context&, MatrixView<const float>, MatrixView<const float>) { refuse(); }
bool all_finite_on_device(const Context&, MatrixView<const float>) { refuse(); }
const char* compiled_architectures() noexcept { return ""; }
void scan(const Context&, const ScanArgs&) { refuse(); }
void spmv(const Context&, const SpmvArgs&) { refuse(); }
void merge(const Context&, const MergeArgs&) { refuse(); }
void sort(const Context&, const SortArgs&) { refuse(); }
void select_k(const Context&, const SelectKArgs&) { refuse(); }

}  // namespace simkit::detail::cuda

// DeviceMatrix in a CPU-only build: constructible only empty.
#include <simkit/device_matrix.hpp>

namespace simkit {
template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context&, int64_t, int64_t) {
  throw Error(ErrorCode::unsupported, "this simkit was built without CUDA: no device memory");
}
template <class T>
DeviceMatrix<T>::DeviceMatrix(const Context&, MatrixView<const T>) {
  throw Error(ErrorCode::unsupported, "this simkit was built without CUDA: no device memory");
}
template <class T>
DeviceMatrix<T>::~DeviceMatrix() = default;
template <class T>
DeviceMatrix<T>::DeviceMatrix(DeviceMatrix&&) noexcept = default;
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(DeviceMatrix&&) noexcept = default;
template <class T>
void DeviceMatrix<T>::copy_to_host(MatrixView<T>) const {
  throw Error(ErrorCode::unsupported, "this simkit was built without CUDA: no device memory");
}
template class DeviceMatrix<float>;
template class DeviceMatrix<int64_t>;
template class DeviceMatrix<double>;
template class DeviceMatrix<int32_t>;
template class DeviceMatrix<uint8_t>;
void synchronize(const Context&) {}
}  // namespace simkit
