#pragma once
// Arrays with their element type erased (Raw carries a Dtype), so that the primitives cross the
// backend seam (core/backend.hpp) as a handful of plain argument structs and each backend picks
// its own template instances.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <simkit/array.hpp>
#include <simkit/matrix.hpp>

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

}  // namespace simkit::detail
