#pragma once
// What every binding shares: DLPack arrays turned into simkit views (checked, with the
// argument's name in the message), the per-call Context, and running a call with the GIL
// released while Ctrl-C still gets through.
//
// The Python layer (simkit/_arrays.py) has already converted what it may (lists, float64,
// non-contiguous NumPy arrays) and allocated the outputs; these checks are the last word and
// refuse anything simkit cannot read in place.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <utility>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::python {

namespace nb = nanobind;

/// Any array: read-only ones are accepted for inputs. The array_api tag changes nothing in
/// how arrays are read (nanobind reads whatever framework it is given); it types them as Any
/// in the generated stubs, since torch and CuPy arrays are as welcome as NumPy's.
using InArray = nb::ndarray<nb::array_api, nb::ro>;
using OutArray = nb::ndarray<nb::array_api>;

/// A dict[str, object] result (reports), typed for the stubs.
using Record = nb::typed<nb::dict, nb::str, nb::object>;

/// The Context of one call: the user's settings plus the stream of the framework that holds
/// the arrays (0: none) and the GPU the arrays live on. Devices of the operands are collected
/// as they are converted (see Operands).
class CallContext {
 public:
  CallContext(const Context& base, uintptr_t stream) : ctx_(base) { ctx_.stream = reinterpret_cast<void*>(stream); }

  /// A host view, or a device view on this call's GPU, of a C-contiguous array of T (const T
  /// for an InArray, T for an OutArray).
  template <class T, class Array>
  MatrixView<T> matrix(const Array& a, const char* name);
  template <class T, class Array>
  ArrayView<T> array(const Array& a, const char* name);

  /// The Context to hand to simkit: the GPU of the device operands, and device = gpu when
  /// there are any (Error(invalid_argument) if the user asked for the CPU).
  Context& get();

 private:
  Memory place(int device_type, int device_id, const char* name);
  Context ctx_;
  int gpu_ = -1;
  bool resolved_ = false;
};

/// True when the DLPack dtype is T.
template <class T>
bool holds(const nb::dlpack::dtype& d) {
  return d == nb::dtype<T>();
}

/// "float32", "int64", ... for messages.
std::string dtype_name(const nb::dlpack::dtype& d);

/// Runs f() with the GIL released. When called from Python's main thread, ctx.progress is set
/// to look for a pending signal (at most every 50 ms, taking the GIL for that moment): Ctrl-C
/// then raises KeyboardInterrupt out of simkit between tiles, and the call unwinds cleanly.
template <class F>
decltype(auto) run_released(Context& ctx, F&& f);

void install_interrupt_check(Context& ctx);
/// Called once at import: the thread whose signals Python handles.
void remember_main_thread();

template <class F>
decltype(auto) run_released(Context& ctx, F&& f) {
  install_interrupt_check(ctx);
  nb::gil_scoped_release release;
  return std::forward<F>(f)();
}

}  // namespace simkit::python
