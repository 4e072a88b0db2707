#pragma once
// Argument checks shared by every public entry point. Each throws Error(invalid_argument)
// with a message that names the offending argument.

#include <cstdint>
#include <initializer_list>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

/// Non-null data, non-empty, named for messages ("queries", "base").
void check_points(MatrixView<const float> m, const char* name);
/// Q and X share the dimension.
void check_same_dim(MatrixView<const float> Q, MatrixView<const float> X);
/// `out` is rows x cols.
template <class T>
void check_output_shape(MatrixView<T> out, int64_t rows, int64_t cols, const char* name);
/// Every element finite; device views are scanned on the device.
void check_finite(const Context& ctx, MatrixView<const float> m, const char* name);

struct Named {
  MatrixView<const float> m;
  const char* name;
};
/// check_finite for the host-resident ones of `inputs` (made before the device is resolved).
void check_host_finite(const Context& ctx, std::initializer_list<Named> inputs);
/// check_finite for the device-resident ones (made once the backend is known to be the GPU).
void check_device_finite(const Context& ctx, std::initializer_list<Named> inputs);

}  // namespace simkit::detail
