#pragma once
// Host results handed to NumPy without a copy: the Matrix (or vector) moves into a capsule
// that the returned array keeps alive.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <utility>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit::python {

namespace nb = nanobind;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(Matrix<T>&& m) {
  auto* owned = new Matrix<T>(std::move(m));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Matrix<T>*>(p); });
  const size_t shape[2] = {static_cast<size_t>(owned->rows()), static_cast<size_t>(owned->cols())};
  return nb::ndarray<nb::numpy, T>(owned->data(), 2, shape, owner);
}

/// The n x 1 matrices of labels and ids come out as 1-D arrays of n, as NumPy users expect.
template <class T>
nb::ndarray<nb::numpy, T> column_to_numpy(Matrix<T>&& m) {
  auto* owned = new Matrix<T>(std::move(m));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Matrix<T>*>(p); });
  const size_t shape[1] = {static_cast<size_t>(owned->rows())};
  return nb::ndarray<nb::numpy, T>(owned->data(), 1, shape, owner);
}

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const size_t shape[1] = {owned->size()};
  return nb::ndarray<nb::numpy, T>(owned->data(), 1, shape, owner);
}

}  // namespace simkit::python
