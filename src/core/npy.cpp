#include "npy.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <istream>
#include <limits>
#include <ostream>
#include <string_view>
#include <vector>

#include <simkit/error.hpp>

#include "core/quoted_path.hpp"

// The data bytes are copied straight into host memory, which is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "simkit's file formats assume a little-endian host");

namespace simkit::detail::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int64_t kExactFloatInt = int64_t{1} << 24;  // every integer of magnitude <= 2^24 is exact in float32

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::io, quoted_path(path) + ": " + msg);
}

void read_exact(std::istream& in, void* dst, uint64_t bytes, const std::string& path) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  // The size was checked against the header, so a short read means the file changed or the disk failed.
  if (static_cast<uint64_t>(in.gcount()) != bytes) fail(path, "unexpected end of file while reading the data");
}

int64_t item_size(Dtype t) {
  switch (t) {
    case Dtype::i1:
    case Dtype::u1: return 1;
    case Dtype::f2:
    case Dtype::i2:
    case Dtype::u2: return 2;
    case Dtype::f4:
    case Dtype::i4:
    case Dtype::u4: return 4;
    case Dtype::f8:
    case Dtype::i8:
    case Dtype::u8: return 8;
  }
  return 0;
}

const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::f2: return "float16";
    case Dtype::f4: return "float32";
    case Dtype::f8: return "float64";
    case Dtype::i1: return "int8";
    case Dtype::u1: return "uint8";
    case Dtype::i2: return "int16";
    case Dtype::u2: return "uint16";
    case Dtype::i4: return "int32";
    case Dtype::u4: return "uint32";
    case Dtype::i8: return "int64";
    case Dtype::u8: return "uint64";
  }
  return "?";
}

// 'descr' as NumPy writes it: a byte-order mark ('<' little, '>' big, '|' not applicable, '=' native)
// and a kind/size code such as f4 or i8.
Dtype parse_descr(const std::string& descr, const std::string& path) {
  std::string_view code(descr);
  char order = '=';
  if (!code.empty() && std::string_view("<>|=").find(code.front()) != std::string_view::npos) {
    order = code.front();
    code.remove_prefix(1);
  }
  static constexpr std::pair<std::string_view, Dtype> kCodes[] = {
      {"f2", Dtype::f2}, {"f4", Dtype::f4}, {"f8", Dtype::f8}, {"i1", Dtype::i1}, {"u1", Dtype::u1}, {"i2", Dtype::i2},
      {"u2", Dtype::u2}, {"i4", Dtype::i4}, {"u4", Dtype::u4}, {"i8", Dtype::i8}, {"u8", Dtype::u8},
  };
  for (const auto& [name, type] : kCodes) {
    if (code != name) continue;
    if (order == '>' && item_size(type) > 1)
      fail(path, "big-endian data (" + simkit::quoted(descr) +
                     ") is not supported; save it little-endian, e.g. arr.astype('<" + std::string(code) + "')");
    return type;
  }
  fail(path, "unsupported dtype " + simkit::quoted(descr) +
                 "; simkit reads float16, float32, float64 and 8/16/32/64-bit integers (little-endian)");
}

// A reader for the one Python literal NumPy writes as the header: a dict of three keys whose values
// are a string, a bool and a tuple of ints. Anything else is a malformed (or foreign) header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    std::vector<int64_t> shape;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal("a key");
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') bad("structured dtypes (a list in 'descr') are not supported");
        h.descr = string_literal("the 'descr' value");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (boolean())
          fail(path_, "Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)");
        have_order = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key " + simkit::quoted(key));
      }
      skip_space();
      if (peek() == ',')
        ++pos_;
      else if (peek() != '}')
        bad("expected ',' or '}' after the value of " + simkit::quoted(key));
    }
    ++pos_;
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
    if (pos_ != s_.size()) bad("unexpected characters after the dict");
    if (!have_descr || !have_order || !have_shape) bad("the dict must hold 'descr', 'fortran_order' and 'shape'");

    h.dtype = parse_descr(h.descr, path_);
    if (shape.empty()) fail(path_, "a 0-d (scalar) array; simkit reads 1-D or 2-D arrays");
    if (shape.size() > 2)
      fail(path_, std::to_string(shape.size()) + "-D array of shape " + shape_text(shape) +
                      "; simkit reads 1-D (n) or 2-D (n, d) arrays");
    h.rows = shape[0];
    h.cols = shape.size() == 2 ? shape[1] : 1;
    return h;
  }

  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string t = "(";
    for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
    return t + (shape.size() == 1 ? ",)" : ")");
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  [[noreturn]] void bad(const std::string& what) const { fail(path_, "malformed .npy header: " + what); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string string_literal(const char* what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad(std::string("expected a string for ") + what);
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }

  bool boolean() {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    bad("'fortran_order' must be True or False");
  }

  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      dims.push_back(integer());
      skip_space();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        bad("expected ',' or ')' in 'shape'");
    }
    ++pos_;
    return dims;
  }

  int64_t integer() {
    if (peek() < '0' || peek() > '9') bad("'shape' must be a tuple of non-negative integers");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (v > (int64_t{1} << 56)) bad("a dimension in 'shape' is implausibly large");
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (peek() == 'L') ++pos_;  // Python 2 wrote long integers with a suffix
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::string& path_;
};

std::string at(int64_t index, int64_t cols) {
  return "at row " + std::to_string(index / cols) + ", column " + std::to_string(index % cols);
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

// Reads `count` elements of type Stored and stores convert(value, index) into dst, a chunk at a
// time so that only a bounded buffer sits beside the output.
template <class Stored, class Out, class Convert>
void read_converted(std::istream& in, Out* dst, int64_t count, const std::string& path, Convert convert) {
  constexpr int64_t kChunk = (int64_t{4} << 20) / static_cast<int64_t>(sizeof(Stored));
  std::vector<Stored> buf(static_cast<size_t>(std::min(count, kChunk)));
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(kChunk, count - done);
    read_exact(in, buf.data(), static_cast<uint64_t>(n) * sizeof(Stored), path);
    for (int64_t i = 0; i < n; ++i) dst[done + i] = convert(buf[static_cast<size_t>(i)], done + i);
    done += n;
  }
}

template <class Out>
Matrix<Out> allocate(const Header& h, const std::string& path) {
  try {
    return Matrix<Out>(h.rows, h.cols);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::out_of_memory, quoted_path(path) + ": cannot allocate " + std::to_string(h.rows) + " x " +
                                              std::to_string(h.cols) + " elements");
  }
}

template <class Int>
Matrix<float> ints_to_floats(std::istream& in, const Header& h, const std::string& path) {
  Matrix<float> m = allocate<float>(h, path);
  read_converted<Int>(in, m.data(), m.size(), path, [&](Int v, int64_t i) {
    bool exact;
    if constexpr (std::is_signed_v<Int>)
      exact = v >= -kExactFloatInt && v <= kExactFloatInt;
    else
      exact = v <= static_cast<uint64_t>(kExactFloatInt);
    if (!exact)
      fail(path,
           "integer " + std::to_string(v) + " " + at(i, h.cols) + " is beyond 2^24 and has no exact float32 value");
    return static_cast<float>(v);
  });
  return m;
}

template <class Int>
Matrix<int64_t> ints_to_ints(std::istream& in, const Header& h, const std::string& path) {
  Matrix<int64_t> m = allocate<int64_t>(h, path);
  read_converted<Int>(in, m.data(), m.size(), path, [&](Int v, int64_t i) {
    if constexpr (std::is_same_v<Int, uint64_t>)
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(path, "uint64 value " + std::to_string(v) + " " + at(i, h.cols) + " does not fit int64");
    return static_cast<int64_t>(v);
  });
  return m;
}

void write_header(std::ostream& out, const char* descr, int64_t rows, int64_t cols) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // NumPy aligns the data to 64 bytes (magic 6 + version 2 + length 2 + dict + padding + '\n').
  const size_t unpadded = kMagicLen + 4 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  const auto len = static_cast<uint16_t>(dict.size());
  const char prefix[10] = {kMagic[0],
                           kMagic[1],
                           kMagic[2],
                           kMagic[3],
                           kMagic[4],
                           kMagic[5],
                           1,
                           0,
                           static_cast<char>(len & 0xff),
                           static_cast<char>(len >> 8)};
  out.write(prefix, sizeof prefix);
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
}

void finish(std::ostream& out, const std::string& path) {
  out.flush();
  if (!out) fail(path, std::string("write failed: ") + (errno ? std::strerror(errno) : "stream error"));
}

template <class T>
void write_array(std::ostream& out, const char* descr, MatrixView<const T> m, const std::string& path) {
  errno = 0;
  write_header(out, descr, m.rows, m.cols);
  // Chunked so a failing disk is noticed before gigabytes are pushed at it.
  constexpr int64_t kChunk = (int64_t{16} << 20) / static_cast<int64_t>(sizeof(T));
  const int64_t count = m.size();
  for (int64_t done = 0; done < count && out; done += kChunk) {
    const int64_t n = std::min(kChunk, count - done);
    out.write(reinterpret_cast<const char*>(m.data + done), static_cast<std::streamsize>(n * sizeof(T)));
  }
  finish(out, path);
}

}  // namespace

Header read_header(std::istream& in, uint64_t file_size, const std::string& path) {
  unsigned char prefix[12];
  if (file_size < 10) fail(path, "not a .npy file (only " + std::to_string(file_size) + " bytes)");
  read_exact(in, prefix, 10, path);
  if (std::memcmp(prefix, kMagic, kMagicLen) != 0) fail(path, "not a .npy file (bad magic bytes)");
  const int major = prefix[6], minor = prefix[7];
  if (minor != 0 || major < 1 || major > 3)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (simkit reads 1.0, 2.0 and 3.0)");
  uint64_t header_len = 0;
  uint64_t offset = 10;
  if (major == 1) {
    header_len = prefix[8] | (uint64_t{prefix[9]} << 8);
  } else {
    if (file_size < 12) fail(path, "truncated .npy header");
    read_exact(in, prefix + 10, 2, path);
    for (int b = 0; b < 4; ++b) header_len |= uint64_t{prefix[8 + b]} << (8 * b);
    offset = 12;
  }
  if (header_len > file_size - offset)
    fail(path, "truncated .npy header (it declares " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(file_size - offset) + " after the prefix)");
  std::string text(header_len, '\0');
  read_exact(in, text.data(), header_len, path);

  Header h = HeaderParser(text, path).parse();
  h.data_offset = offset + header_len;

  const uint64_t available = file_size - h.data_offset;
  const int64_t isz = item_size(h.dtype);
  const std::string what = "shape " + HeaderParser::shape_text({h.rows, h.cols}) + " of " + dtype_name(h.dtype);
  // Dimensions are below 2^56 each, so checking the product against the bytes present avoids overflow.
  const bool fits = h.cols == 0 || static_cast<uint64_t>(h.rows) <=
                                       available / static_cast<uint64_t>(isz) / static_cast<uint64_t>(h.cols);
  if (!fits)
    fail(path,
         "truncated: the header declares " + what + " but only " + std::to_string(available) + " data bytes follow it");
  const uint64_t need = static_cast<uint64_t>(h.rows) * static_cast<uint64_t>(h.cols) * static_cast<uint64_t>(isz);
  if (need < available)
    fail(path, std::to_string(available - need) + " trailing bytes after the data the header declares (" + what + ")");
  if (need > available)
    fail(path, "truncated: the header declares " + what + " (" + std::to_string(need) + " bytes) but only " +
                   std::to_string(available) + " data bytes follow it");
  return h;
}

// IEEE binary16 to binary32, exactly (every half is a float): sign, 5-bit exponent (bias 15),
// 10-bit fraction; subnormal halves become normal floats, Inf and NaN stay so.
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, fraction = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (fraction << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (fraction << 13);
  } else if (fraction == 0) {
    bits = sign;
  } else {
    // Subnormal: shift the fraction up to a leading 1, lowering the exponent as we go.
    exponent = 113;
    while ((fraction & 0x400u) == 0) fraction <<= 1, --exponent;
    bits = sign | (exponent << 23) | ((fraction & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Matrix<float> read_floats(std::istream& in, uint64_t file_size, const std::string& path, int64_t first, int64_t count) {
  Header h = read_header(in, file_size, path);
  if (count >= 0) {
    if (first < 0 || first > h.rows || count > h.rows - first)
      throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": rows [" + std::to_string(first) + ", " +
                                                   std::to_string(first + count) + ") are beyond its " +
                                                   std::to_string(h.rows) + " rows");
    in.seekg(static_cast<std::streamoff>(h.data_offset + static_cast<uint64_t>(first * h.cols * item_size(h.dtype))));
    if (!in) fail(path, "cannot seek to row " + std::to_string(first));
    h.rows = count;
  }
  switch (h.dtype) {
    case Dtype::f2: {
      Matrix<float> m = allocate<float>(h, path);
      read_converted<uint16_t>(in, m.data(), m.size(), path, [](uint16_t v, int64_t) { return half_to_float(v); });
      return m;
    }
    case Dtype::f4: {
      Matrix<float> m = allocate<float>(h, path);
      read_exact(in, m.data(), static_cast<uint64_t>(m.size()) * sizeof(float), path);
      return m;
    }
    case Dtype::f8: {
      Matrix<float> m = allocate<float>(h, path);
      read_converted<double>(in, m.data(), m.size(), path, [&](double v, int64_t i) {
        if (std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX))
          fail(path, "float64 value " + number(v) + " " + at(i, h.cols) + " is beyond the float32 range");
        return static_cast<float>(v);
      });
      return m;
    }
    case Dtype::i1: return ints_to_floats<int8_t>(in, h, path);
    case Dtype::u1: return ints_to_floats<uint8_t>(in, h, path);
    case Dtype::i2: return ints_to_floats<int16_t>(in, h, path);
    case Dtype::u2: return ints_to_floats<uint16_t>(in, h, path);
    case Dtype::i4: return ints_to_floats<int32_t>(in, h, path);
    case Dtype::u4: return ints_to_floats<uint32_t>(in, h, path);
    case Dtype::i8: return ints_to_floats<int64_t>(in, h, path);
    case Dtype::u8: return ints_to_floats<uint64_t>(in, h, path);
  }
  fail(path, "unhandled dtype");
}

Matrix<int64_t> read_ints(std::istream& in, uint64_t file_size, const std::string& path) {
  const Header h = read_header(in, file_size, path);
  switch (h.dtype) {
    case Dtype::f2:
    case Dtype::f4:
    case Dtype::f8:
      fail(path, std::string("ids must be integers, but the file holds ") + dtype_name(h.dtype) + " (" +
                     simkit::quoted(h.descr) + ")");
    case Dtype::i1: return ints_to_ints<int8_t>(in, h, path);
    case Dtype::u1: return ints_to_ints<uint8_t>(in, h, path);
    case Dtype::i2: return ints_to_ints<int16_t>(in, h, path);
    case Dtype::u2: return ints_to_ints<uint16_t>(in, h, path);
    case Dtype::i4: return ints_to_ints<int32_t>(in, h, path);
    case Dtype::u4: return ints_to_ints<uint32_t>(in, h, path);
    case Dtype::i8: return ints_to_ints<int64_t>(in, h, path);
    case Dtype::u8: return ints_to_ints<uint64_t>(in, h, path);
  }
  fail(path, "unhandled dtype");
}

void write_floats(std::ostream& out, MatrixView<const float> m, const std::string& path) {
  write_array(out, "<f4", m, path);
}

void write_ints(std::ostream& out, MatrixView<const int64_t> m, const std::string& path) {
  write_array(out, "<i8", m, path);
}

}  // namespace simkit::detail::npy
