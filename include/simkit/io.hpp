#pragma once
// Reading and writing point sets and id lists; the format follows the file extension.
//
//   .npy    NumPy arrays, 2-D (or 1-D = one column), C order. Read: float32, float64, int32,
//           int64, uint8 (converted to the requested element type). Write: float32, int64.
//   .fvecs  per row: int32 d, then d float32        (the TEXMEX / FAISS benchmark format)
//   .ivecs  per row: int32 d, then d int32
//   .bvecs  per row: int32 d, then d uint8
//
// Readers check every header against the file size and refuse a truncated, lying or
// inconsistent file with Error(io) naming the file and the problem. Writers write to a
// temporary file beside the target and rename it, so an error never leaves a partial file.

#include <cstdint>
#include <functional>
#include <string>

#include <simkit/matrix.hpp>

namespace simkit {

/// Reads a float matrix from .npy / .fvecs / .bvecs / .ivecs (values converted to float;
/// integers beyond 2^24 or float64 beyond float range are refused rather than rounded silently).
Matrix<float> read_matrix(const std::string& path);

/// Reads integer ids from .ivecs or an integer .npy.
Matrix<int64_t> read_ids(const std::string& path);

/// Writes float32 to .npy, .fvecs or .bvecs (the last only for integers in 0..255).
void write_matrix(const std::string& path, MatrixView<const float> m);

/// Writes ids as int64 .npy or int32 .ivecs (ids beyond int32 are refused for .ivecs).
void write_ids(const std::string& path, MatrixView<const int64_t> ids);

/// Writes a path atomically: `write` receives a temporary path beside `path`; on success the
/// temporary is renamed over `path`, on an exception it is removed and the exception rethrown.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace simkit
