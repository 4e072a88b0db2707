#pragma once
// The NumPy .npy format (versions 1.0, 2.0 and 3.0), restricted to what simkit stores: 1-D and
// 2-D arrays in C order with a little-endian integer or float element type.
//
// Readers receive an open stream positioned at the start of the file together with the file's
// size, and check the header against that size before reading any data: a file that is shorter
// or longer than its header says is refused. Every error names `path`.

#include <cstdint>
#include <iosfwd>
#include <string>

#include <simkit/matrix.hpp>

namespace simkit::detail::npy {

/// Element types simkit reads; anything else in 'descr' is refused while parsing.
enum class Dtype { f2, f4, f8, i1, u1, i2, u2, i4, u4, i8, u8 };

struct Header {
  Dtype dtype = Dtype::f4;
  std::string descr;  // as written in the file, for messages
  int64_t rows = 0;   // a 1-D array of n elements is n x 1
  int64_t cols = 0;
  uint64_t data_offset = 0;  // bytes before the first element
};

/// Parses and validates the header (magic, version, dict, dtype, order, shape, size).
Header read_header(std::istream& in, uint64_t file_size, const std::string& path);

/// Float values; integers beyond 2^24 and float64 beyond float range are refused. With
/// count >= 0 only rows [first, first + count) are read (the stream seeks past the others);
/// a range beyond the array is Error(invalid_argument).
Matrix<float> read_floats(std::istream& in, uint64_t file_size, const std::string& path, int64_t first = 0,
                          int64_t count = -1);

/// Integer values; float arrays and uint64 values beyond int64 are refused.
Matrix<int64_t> read_ints(std::istream& in, uint64_t file_size, const std::string& path);

/// Version 1.0 file of '<f4' (float32) or '<i8' (int64), always 2-D. `path` names the target
/// in messages; the stream state is checked after the data is flushed.
void write_floats(std::ostream& out, MatrixView<const float> m, const std::string& path);
void write_ints(std::ostream& out, MatrixView<const int64_t> m, const std::string& path);

}  // namespace simkit::detail::npy
