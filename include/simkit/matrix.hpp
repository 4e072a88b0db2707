#pragma once
// Row-major matrices: a non-owning MatrixView and an owning host Matrix.
//
// A view is a pointer, a shape and where the memory lives. Rows are contiguous: element
// (i, j) is data[i * cols + j]. Device views carry CUDA device pointers but no CUDA types,
// so the same headers serve CPU-only and CUDA builds.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace simkit {

enum class Memory { host, device };

template <class T>
struct MatrixView {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  Memory where = Memory::host;

  constexpr MatrixView() = default;
  constexpr MatrixView(T* d, int64_t r, int64_t c, Memory w = Memory::host) : data(d), rows(r), cols(c), where(w) {}
  // A view of T converts to a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  constexpr MatrixView(const MatrixView<U>& o) : data(o.data), rows(o.rows), cols(o.cols), where(o.where) {}

  constexpr int64_t size() const noexcept { return rows * cols; }
  constexpr bool empty() const noexcept { return rows == 0 || cols == 0; }
  /// Host views only.
  T& operator()(int64_t i, int64_t j) const { return data[i * cols + j]; }
  T* row(int64_t i) const { return data + i * cols; }
};

/// Owning, host-resident, row-major matrix.
template <class T>
class Matrix {
 public:
  Matrix() = default;
  Matrix(int64_t rows, int64_t cols, T fill = T{})
      : rows_(rows), cols_(cols), data_(static_cast<size_t>(rows * cols), fill) {}

  int64_t rows() const noexcept { return rows_; }
  int64_t cols() const noexcept { return cols_; }
  int64_t size() const noexcept { return rows_ * cols_; }
  T* data() noexcept { return data_.data(); }
  const T* data() const noexcept { return data_.data(); }
  T& operator()(int64_t i, int64_t j) { return data_[static_cast<size_t>(i * cols_ + j)]; }
  const T& operator()(int64_t i, int64_t j) const { return data_[static_cast<size_t>(i * cols_ + j)]; }

  MatrixView<T> view() noexcept { return {data_.data(), rows_, cols_, Memory::host}; }
  MatrixView<const T> view() const noexcept { return {data_.data(), rows_, cols_, Memory::host}; }
  operator MatrixView<T>() noexcept { return view(); }
  operator MatrixView<const T>() const noexcept { return view(); }

 private:
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<T> data_;
};

}  // namespace simkit
