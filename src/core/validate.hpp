#pragma once
// Argument checks shared by every public entry point. Each throws Error(invalid_argument)
// with a message that names the offending argument.

#include <cstdint>

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

}  // namespace simkit::detail
