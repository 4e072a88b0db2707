#pragma once
// Reading and writing point sets and id lists; the format follows the file extension.
//
//   .npy    NumPy arrays (format 1.0, 2.0, 3.0), 2-D (or 1-D = one column), C order, little-endian.
//           Read: float32, float64 and 8/16/32/64-bit signed or unsigned integers (converted to
//           the requested element type). Write: float32 ('<f4'), int64 ('<i8'), format 1.0.
//   .fvecs  per row: int32 d, then d float32        (the TEXMEX / FAISS benchmark format)
//   .ivecs  per row: int32 d, then d int32
//   .bvecs  per row: int32 d, then d uint8
//
// The extension decides the format (case-insensitive); any other is Error(invalid_argument).
// Readers check every header against the file size and refuse a missing, truncated, lying or
// inconsistent file with Error(io) naming the file and the problem; an empty .vecs file is an
// error ("no vectors"), an .npy of shape (0, d) is read as it is. Writers refuse values the
// format cannot hold with Error(invalid_argument) before creating anything, then write to a
// temporary file beside the target and rename it, so an error never leaves a partial file.

#include <cstdint>
#include <functional>
#include <string>

#include <simkit/matrix.hpp>

namespace simkit {

/// Reads a float matrix from .npy / .fvecs / .bvecs / .ivecs (values converted to float;
/// integers beyond 2^24 or float64 beyond float range are refused rather than rounded silently).
Matrix<float> read_matrix(const std::string& path);

/// Rows [first, first + count) of the matrix read_matrix would read, for a process that holds
/// one slice of a base (an MPI rank). An .npy file is read from its header and the slice alone;
/// the .vecs formats are read whole and the slice kept. A range beyond the file's rows is
/// Error(invalid_argument); the file is checked as read_matrix checks it.
Matrix<float> read_matrix_rows(const std::string& path, int64_t first, int64_t count);

/// The rows and columns read_matrix would return, from the header alone for .npy (the .vecs
/// formats are read whole).
struct MatrixShape {
  int64_t rows = 0;
  int64_t cols = 0;
};
MatrixShape read_matrix_shape(const std::string& path);

/// Reads integer ids from .ivecs or an integer .npy (a float .npy is refused).
Matrix<int64_t> read_ids(const std::string& path);

/// Writes float32 to .npy, .fvecs or .bvecs (the last only for integers in 0..255).
void write_matrix(const std::string& path, MatrixView<const float> m);

/// Writes ids as int64 .npy or int32 .ivecs (ids beyond int32 are refused for .ivecs).
void write_ids(const std::string& path, MatrixView<const int64_t> ids);

/// Writes a path atomically: `write` receives a temporary path beside `path` (same directory,
/// a hidden name with the pid, already created empty); on success the temporary is renamed over
/// `path`, on an exception it is removed and the exception rethrown. A missing or unwritable
/// directory is Error(io) before `write` runs.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace simkit
