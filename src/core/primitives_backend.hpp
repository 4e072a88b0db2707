#pragma once
// The primitives' seam between src/core (checks, dispatch) and the two backends. Element types
// are erased here (Raw carries a Dtype) so that the seam is a handful of plain functions and
// each backend picks its own template instances. Core has checked, before calling in: lengths,
// element types, overlap, host-side data (offsets, CSR structure) and that a CPU call holds
// host arrays only. Backends check device-side data themselves during the work.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/primitives.hpp>

namespace simkit::detail {

enum class Dtype : uint8_t { none, u8, i32, i64, f32, f64 };

template <class T>
constexpr Dtype dtype_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, uint8_t>) return Dtype::u8;
  if constexpr (std::is_same_v<U, int32_t>) return Dtype::i32;
  if constexpr (std::is_same_v<U, int64_t>) return Dtype::i64;
  if constexpr (std::is_same_v<U, float>) return Dtype::f32;
  if constexpr (std::is_same_v<U, double>) return Dtype::f64;
  return Dtype::none;
}

constexpr size_t dtype_size(Dtype t) {
  switch (t) {
    case Dtype::u8: return 1;
    case Dtype::i32:
    case Dtype::f32: return 4;
    case Dtype::i64:
    case Dtype::f64: return 8;
    case Dtype::none: return 0;
  }
  return 0;
}

/// An array with its element type erased. Inputs lose their const here; backends write only
/// the outputs.
struct Raw {
  void* data = nullptr;
  int64_t size = 0;
  Memory where = Memory::host;
  Dtype type = Dtype::none;

  bool present() const noexcept { return type != Dtype::none; }
  size_t bytes() const noexcept { return size_t(size) * dtype_size(type); }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data);
  }
};

template <class T>
Raw raw(ArrayView<T> a) {
  return {const_cast<std::remove_const_t<T>*>(a.data), a.size, a.where, dtype_of<T>()};
}

struct ScanArgs {
  Raw in, out;
  Raw segments;  // none: a plain scan; u8: head flags; i32 / i64: offsets (segments.size - 1 segments)
  ScanOp op = ScanOp::sum;
  bool exclusive = false;
};

struct SpmvArgs {
  int64_t rows = 0, cols = 0;
  Raw offsets, indices, values, x, y;  // offsets and indices share their type, values, x, y theirs
};

/// values absent (Dtype::none) in every slot: keys only.
struct MergeArgs {
  Raw a_keys, a_values, b_keys, b_values, out_keys, out_values;
  Order order = Order::ascending;
};

struct SortArgs {
  Raw keys, values;
  Order order = Order::ascending;
};

struct SelectKArgs {
  MatrixView<const float> in;
  int64_t k = 0;
  Order order = Order::ascending;
  MatrixView<float> values;
  MatrixView<int64_t> ids;
};

namespace cpu {
void scan(const Context& ctx, const ScanArgs& a);
void spmv(const Context& ctx, const SpmvArgs& a);
void merge(const Context& ctx, const MergeArgs& a);
void sort(const Context& ctx, const SortArgs& a);
void select_k(const Context& ctx, const SelectKArgs& a);
}  // namespace cpu

namespace cuda {
// Arrays host or device, each independently. In a CPU-only build these throw
// Error(unsupported) (src/core/cuda_absent.cpp).
void scan(const Context& ctx, const ScanArgs& a);
void spmv(const Context& ctx, const SpmvArgs& a);
void merge(const Context& ctx, const MergeArgs& a);
void sort(const Context& ctx, const SortArgs& a);
void select_k(const Context& ctx, const SelectKArgs& a);
}  // namespace cuda

}  // namespace simkit::detail
