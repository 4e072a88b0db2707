// File formats: round trips through every format, hand-built .npy/.vecs fixtures (so the
// reader is checked against the format, not only against our own writer), every way a file can
// lie, and the atomic-write guarantee (an error leaves neither the target nor a temporary).

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "expect_error.hpp"

namespace fs = std::filesystem;
using simkit::Error;
using simkit::ErrorCode;
using simkit::Matrix;
using simkit::MatrixView;
using simkit::test::expect_error;
using simkit::test::expect_escaped_error;

namespace {

// ------------------------------------------------------------------ byte builders

template <class T>
void append(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) append(out, v);
  return out;
}

// A .npy file exactly as the format describes it; `dict` is the header text without padding.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  if (major == 1)
    append(out, static_cast<uint16_t>(header.size()));
  else
    append(out, static_cast<uint32_t>(header.size()));
  return out + header + data;
}

std::string npy_dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <class T>
std::string vecs_row(int32_t d, const std::vector<T>& values) {
  std::string out;
  append(out, d);
  return out + raw(values);
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Matrix<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 10.0f);
  Matrix<float> m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = dist(gen);
  return m;
}

template <class T>
bool same_bits(const Matrix<T>& a, const Matrix<T>& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size()) * sizeof(T)) == 0;
}

// ------------------------------------------------------------------ fixture: one directory per test

class Io : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("simkit_io_" + std::string(info->name()) + "_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string put(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return path(name);
  }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {3, 7}, {1000, 129}};

// ------------------------------------------------------------------ round trips

TEST_F(Io, NpyFloatRoundTripAndHeaderLayout) {
  for (const auto& [r, c] : kShapes) {
    const Matrix<float> m = random_matrix(r, c, static_cast<uint32_t>(r * 31 + c));
    const std::string p = path("m.npy");
    simkit::write_matrix(p, m);
    EXPECT_TRUE(same_bits(simkit::read_matrix(p), m)) << r << " x " << c;

    // The header NumPy itself would write: v1.0, 64-byte aligned, ending with a newline.
    const std::string bytes = file_bytes(p);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    uint16_t len;
    std::memcpy(&len, bytes.data() + 8, 2);
    EXPECT_EQ((10 + len) % 64, 0);
    EXPECT_EQ(bytes[9 + len], '\n');
    EXPECT_EQ(bytes.substr(10, len).find(
                  npy_dict("<f4", std::string("(") + std::to_string(r) + ", " + std::to_string(c) + ")")),
              0u);
    EXPECT_EQ(bytes.size(), 10u + len + static_cast<size_t>(r * c) * 4);
    EXPECT_EQ(listing(), std::set<std::string>{"m.npy"});
  }
}

TEST_F(Io, RowRangesReadTheSliceAndTheShape) {
  // The slices an MPI rank reads (simkit/mpi.hpp): every range of rows, .npy (the slice alone)
  // and .fvecs (read whole, the slice kept), bit for bit the rows read_matrix gives.
  const Matrix<float> m = random_matrix(7, 5, 11);
  for (const char* name : {"m.npy", "m.fvecs"}) {
    const std::string p = path(name);
    simkit::write_matrix(p, m);
    const simkit::MatrixShape shape = simkit::read_matrix_shape(p);
    EXPECT_EQ(shape.rows, 7);
    EXPECT_EQ(shape.cols, 5);
    for (int64_t first = 0; first <= 7; ++first)
      for (int64_t count = 0; first + count <= 7; ++count) {
        const Matrix<float> s = simkit::read_matrix_rows(p, first, count);
        ASSERT_EQ(s.rows(), count);
        ASSERT_EQ(s.cols(), 5);
        EXPECT_EQ(std::memcmp(s.data(), m.data() + first * 5, static_cast<size_t>(count * 5) * sizeof(float)), 0)
            << name << " rows " << first << " + " << count;
      }
    EXPECT_THROW(simkit::read_matrix_rows(p, 5, 3), simkit::Error);
    EXPECT_THROW(simkit::read_matrix_rows(p, -1, 1), simkit::Error);
    EXPECT_THROW(simkit::read_matrix_rows(p, 0, -1), simkit::Error);
  }
}

TEST_F(Io, FvecsRoundTripIsBitExact) {
  for (const auto& [r, c] : kShapes) {
    Matrix<float> m = random_matrix(r, c, static_cast<uint32_t>(r + c));
    m.data()[0] = -0.0f;
    m.data()[m.size() - 1] = std::numeric_limits<float>::denorm_min();
    const std::string p = path("m.fvecs");
    simkit::write_matrix(p, m);
    EXPECT_EQ(fs::file_size(p), static_cast<uintmax_t>(r * (4 + 4 * c)));
    EXPECT_TRUE(same_bits(simkit::read_matrix(p), m)) << r << " x " << c;
  }
}

TEST_F(Io, BvecsRoundTrip) {
  for (const auto& [r, c] : kShapes) {
    Matrix<float> m(r, c);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>((i * 37 + r) % 256);
    const std::string p = path("m.bvecs");
    simkit::write_matrix(p, m);
    EXPECT_EQ(fs::file_size(p), static_cast<uintmax_t>(r * (4 + c)));
    EXPECT_TRUE(same_bits(simkit::read_matrix(p), m)) << r << " x " << c;
  }
}

TEST_F(Io, IdsRoundTripIvecsAndNpy) {
  for (const auto& [r, c] : kShapes) {
    Matrix<int64_t> ids(r, c);
    for (int64_t i = 0; i < ids.size(); ++i) ids.data()[i] = (i % 3 == 0 ? -1 : 1) * (i * 7919 % 2147483647);
    ids.data()[0] = std::numeric_limits<int32_t>::max();
    simkit::write_ids(path("i.ivecs"), ids);
    EXPECT_TRUE(same_bits(simkit::read_ids(path("i.ivecs")), ids)) << r << " x " << c;

    ids.data()[ids.size() - 1] = int64_t{5} << 40;  // int64 only: fine for .npy
    simkit::write_ids(path("i.npy"), ids);
    EXPECT_TRUE(same_bits(simkit::read_ids(path("i.npy")), ids)) << r << " x " << c;
    EXPECT_NE(file_bytes(path("i.npy")).find("'descr': '<i8'"), std::string::npos);
  }
}

TEST_F(Io, IvecsReadAsFloatsAndBeyond2To24Refused) {
  const std::string ok = put("ok.ivecs", vecs_row<int32_t>(3, {1, -16777216, 16777216}));
  const Matrix<float> m = simkit::read_matrix(ok);
  ASSERT_EQ(m.rows(), 1);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m(0, 1), -16777216.0f);
  EXPECT_EQ(m(0, 2), 16777216.0f);
  const std::string big = put("big.ivecs", vecs_row<int32_t>(2, {0, 1}) + vecs_row<int32_t>(2, {16777217, 0}));
  expect_error([&] { simkit::read_matrix(big); }, ErrorCode::io, "row 1, column 0 is beyond 2^24");
  EXPECT_EQ(simkit::read_ids(big)(1, 0), 16777217);  // as ids it is fine
}

TEST_F(Io, ExtensionIsCaseInsensitive) {
  const Matrix<float> m = random_matrix(3, 7, 1);
  simkit::write_matrix(path("A.NPY"), m);
  simkit::write_matrix(path("B.FVecs"), m);
  EXPECT_TRUE(same_bits(simkit::read_matrix(path("A.NPY")), m));
  EXPECT_TRUE(same_bits(simkit::read_matrix(path("B.FVecs")), m));
}

TEST_F(Io, LargeFilesSpanSeveralReadChunks) {
  // 17,000 x 129 floats is ~8.8 MB of .fvecs, more than one 8 MiB read chunk; an int32 .npy of
  // 1.1M ids is more than one 4 MiB conversion chunk.
  const Matrix<float> m = random_matrix(17000, 129, 7);
  simkit::write_matrix(path("big.fvecs"), m);
  EXPECT_TRUE(same_bits(simkit::read_matrix(path("big.fvecs")), m));

  std::vector<int32_t> ids(1100000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 2654435761u % 1000003u) - 500000;
  const std::string p = put("ids.npy", npy_file(npy_dict("<i4", "(1100000,)"), raw(ids)));
  const Matrix<int64_t> got = simkit::read_ids(p);
  ASSERT_EQ(got.rows(), 1100000);
  ASSERT_EQ(got.cols(), 1);
  for (size_t i = 0; i < ids.size(); ++i)
    if (got.data()[i] != ids[i]) FAIL() << "id " << i << ": " << got.data()[i] << " != " << ids[i];
}

// ------------------------------------------------------------------ hand-built .npy of other dtypes

TEST_F(Io, NpyFloat64ReadConverted) {
  const std::vector<double> v = {0.1, -1e30, 3.5, 1e-3, -0.0, 123456789.123456};
  const std::string p = put("f8.npy", npy_file(npy_dict("<f8", "(2, 3)"), raw(v)));
  const Matrix<float> m = simkit::read_matrix(p);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(m.data()[i], static_cast<float>(v[i])) << i;

  const std::string huge = put("huge.npy", npy_file(npy_dict("<f8", "(1, 2)"), raw(std::vector<double>{1.0, 1e39})));
  expect_error([&] { simkit::read_matrix(huge); }, ErrorCode::io,
               "value 1e+39 at row 0, column 1 is beyond the float32 range");
  expect_error([&] { simkit::read_ids(p); }, ErrorCode::io, "ids must be integers");
}

// Every one of the 65,536 half-precision bit patterns, against a reference built from the
// format's definition with ldexp (not from bit shuffling): subnormals, both zeros, Inf, NaN.
TEST_F(Io, NpyFloat16EveryValueExactly) {
  std::vector<uint16_t> halves(65536);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  const std::string p = put("f2.npy", npy_file(npy_dict("<f2", "(256, 256)"), raw(halves)));
  const Matrix<float> m = simkit::read_matrix(p);
  ASSERT_EQ(m.rows(), 256);
  ASSERT_EQ(m.cols(), 256);
  for (uint32_t h = 0; h < 65536; ++h) {
    const int sign = (h >> 15) ? -1 : 1, exponent = int((h >> 10) & 0x1f), fraction = int(h & 0x3ff);
    const float got = m.data()[h];
    if (exponent == 31) {
      if (fraction == 0)
        ASSERT_EQ(got, sign * std::numeric_limits<float>::infinity()) << std::hex << h;
      else
        ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    const double want =
        exponent == 0 ? sign * std::ldexp(double(fraction), -24) : sign * std::ldexp(1024.0 + fraction, exponent - 25);
    ASSERT_EQ(double(got), want) << std::hex << h;
    ASSERT_EQ(std::signbit(got), sign < 0) << std::hex << h;  // -0 stays -0
  }
  expect_error([&] { simkit::read_ids(p); }, ErrorCode::io, "ids must be integers, but the file holds float16");
  const std::string cut = put("f2cut.npy", npy_file(npy_dict("<f2", "(3, 2)"), raw(std::vector<uint16_t>(5))));
  expect_error([&] { simkit::read_matrix(cut); }, ErrorCode::io, "truncated");
  const std::string be = put("f2be.npy", npy_file(npy_dict(">f2", "(2,)"), std::string(4, '\0')));
  expect_error([&] { simkit::read_matrix(be); }, ErrorCode::io, "big-endian");
}

// The real float16 embeddings: 117,659 x 384 MiniLM vectors, each of norm 1 (data README).
TEST_F(Io, NpyFloat16WordnetEmbeddings) {
  const std::string path = std::string(SIMKIT_SHARED_DATA_DIR) + "/wordnet/base_minilm_f16.npy";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "wordnet data not found at " << path << ": run scripts/make-data.sh wordnet";
  const Matrix<float> m = simkit::read_matrix(path);
  ASSERT_EQ(m.rows(), 117659);
  ASSERT_EQ(m.cols(), 384);
  for (int64_t i = 0; i < m.rows(); i += 997) {
    double sq = 0;
    for (int64_t j = 0; j < m.cols(); ++j) sq += double(m(i, j)) * m(i, j);
    ASSERT_NEAR(std::sqrt(sq), 1.0, 2e-3) << "row " << i;  // float16 rounding of 384 values
  }
}

TEST_F(Io, NpyInt32ReadAsFloatsAndIds) {
  const std::vector<int32_t> v = {0, -5, 16777216, 7, -16777216, 42};
  const std::string p = put("i4.npy", npy_file(npy_dict("<i4", "(3, 2)"), raw(v)));
  const Matrix<float> m = simkit::read_matrix(p);
  const Matrix<int64_t> ids = simkit::read_ids(p);
  ASSERT_EQ(m.rows(), 3);
  ASSERT_EQ(m.cols(), 2);
  ASSERT_EQ(ids.rows(), 3);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(m.data()[i], static_cast<float>(v[i]));
    EXPECT_EQ(ids.data()[i], v[i]);
  }
  const std::string big = put("big.npy", npy_file(npy_dict("<i4", "(2,)"), raw(std::vector<int32_t>{1, -16777217})));
  expect_error([&] { simkit::read_matrix(big); }, ErrorCode::io, "-16777217 at row 1, column 0");
  EXPECT_EQ(simkit::read_ids(big)(1, 0), -16777217);
}

TEST_F(Io, NpyUint8OneDimensionalIsAColumn) {
  const std::vector<uint8_t> v = {0, 1, 128, 255, 17};
  const std::string p = put("u1.npy", npy_file(npy_dict("|u1", "(5,)"), raw(v)));
  const Matrix<float> m = simkit::read_matrix(p);
  ASSERT_EQ(m.rows(), 5);
  ASSERT_EQ(m.cols(), 1);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(m(static_cast<int64_t>(i), 0), v[i]);
  EXPECT_EQ(simkit::read_ids(p)(3, 0), 255);
}

TEST_F(Io, NpyInt64AndUint64Ids) {
  const std::vector<int64_t> v = {int64_t{1} << 40, -3};
  const Matrix<int64_t> ids = simkit::read_ids(put("i8.npy", npy_file(npy_dict("<i8", "(1, 2)"), raw(v))));
  EXPECT_EQ(ids(0, 0), int64_t{1} << 40);
  EXPECT_EQ(ids(0, 1), -3);
  const std::string u8 =
      put("u8.npy", npy_file(npy_dict("<u8", "(2,)"), raw(std::vector<uint64_t>{5, uint64_t{1} << 63})));
  expect_error([&] { simkit::read_ids(u8); }, ErrorCode::io, "does not fit int64");
}

TEST_F(Io, NpyVersions2And3AndToleratedSpellings) {
  const std::vector<float> v = {1.5f, -2.5f};
  for (int major : {2, 3}) {
    const Matrix<float> m = simkit::read_matrix(put("v.npy", npy_file(npy_dict("<f4", "(2,)"), raw(v), major)));
    ASSERT_EQ(m.rows(), 2) << "version " << major;
    EXPECT_EQ(m(1, 0), -2.5f);
  }
  // Keys in another order, double quotes, Python 2 long suffixes, no trailing comma.
  const std::string odd = "{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"<f4\"}";
  const Matrix<float> m = simkit::read_matrix(put("odd.npy", npy_file(odd, raw(v))));
  EXPECT_EQ(m.rows(), 1);
  EXPECT_EQ(m.cols(), 2);
  // An empty array is a valid file; refusing empty sets is the compute functions' job.
  const Matrix<float> empty = simkit::read_matrix(put("empty.npy", npy_file(npy_dict("<f4", "(0, 4)"), "")));
  EXPECT_EQ(empty.rows(), 0);
  EXPECT_EQ(empty.cols(), 4);
}

// ------------------------------------------------------------------ .npy refusals

TEST_F(Io, NpyFortranOrderRefused) {
  const std::string p = put("f.npy", npy_file(npy_dict("<f4", "(2, 2)", "True"), raw(std::vector<float>(4, 1.0f))));
  expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, "Fortran-order");
}

TEST_F(Io, NpyBigEndianRefused) {
  const std::string p = put("be.npy", npy_file(npy_dict(">f4", "(2,)"), std::string(8, '\0')));
  expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, "big-endian");
  const std::string q = put("be8.npy", npy_file(npy_dict(">i8", "(1,)"), std::string(8, '\0')));
  expect_error([&] { simkit::read_ids(q); }, ErrorCode::io, "big-endian");
}

TEST_F(Io, NpyOtherDtypesRefused) {
  for (const char* descr : {"<f16", "<c8", "|b1", "<U3", "|O", "<M8[ns]"}) {
    const std::string p = put("d.npy", npy_file(npy_dict(descr, "(1,)"), std::string(2, '\0')));
    expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, std::string("unsupported dtype '") + descr);
  }
  const std::string rec = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }";
  expect_error([&] { simkit::read_matrix(put("rec.npy", npy_file(rec, std::string(4, '\0')))); }, ErrorCode::io,
               "structured dtypes");
}

TEST_F(Io, NpyDimensionalityRefused) {
  const std::string p3 = put("3d.npy", npy_file(npy_dict("<f4", "(2, 2, 2)"), std::string(32, '\0')));
  expect_error([&] { simkit::read_matrix(p3); }, ErrorCode::io, "3-D array of shape (2, 2, 2)");
  const std::string p0 = put("0d.npy", npy_file(npy_dict("<f4", "()"), std::string(4, '\0')));
  expect_error([&] { simkit::read_matrix(p0); }, ErrorCode::io, "0-d (scalar)");
}

TEST_F(Io, NpyTruncatedData) {
  const std::string p = put("t.npy", npy_file(npy_dict("<f4", "(3, 4)"), std::string(47, '\0')));
  expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, "truncated");
  // Cut inside the header itself.
  const std::string whole = npy_file(npy_dict("<f4", "(3, 4)"), std::string(48, '\0'));
  expect_error([&] { simkit::read_matrix(put("h.npy", whole.substr(0, 40))); }, ErrorCode::io, "truncated .npy header");
  expect_error([&] { simkit::read_matrix(put("s.npy", whole.substr(0, 7))); }, ErrorCode::io, "not a .npy file");
}

TEST_F(Io, NpyTrailingBytes) {
  const std::string p = put("t.npy", npy_file(npy_dict("<f4", "(3, 4)"), std::string(49, '\0')));
  expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, "1 trailing bytes");
}

TEST_F(Io, NpyLyingShape) {
  const std::string data = raw(std::vector<float>(12, 2.0f));  // really 3 x 4
  expect_error([&] { simkit::read_matrix(put("a.npy", npy_file(npy_dict("<f4", "(10, 4)"), data))); }, ErrorCode::io,
               "declares shape (10, 4) of float32");
  expect_error([&] { simkit::read_matrix(put("b.npy", npy_file(npy_dict("<f4", "(2, 4)"), data))); }, ErrorCode::io,
               "trailing bytes");
  // Dimensions whose product overflows 64 bits must not wrap into a plausible size.
  expect_error([&] { simkit::read_matrix(put("c.npy", npy_file(npy_dict("<f4", "(4294967296, 4294967297)"), data))); },
               ErrorCode::io, "truncated");
}

TEST_F(Io, NpyMalformedHeaders) {
  const std::string data(4, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f4', 'shape': (1,), }", "must hold 'descr', 'fortran_order' and 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }", "unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,) } junk", "after the dict"},
      {"not a dict at all", "expected '{'"},
  };
  for (const auto& [dict, needle] : cases)
    expect_error([&] { simkit::read_matrix(put("m.npy", npy_file(dict, data))); }, ErrorCode::io, needle);
  std::string wrong_version = npy_file(npy_dict("<f4", "(1,)"), data);
  wrong_version[6] = 4;
  expect_error([&] { simkit::read_matrix(put("v.npy", wrong_version)); }, ErrorCode::io, "version 4.0");
  expect_error([&] { simkit::read_matrix(put("magic.npy", "PK\x03\x04 this is a zip file")); }, ErrorCode::io,
               "bad magic");
}

// Text a header carries reaches the message through simkit::quoted: a newline cannot split the
// one-line error, an escape sequence cannot reach the terminal, a huge string is cut.
TEST_F(Io, NpyHeaderTextIsEscapedInMessages) {
  const std::string data(4, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {npy_dict("<f4\n\x1b[31m", "(1,)"), "unsupported dtype '<f4\\n\\x1b[31m'"},
      {npy_dict("\x1b]0;title\x07<f4", "(1,)"), "unsupported dtype '\\x1b]0;title\\x07<f4'"},
      {npy_dict(std::string("<f4\xc2\x9b") + "2J\xff", "(1,)"), "unsupported dtype '<f4\\xc2\\x9b2J\\xff'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'k\n\x1b[2J': 1, }", "unexpected key 'k\\n\\x1b[2J'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'back\\slash': 1, }", "unexpected key 'back\\\\slash'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), \"it's\": 1, }", "unexpected key 'it\\'s'"},
  };
  for (const auto& [dict, needle] : cases)
    expect_escaped_error([&] { simkit::read_matrix(put("m.npy", npy_file(dict, data))); }, ErrorCode::io, needle);
  // A 100 kB descr (a version 2.0 header holds it) is cut, with its length given.
  const std::string huge = npy_file(npy_dict(std::string(100000, 'A') + "\n", "(1,)"), data, 2);
  expect_escaped_error([&] { simkit::read_matrix(put("huge.npy", huge)); }, ErrorCode::io, "... (100001 bytes)", 400);
}

// A path given by the user is quoted too, in the .npy, .vecs and file-opening messages alike.
TEST_F(Io, HostilePathsAreEscapedInMessages) {
  const std::string name = "new\nline\x1b[2J";
  expect_escaped_error([&] { simkit::read_matrix(path(name + ".npy")); }, ErrorCode::io, "new\\nline\\x1b[2J.npy'");
  expect_escaped_error([&] { simkit::read_matrix(put(name + ".npy", "PK\x03\x04")); }, ErrorCode::io,
                       "new\\nline\\x1b[2J.npy': not a .npy file");
  expect_escaped_error([&] { simkit::read_matrix(put(name + ".fvecs", "\x03\x00")); }, ErrorCode::io,
                       "new\\nline\\x1b[2J.fvecs': truncated");
  expect_escaped_error([&] { simkit::read_matrix(put("m.\x1b[2J", "x")); }, ErrorCode::invalid_argument,
                       "unknown file extension '.\\x1b[2j'");
  expect_escaped_error([&] { simkit::write_matrix(path(name + "/m.npy"), Matrix<float>(1, 1)); }, ErrorCode::io,
                       "directory '" + path("new\\nline\\x1b[2J") + "' does not exist", 2000);
}

// ------------------------------------------------------------------ .vecs refusals

TEST_F(Io, FvecsTruncatedMidRow) {
  const std::string whole = vecs_row<float>(3, {1, 2, 3}) + vecs_row<float>(3, {4, 5, 6});
  const std::string p = put("t.fvecs", whole.substr(0, whole.size() - 5));
  expect_error([&] { simkit::read_matrix(p); }, ErrorCode::io, "1 rows and 11 bytes left over");
  expect_error([&] { simkit::read_matrix(put("tiny.fvecs", "\x03\x00")); }, ErrorCode::io,
               "cannot hold even one row's dimension field");
}

TEST_F(Io, VecsInconsistentDimension) {
  // The size is a whole number of 16-byte rows, so only the per-row check can catch row 2.
  const std::string bytes =
      vecs_row<float>(3, {1, 2, 3}) + vecs_row<float>(3, {4, 5, 6}) + vecs_row<float>(2, {7, 8}) + std::string(4, '\0');
  expect_error([&] { simkit::read_matrix(put("x.fvecs", bytes)); }, ErrorCode::io,
               "row 2 declares dimension d = 2 but row 0 declares 3");
  const std::string ib = vecs_row<int32_t>(1, {5}) + vecs_row<int32_t>(7, {6});
  expect_error([&] { simkit::read_ids(put("x.ivecs", ib)); }, ErrorCode::io, "row 1 declares dimension d = 7");
}

TEST_F(Io, VecsNonPositiveDimension) {
  expect_error([&] { simkit::read_matrix(put("z.fvecs", vecs_row<float>(0, {}) + vecs_row<float>(0, {}))); },
               ErrorCode::io, "d = 0; d must be >= 1");
  expect_error(
      [&] {
        simkit::read_matrix(put("n.bvecs", vecs_row<uint8_t>(-4, {1, 2, 3, 4})));
      },
      ErrorCode::io, "d = -4; d must be >= 1");
}

TEST_F(Io, VecsEmptyFile) {
  for (const char* name : {"e.fvecs", "e.ivecs", "e.bvecs"})
    expect_error([&] { simkit::read_matrix(put(name, "")); }, ErrorCode::io, "no vectors");
  expect_error([&] { simkit::read_ids(put("e.ivecs", "")); }, ErrorCode::io, "no vectors");
}

// ------------------------------------------------------------------ names, paths, and what a write refuses

TEST_F(Io, UnknownExtension) {
  const Matrix<float> m(2, 2, 1.0f);
  for (const char* name : {"m.txt", "m.npz", "m", "m.fvecs.bak"}) {
    expect_error([&] { simkit::read_matrix(put(name, "x")); }, ErrorCode::invalid_argument,
                 "supported: .npy, .fvecs, .ivecs, .bvecs");
    fs::remove(path(name));
    expect_error([&] { simkit::write_matrix(path(name), m); }, ErrorCode::invalid_argument, ".npy, .fvecs");
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(Io, MissingFileAndDirectory) {
  expect_error([&] { simkit::read_matrix(path("absent.npy")); }, ErrorCode::io,
               "'" + path("absent.npy") + "': cannot open: No such file or directory");
  fs::create_directory(path("sub.fvecs"));
  expect_error([&] { simkit::read_matrix(path("sub.fvecs")); }, ErrorCode::io, "cannot open: Is a directory");
  expect_error([&] { simkit::write_matrix(path("sub.fvecs"), Matrix<float>(1, 1)); }, ErrorCode::io,
               "it is a directory");
}

TEST_F(Io, WriteIntoMissingDirectoryLeavesNothing) {
  const Matrix<float> m = random_matrix(3, 7, 3);
  const std::string target = path("no/such/dir/m.npy");
  expect_error([&] { simkit::write_matrix(target, m); }, ErrorCode::io, "does not exist");
  expect_error([&] { simkit::write_ids(path("nodir/i.ivecs"), Matrix<int64_t>(1, 1)); }, ErrorCode::io,
               "does not exist");
  EXPECT_TRUE(listing().empty());
  put("file", "x");
  expect_error([&] { simkit::write_matrix(path("file/m.npy"), m); }, ErrorCode::io, "is not a directory");
  EXPECT_EQ(listing(), std::set<std::string>{"file"});
}

TEST_F(Io, ThrowingWriterLeavesNoFileAndKeepsTheOldOne) {
  const std::string target = path("out.csv");
  std::string seen_tmp;
  EXPECT_THROW(simkit::write_atomically(target,
                                        [&](const std::string& tmp) {
                                          seen_tmp = tmp;
                                          std::ofstream(tmp) << "half a file";
                                          throw std::runtime_error("writer gave up");
                                        }),
               std::runtime_error);
  EXPECT_EQ(fs::path(seen_tmp).parent_path(), dir_);  // beside the target, so rename stays on one file system
  EXPECT_NE(seen_tmp, target);
  EXPECT_TRUE(listing().empty());

  put("out.csv", "old contents");
  EXPECT_THROW(simkit::write_atomically(target, [](const std::string&) { throw Error(ErrorCode::io, "boom"); }), Error);
  EXPECT_EQ(file_bytes(target), "old contents");
  EXPECT_EQ(listing(), std::set<std::string>{"out.csv"});

  simkit::write_atomically(target, [](const std::string& tmp) { std::ofstream(tmp) << "new contents"; });
  EXPECT_EQ(file_bytes(target), "new contents");
  EXPECT_EQ(listing(), std::set<std::string>{"out.csv"});
}

TEST_F(Io, TemporaryNamesAreUniqueAndCarryThePid) {
  std::set<std::string> names;
  for (int i = 0; i < 3; ++i)
    simkit::write_atomically(path("x.npy"), [&](const std::string& tmp) { names.insert(tmp); });
  EXPECT_EQ(names.size(), 3u);
  for (const auto& n : names) EXPECT_NE(n.find(std::to_string(::getpid())), std::string::npos) << n;
  EXPECT_EQ(listing(), std::set<std::string>{"x.npy"});
}

TEST_F(Io, WritesRefuseWhatTheFormatCannotHold) {
  Matrix<float> m(2, 3, 4.0f);
  for (float bad : {256.0f, -1.0f, 2.5f, std::nanf("")}) {
    m(1, 2) = bad;
    expect_error([&] { simkit::write_matrix(path("m.bvecs"), m); }, ErrorCode::invalid_argument,
                 ".bvecs stores integers 0..255, but row 1, column 2");
  }
  Matrix<int64_t> ids(2, 2, 1);
  ids(0, 1) = int64_t{1} << 31;
  expect_error([&] { simkit::write_ids(path("i.ivecs"), ids); }, ErrorCode::invalid_argument,
               ".ivecs stores int32, but row 0, column 1");
  expect_error([&] { simkit::write_ids(path("i.fvecs"), ids); }, ErrorCode::invalid_argument, "ids are written to");
  expect_error([&] { simkit::write_matrix(path("m.ivecs"), m); }, ErrorCode::invalid_argument, ".ivecs holds ids");
  expect_error([&] { simkit::write_matrix(path("e.fvecs"), Matrix<float>(0, 3)); }, ErrorCode::invalid_argument,
               "cannot store an empty matrix");
  expect_error([&] { simkit::write_matrix(path("e.fvecs"), Matrix<float>(3, 0)); }, ErrorCode::invalid_argument,
               "cannot store an empty matrix");
  float x = 1.0f;
  expect_error([&] { simkit::write_matrix(path("d.npy"), MatrixView<const float>(&x, 1, 1, simkit::Memory::device)); },
               ErrorCode::invalid_argument, "device matrix");
  expect_error([&] { simkit::read_ids(path("d.fvecs")); }, ErrorCode::invalid_argument, "ids are read from");
  EXPECT_TRUE(listing().empty());
}

// ------------------------------------------------------------------ the real data set

TEST_F(Io, RealDigitsFiles) {
  const std::string data = std::string(SIMKIT_TEST_DATA_DIR) + "/digits/";

  const Matrix<float> base = simkit::read_matrix(data + "digits_base.fvecs");
  EXPECT_EQ(base.rows(), 1697);
  EXPECT_EQ(base.cols(), 64);
  const Matrix<float> queries = simkit::read_matrix(data + "digits_query.fvecs");
  EXPECT_EQ(queries.rows(), 100);
  EXPECT_EQ(queries.cols(), 64);
  // scikit-learn's digits are 8x8 images of integer intensities 0..16.
  for (int64_t i = 0; i < base.size(); ++i) {
    const float v = base.data()[i];
    ASSERT_TRUE(v >= 0 && v <= 16 && v == std::floor(v)) << "element " << i << " = " << v;
  }

  const Matrix<int64_t> gt = simkit::read_ids(data + "digits_groundtruth_sqeuclidean.ivecs");
  EXPECT_EQ(gt.rows(), 100);
  EXPECT_EQ(gt.cols(), 100);
  for (int64_t i = 0; i < gt.size(); ++i) ASSERT_TRUE(gt.data()[i] >= 0 && gt.data()[i] < 1697) << gt.data()[i];
  for (int64_t q = 0; q < gt.rows(); ++q)
    EXPECT_EQ(std::set<int64_t>(gt.data() + q * 100, gt.data() + (q + 1) * 100).size(), 100u) << "query " << q;

  const Matrix<int64_t> labels = simkit::read_ids(data + "digits_labels.npy");
  EXPECT_EQ(labels.rows(), 1797);
  EXPECT_EQ(labels.cols(), 1);
  std::set<int64_t> classes(labels.data(), labels.data() + labels.size());
  EXPECT_EQ(classes, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  // Our writer reproduces the original bytes, and .npy carries the same values.
  simkit::write_matrix(path("base.fvecs"), base);
  EXPECT_EQ(file_bytes(path("base.fvecs")), file_bytes(data + "digits_base.fvecs"));
  simkit::write_matrix(path("base.npy"), base);
  EXPECT_TRUE(same_bits(simkit::read_matrix(path("base.npy")), base));
  simkit::write_ids(path("gt.ivecs"), gt);
  EXPECT_EQ(file_bytes(path("gt.ivecs")), file_bytes(data + "digits_groundtruth_sqeuclidean.ivecs"));
}

}  // namespace
