#include "validate.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <simkit/error.hpp>

#include "backend.hpp"

namespace simkit::detail {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }
std::string shape(int64_t r, int64_t c) { return std::to_string(r) + " x " + std::to_string(c); }
}  // namespace

void check_points(MatrixView<const float> m, const char* name) {
  if (m.rows <= 0 || m.cols <= 0)
    fail(std::string(name) + " is empty (" + shape(m.rows, m.cols) + "); need at least one row and one column");
  if (m.data == nullptr) fail(std::string(name) + " has a null data pointer");
}

void check_same_dim(MatrixView<const float> Q, MatrixView<const float> X) {
  if (Q.cols != X.cols)
    fail("dimension mismatch: queries have d = " + std::to_string(Q.cols) + ", base has d = " +
         std::to_string(X.cols));
}

template <class T>
void check_output_shape(MatrixView<T> out, int64_t rows, int64_t cols, const char* name) {
  if (out.rows != rows || out.cols != cols)
    fail(std::string(name) + " must be " + shape(rows, cols) + ", got " + shape(out.rows, out.cols));
  if (out.data == nullptr) fail(std::string(name) + " has a null data pointer");
}
template void check_output_shape(MatrixView<float>, int64_t, int64_t, const char*);
template void check_output_shape(MatrixView<int64_t>, int64_t, int64_t, const char*);

void check_finite(const Context& ctx, MatrixView<const float> m, const char* name) {
  if (m.where == Memory::device) {
    if (!cuda::all_finite_on_device(ctx, m)) fail(std::string(name) + " contains NaN or Inf");
    return;
  }
  const int64_t n = m.size();
  int64_t first_bad = -1;
  // A chunked scan: cheap next to the O(m n d) work that follows, and it finds the first bad
  // element so the message can point at it.
#pragma omp parallel for schedule(static) reduction(max : first_bad) if (n > (1 << 20))
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(m.data[i])) first_bad = std::max(first_bad, n - i);  // max of n-i = min i
  if (first_bad >= 0) {
    const int64_t i = n - first_bad;
    fail(std::string(name) + " contains NaN or Inf (row " + std::to_string(i / m.cols) + ", column " +
         std::to_string(i % m.cols) + ")");
  }
}

}  // namespace simkit::detail
