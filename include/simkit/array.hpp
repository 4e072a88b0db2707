#pragma once
// A one-dimensional array: a pointer, a length and where the memory lives. The primitives
// (primitives.hpp) take and fill these, on the host or on the device alike.
//
// Host arrays come from a std::vector or a std::span (ArrayView(v) deduces the element type);
// device arrays from a raw CUDA pointer (ArrayView(p, n, Memory::device)) or from a
// DeviceMatrix, whose whole storage is one array (ArrayView(m.view())).

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit {

template <class T>
struct ArrayView {
  T* data = nullptr;
  int64_t size = 0;
  Memory where = Memory::host;

  constexpr ArrayView() = default;
  constexpr ArrayView(T* d, int64_t n, Memory w = Memory::host) : data(d), size(n), where(w) {}
  /// Host memory.
  constexpr ArrayView(std::span<T> s) : data(s.data()), size(static_cast<int64_t>(s.size())) {}
  template <class A>
  requires std::is_const_v<T> ArrayView(const std::vector<std::remove_const_t<T>, A>& v)
      : data(v.data()), size(static_cast<int64_t>(v.size())) {}
  template <class A>
  ArrayView(std::vector<T, A>& v) : data(v.data()), size(static_cast<int64_t>(v.size())) {}
  /// Every element of a contiguous matrix, row after row.
  explicit constexpr ArrayView(MatrixView<T> m) : data(m.data), size(m.size()), where(m.where) {}
  /// A view of T converts to a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  constexpr ArrayView(const ArrayView<U>& o) : data(o.data), size(o.size), where(o.where) {}

  constexpr bool empty() const noexcept { return size == 0; }
  /// Host views only.
  T& operator[](int64_t i) const { return data[i]; }
};

template <class T, class A>
ArrayView(std::vector<T, A>&) -> ArrayView<T>;
template <class T, class A>
ArrayView(const std::vector<T, A>&) -> ArrayView<const T>;
template <class T>
ArrayView(MatrixView<T>) -> ArrayView<T>;

}  // namespace simkit
