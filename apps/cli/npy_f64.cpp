#include "npy_f64.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"

namespace simkit::cli {

namespace {

[[noreturn]] void fail(ErrorCode code, std::string_view option, const std::string& path, const std::string& what) {
  throw Error(code, std::string(option) + ": " + quoted_path(path) + ": " + what);
}

std::vector<double> checked(std::vector<double> v, std::string_view option, const std::string& path) {
  if (v.empty()) fail(ErrorCode::invalid_argument, option, path, "holds no values");
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      fail(ErrorCode::invalid_argument, option, path, "value " + std::to_string(i) + " is not finite");
  return v;
}

// Parses the dict of a format 1.x/2.x/3.x header; returns false when it is not a plain
// little-endian float vector, so that the caller hands the file to read_matrix instead.
bool parse_float_header(const std::string& dict, bool& is_f8, int64_t& count, std::string& why) {
  std::smatch m;
  if (!std::regex_search(dict, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) return false;
  const std::string descr = m[1];
  if (descr == "<f8")
    is_f8 = true;
  else if (descr == "<f4")
    is_f8 = false;
  else
    return false;
  if (std::regex_search(dict, std::regex(R"('fortran_order'\s*:\s*True)"))) return false;
  if (!std::regex_search(dict, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    why = "header has no shape";
    return true;
  }
  std::vector<int64_t> dims;
  const std::string shape = m[1];
  const std::regex digits(R"(\d+)");
  for (std::sregex_iterator it(shape.begin(), shape.end(), digits), end; it != end; ++it)
    dims.push_back(std::stoll(it->str()));
  if (dims.size() == 1) {
    count = dims[0];
  } else if (dims.size() == 2 && (dims[0] == 1 || dims[1] == 1)) {
    count = dims[0] * dims[1];
  } else {
    why = "shape " + simkit::quoted("(" + shape + ")") + " is not a vector (expected (n,), (n, 1) or (1, n))";
  }
  return true;
}

}  // namespace

void write_f64_column(const std::string& path, const std::vector<double>& values) {
  std::string header =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ", 1), }";
  // magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::io, "cannot open " + quoted_path(tmp) + " for writing");
    const uint16_t len = static_cast<uint16_t>(header.size());
    const char preamble[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, char(len & 0xff), char(len >> 8)};
    f.write(preamble, sizeof preamble);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    // Little-endian hosts only (as the library's own writers assume).
    f.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(double)));
    f.flush();
    if (!f) throw Error(ErrorCode::io, "could not write " + quoted_path(path));
  });
}

std::vector<double> read_f64_vector(const std::string& path, std::string_view option) {
  if (extension_of(path) == ".npy") {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(ErrorCode::io, option, path, "cannot open: " + std::string(std::strerror(errno)));
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
      fail(ErrorCode::io, option, path, "not an .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    size_t header_len = 0, start = 0;
    if (major == 1) {
      header_len = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
      start = 10;
    } else if (major == 2 || major == 3) {
      if (bytes.size() < 12) fail(ErrorCode::io, option, path, "truncated header");
      for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + size_t(i)])) << (8 * i);
      start = 12;
    } else {
      fail(ErrorCode::io, option, path, "unsupported .npy format version " + std::to_string(major));
    }
    if (start + header_len > bytes.size()) fail(ErrorCode::io, option, path, "truncated header");
    bool is_f8 = false;
    int64_t count = -1;
    std::string why;
    if (parse_float_header(bytes.substr(start, header_len), is_f8, count, why)) {
      if (!why.empty()) fail(ErrorCode::invalid_argument, option, path, why);
      const size_t item = is_f8 ? 8 : 4, offset = start + header_len;
      if (count < 0 || bytes.size() - offset != size_t(count) * item)
        fail(ErrorCode::io, option, path,
             "holds " + std::to_string(bytes.size() - offset) + " data bytes, the header says " +
                 std::to_string(count) + " values of " + std::to_string(item) + " bytes");
      std::vector<double> v(static_cast<size_t>(count));
      for (size_t i = 0; i < v.size(); ++i) {
        if (is_f8) {
          std::memcpy(&v[i], bytes.data() + offset + i * 8, 8);
        } else {
          float x;
          std::memcpy(&x, bytes.data() + offset + i * 4, 4);
          v[i] = x;
        }
      }
      return checked(std::move(v), option, path);
    }
  }
  Matrix<float> m;
  try {
    m = read_matrix(path);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
  if (m.rows() != 1 && m.cols() != 1)
    fail(ErrorCode::invalid_argument, option, path,
         "is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ", not a vector");
  const MatrixView<const float> v = m.view();
  return checked(std::vector<double>(v.data, v.data + v.rows * v.cols), option, path);
}

}  // namespace simkit::cli
