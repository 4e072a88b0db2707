#include "vecs.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>
#include <vector>

#include <simkit/error.hpp>

#include "core/quoted_path.hpp"

static_assert(std::endian::native == std::endian::little, "simkit's file formats assume a little-endian host");

namespace simkit::detail::vecs {

namespace {

constexpr uint64_t kChunkBytes = uint64_t{8} << 20;   // I/O granularity: large enough to amortise each call
constexpr int32_t kExactFloatInt = int32_t{1} << 24;  // every integer of magnitude <= 2^24 is exact in float32

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::io, quoted_path(path) + ": " + msg);
}
[[noreturn]] void refuse(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": " + msg);
}

const char* extension(Kind kind) {
  switch (kind) {
    case Kind::fvecs: return ".fvecs";
    case Kind::ivecs: return ".ivecs";
    case Kind::bvecs: return ".bvecs";
  }
  return "?";
}

void read_exact(std::istream& in, void* dst, uint64_t bytes, const std::string& path) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (static_cast<uint64_t>(in.gcount()) != bytes) fail(path, "unexpected end of file while reading the rows");
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// Reads the whole file in chunks of whole rows: each row's dimension field is checked against the
// first row's and its values are handed to convert(src, dst, d, row) which writes d outputs.
template <class Stored, class Out, class Convert>
Matrix<Out> read_rows(std::istream& in, uint64_t file_size, const std::string& path, Kind kind, Convert convert) {
  if (file_size == 0) fail(path, "no vectors (the file is empty)");
  if (file_size < 4)
    fail(path, "truncated: " + std::to_string(file_size) + " bytes cannot hold even one row's dimension field");
  int32_t d = 0;
  read_exact(in, &d, sizeof d, path);
  if (d <= 0)
    fail(path, "the first row declares dimension d = " + std::to_string(d) + "; d must be >= 1 (is this really a " +
                   extension(kind) + " file?)");
  const uint64_t row_bytes = sizeof(int32_t) + static_cast<uint64_t>(d) * sizeof(Stored);
  if (file_size % row_bytes != 0)
    fail(path, "truncated or inconsistent: " + std::to_string(file_size) +
                   " bytes is not a whole number of rows of d = " + std::to_string(d) + " (" +
                   std::to_string(row_bytes) + " bytes each): " + std::to_string(file_size / row_bytes) + " rows and " +
                   std::to_string(file_size % row_bytes) + " bytes left over");
  const auto n = static_cast<int64_t>(file_size / row_bytes);

  Matrix<Out> m;
  try {
    m = Matrix<Out>(n, d);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::out_of_memory,
                quoted_path(path) + ": cannot allocate " + std::to_string(n) + " x " + std::to_string(d) + " elements");
  }

  in.seekg(0);
  const int64_t rows_per_chunk = static_cast<int64_t>(std::max<uint64_t>(1, kChunkBytes / row_bytes));
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<int64_t>(rows_per_chunk, n)) * row_bytes);
  for (int64_t first = 0; first < n; first += rows_per_chunk) {
    const int64_t count = std::min(rows_per_chunk, n - first);
    read_exact(in, buf.data(), static_cast<uint64_t>(count) * row_bytes, path);
    const unsigned char* src = buf.data();
    for (int64_t r = first; r < first + count; ++r, src += row_bytes) {
      int32_t dr;
      std::memcpy(&dr, src, sizeof dr);
      if (dr != d)
        fail(path, "row " + std::to_string(r) + " declares dimension d = " + std::to_string(dr) +
                       " but row 0 declares " + std::to_string(d) + " (rows of one file must agree)");
      convert(src + sizeof(int32_t), m.data() + r * d, static_cast<int64_t>(d), r);
    }
  }
  return m;
}

// Rows become [int32 d][d stored values], assembled in a bounded buffer and written a chunk at a time.
template <class Stored, class In, class Convert>
void write_rows(std::ostream& out, MatrixView<const In> m, const std::string& path, Convert convert) {
  errno = 0;
  const auto d = static_cast<int32_t>(m.cols);
  const uint64_t row_bytes = sizeof(int32_t) + static_cast<uint64_t>(d) * sizeof(Stored);
  const int64_t rows_per_chunk = static_cast<int64_t>(std::max<uint64_t>(1, kChunkBytes / row_bytes));
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<int64_t>(rows_per_chunk, m.rows)) * row_bytes);
  std::vector<Stored> row(static_cast<size_t>(d));
  for (int64_t first = 0; first < m.rows && out; first += rows_per_chunk) {
    const int64_t count = std::min(rows_per_chunk, m.rows - first);
    unsigned char* dst = buf.data();
    for (int64_t r = first; r < first + count; ++r, dst += row_bytes) {
      std::memcpy(dst, &d, sizeof d);
      const In* src = m.row(r);
      for (int32_t j = 0; j < d; ++j) row[static_cast<size_t>(j)] = convert(src[j]);
      std::memcpy(dst + sizeof d, row.data(), static_cast<size_t>(d) * sizeof(Stored));
    }
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(count * row_bytes));
  }
  out.flush();
  if (!out) fail(path, std::string("write failed: ") + (errno ? std::strerror(errno) : "stream error"));
}

void check_shape(int64_t rows, int64_t cols, Kind kind, const std::string& path) {
  if (rows <= 0 || cols <= 0)
    refuse(path, std::string(extension(kind)) + " cannot store an empty matrix (" + std::to_string(rows) + " x " +
                     std::to_string(cols) + "); it needs at least one row of d >= 1");
  if (cols > std::numeric_limits<int32_t>::max())
    refuse(path, "d = " + std::to_string(cols) + " does not fit the int32 dimension field of " + extension(kind));
}

}  // namespace

Matrix<float> read_floats(std::istream& in, uint64_t file_size, const std::string& path, Kind kind) {
  switch (kind) {
    case Kind::fvecs:
      return read_rows<float, float>(in, file_size, path, kind,
                                     [](const unsigned char* src, float* dst, int64_t d, int64_t) {
                                       std::memcpy(dst, src, static_cast<size_t>(d) * sizeof(float));
                                     });
    case Kind::bvecs:
      return read_rows<uint8_t, float>(in, file_size, path, kind,
                                       [](const unsigned char* src, float* dst, int64_t d, int64_t) {
                                         for (int64_t j = 0; j < d; ++j) dst[j] = static_cast<float>(src[j]);
                                       });
    case Kind::ivecs:
      return read_rows<int32_t, float>(
          in, file_size, path, kind, [&](const unsigned char* src, float* dst, int64_t d, int64_t r) {
            for (int64_t j = 0; j < d; ++j) {
              int32_t v;
              std::memcpy(&v, src + j * 4, sizeof v);
              if (v > kExactFloatInt || v < -kExactFloatInt)
                fail(path, "integer " + std::to_string(v) + " at row " + std::to_string(r) + ", column " +
                               std::to_string(j) + " is beyond 2^24 and has no exact float32 value");
              dst[j] = static_cast<float>(v);
            }
          });
  }
  fail(path, "unhandled format");
}

Matrix<int64_t> read_ints(std::istream& in, uint64_t file_size, const std::string& path) {
  return read_rows<int32_t, int64_t>(in, file_size, path, Kind::ivecs,
                                     [](const unsigned char* src, int64_t* dst, int64_t d, int64_t) {
                                       for (int64_t j = 0; j < d; ++j) {
                                         int32_t v;
                                         std::memcpy(&v, src + j * 4, sizeof v);
                                         dst[j] = v;
                                       }
                                     });
}

void check_writable(MatrixView<const float> m, Kind kind, const std::string& path) {
  check_shape(m.rows, m.cols, kind, path);
  if (kind == Kind::ivecs) refuse(path, "float matrices are written to .npy, .fvecs or .bvecs; .ivecs holds ids");
  if (kind != Kind::bvecs) return;
  for (int64_t i = 0; i < m.size(); ++i) {
    const float v = m.data[i];
    if (!(v >= 0.0f && v <= 255.0f && v == std::floor(v)))
      refuse(path, ".bvecs stores integers 0..255, but row " + std::to_string(i / m.cols) + ", column " +
                       std::to_string(i % m.cols) + " holds " + number(v) + " (write .fvecs or .npy instead)");
  }
}

void check_writable(MatrixView<const int64_t> m, const std::string& path) {
  check_shape(m.rows, m.cols, Kind::ivecs, path);
  for (int64_t i = 0; i < m.size(); ++i) {
    const int64_t v = m.data[i];
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      refuse(path, ".ivecs stores int32, but row " + std::to_string(i / m.cols) + ", column " +
                       std::to_string(i % m.cols) + " holds id " + std::to_string(v) + " (write .npy for int64 ids)");
  }
}

void write_floats(std::ostream& out, MatrixView<const float> m, Kind kind, const std::string& path) {
  if (kind == Kind::bvecs)
    write_rows<uint8_t>(out, m, path, [](float v) { return static_cast<uint8_t>(v); });
  else
    write_rows<float>(out, m, path, [](float v) { return v; });
}

void write_ints(std::ostream& out, MatrixView<const int64_t> m, const std::string& path) {
  write_rows<int32_t>(out, m, path, [](int64_t v) { return static_cast<int32_t>(v); });
}

}  // namespace simkit::detail::vecs
