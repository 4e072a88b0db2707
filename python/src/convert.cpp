#include "convert.hpp"

#include <Python.h>

#include <chrono>
#include <memory>

#include <simkit/error.hpp>

namespace simkit::python {

namespace {

// DLPack device types (dlpack.h): host memory, plain CUDA memory, pinned host memory, managed.
constexpr int kCpu = 1, kCuda = 2, kCudaHost = 3, kCudaManaged = 13;

[[noreturn]] void bad(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

template <class Array>
void check_dense(const Array& a, const char* name, size_t ndim) {
  if (!a.is_valid()) bad(std::string(name) + " is not an array");
  if (a.ndim() != ndim)
    bad(std::string(name) + " must be " + std::to_string(ndim) + "-D, got " + std::to_string(a.ndim()) + "-D");
  // C order: the last axis packed, each earlier one spanning the rest. Axes of length 1 may
  // carry any stride (PyTorch and NumPy disagree on what to put there).
  int64_t expected = 1;
  for (size_t i = ndim; i-- > 0;) {
    if (a.shape(i) > 1 && a.stride(i) != expected)
      bad(std::string(name) +
          " is not C-contiguous; pass a contiguous copy (numpy.ascontiguousarray, "
          "tensor.contiguous())");
    expected *= static_cast<int64_t>(a.shape(i));
  }
}

template <class T, class Array>
void check_dtype(const Array& a, const char* name) {
  // Flags (segment heads) may come as bool, which DLPack stores in a byte like uint8.
  if (std::is_same_v<std::remove_const_t<T>, uint8_t> && a.dtype() == nb::dtype<bool>()) return;
  if (!holds<std::remove_const_t<T>>(a.dtype()))
    bad(std::string(name) + " must hold " + dtype_name(nb::dtype<std::remove_const_t<T>>()) + ", got " +
        dtype_name(a.dtype()));
}

}  // namespace

std::string dtype_name(const nb::dlpack::dtype& d) {
  const char* kind = "?";
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: break;
  }
  return std::string(kind) + std::to_string(d.bits);
}

Memory CallContext::place(int device_type, int device_id, const char* name) {
  if (device_type == kCpu || device_type == kCudaHost) return Memory::host;
  if (device_type != kCuda && device_type != kCudaManaged)
    bad(std::string(name) + " lives on a device simkit cannot reach (DLPack device type " +
        std::to_string(device_type) + "); simkit reads host memory and CUDA memory");
  if (gpu_ >= 0 && gpu_ != device_id)
    bad(std::string(name) + " is on cuda:" + std::to_string(device_id) +
        " but another argument is on cuda:" + std::to_string(gpu_) + "; put them on one GPU");
  gpu_ = device_id;
  return Memory::device;
}

template <class T, class Array>
MatrixView<T> CallContext::matrix(const Array& a, const char* name) {
  static_assert(std::is_const_v<T> || !Array::ReadOnly, "read-only arrays give views of const elements");
  check_dense(a, name, 2);
  check_dtype<T>(a, name);
  const Memory where = place(a.device_type(), a.device_id(), name);
  return {static_cast<T*>(a.data()), static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1)), where};
}

template <class T, class Array>
ArrayView<T> CallContext::array(const Array& a, const char* name) {
  static_assert(std::is_const_v<T> || !Array::ReadOnly, "read-only arrays give views of const elements");
  check_dense(a, name, 1);
  check_dtype<T>(a, name);
  const Memory where = place(a.device_type(), a.device_id(), name);
  return {static_cast<T*>(a.data()), static_cast<int64_t>(a.shape(0)), where};
}

Context& CallContext::get() {
  if (!resolved_ && gpu_ >= 0) {
    if (ctx_.device == Device::cpu)
      bad("the arrays are on cuda:" + std::to_string(gpu_) +
          " but device='cpu'; move them to the host or use "
          "device='gpu'");
    ctx_.device = Device::gpu;
    ctx_.gpu_id = gpu_;
  }
  resolved_ = true;
  return ctx_;
}

#define SIMKIT_PY_VIEWS(T)                                                       \
  template MatrixView<const T> CallContext::matrix(const InArray&, const char*); \
  template MatrixView<T> CallContext::matrix(const OutArray&, const char*);      \
  template ArrayView<const T> CallContext::array(const InArray&, const char*);   \
  template ArrayView<T> CallContext::array(const OutArray&, const char*);
SIMKIT_PY_VIEWS(float)
SIMKIT_PY_VIEWS(double)
SIMKIT_PY_VIEWS(int32_t)
SIMKIT_PY_VIEWS(int64_t)
SIMKIT_PY_VIEWS(uint8_t)
#undef SIMKIT_PY_VIEWS

namespace {
unsigned long main_thread_ident = 0;
}

void remember_main_thread() {
  main_thread_ident = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
}

void install_interrupt_check(Context& ctx) {
  // Python runs signal handlers on its main thread only; elsewhere there is nothing to check.
  if (PyThread_get_thread_ident() != main_thread_ident) return;
  using clock = std::chrono::steady_clock;
  auto next = std::make_shared<clock::time_point>(clock::now() + std::chrono::milliseconds(50));
  ctx.progress = [next](double) {
    if (clock::now() < *next) return;
    *next = clock::now() + std::chrono::milliseconds(50);
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  };
}

}  // namespace simkit::python
