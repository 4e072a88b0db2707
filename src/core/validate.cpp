#include "validate.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"

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
    fail("dimension mismatch: queries have d = " + std::to_string(Q.cols) + ", base has d = " + std::to_string(X.cols));
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
    const Backend* cuda = cuda_backend();
    SIMKIT_EXPECTS(cuda != nullptr, unsupported, name, " is in device memory, but this simkit was built without CUDA");
    if (!cuda->all_finite(ctx, m)) fail(std::string(name) + " contains NaN or Inf");
    return;
  }
  if (cpu_backend().all_finite(ctx, m)) return;
  // Only a failing check pays for finding the first bad value, so the message can point at it.
  int64_t first = 0;
  while (std::isfinite(m.data[first])) ++first;
  fail(std::string(name) + " contains NaN or Inf (row " + std::to_string(first / m.cols) + ", column " +
       std::to_string(first % m.cols) + ")");
}

void check_host_finite(const Context& ctx, std::initializer_list<Named> inputs) {
  for (const Named& in : inputs)
    if (in.m.where == Memory::host) check_finite(ctx, in.m, in.name);
}

void check_device_finite(const Context& ctx, std::initializer_list<Named> inputs) {
  for (const Named& in : inputs)
    if (in.m.where == Memory::device) check_finite(ctx, in.m, in.name);
}

}  // namespace simkit::detail
