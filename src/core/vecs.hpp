#pragma once
// The TEXMEX / FAISS benchmark formats: each row is an int32 dimension d followed by d values,
// float32 (.fvecs), int32 (.ivecs) or uint8 (.bvecs). There is no file header, so the reader
// takes d from the first row and checks that the file size is a whole number of such rows and
// that every row repeats the same d. Every error names `path`.

#include <cstdint>
#include <iosfwd>
#include <string>

#include <simkit/matrix.hpp>

namespace simkit::detail::vecs {

enum class Kind { fvecs, ivecs, bvecs };

/// Reads any kind as floats; .ivecs integers beyond 2^24 are refused (no exact float32 value).
Matrix<float> read_floats(std::istream& in, uint64_t file_size, const std::string& path, Kind kind);

/// Reads an .ivecs file as int64 ids.
Matrix<int64_t> read_ints(std::istream& in, uint64_t file_size, const std::string& path);

/// Throws Error(invalid_argument) unless `m` can be stored as `kind` (at least one column;
/// for .bvecs every value an integer in 0..255).
void check_writable(MatrixView<const float> m, Kind kind, const std::string& path);
/// Throws Error(invalid_argument) unless `m` has at least one column and every id fits int32.
void check_writable(MatrixView<const int64_t> m, const std::string& path);

/// Writes .fvecs or .bvecs (values already checked by check_writable).
void write_floats(std::ostream& out, MatrixView<const float> m, Kind kind, const std::string& path);
/// Writes .ivecs (ids already checked by check_writable).
void write_ints(std::ostream& out, MatrixView<const int64_t> m, const std::string& path);

}  // namespace simkit::detail::vecs
