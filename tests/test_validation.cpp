// Every bad argument to the public pairwise / knn / parse entry points is refused up front with
// Error(invalid_argument) and a message that names the problem.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/knn.hpp>
#include <simkit/pairwise.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

/// f() must throw simkit::Error with code invalid_argument and a message containing `needle`.
void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  expect_error(f, ErrorCode::invalid_argument, needle);
}

class Validation : public ::testing::Test {
 protected:
  Matrix<float> Q = random_matrix(4, 6, 1);
  Matrix<float> X = random_matrix(9, 6, 2);
  Context ctx = cpu_context();
};

TEST_F(Validation, DimensionMismatch) {
  const Matrix<float> X5 = random_matrix(9, 5, 3);
  expect_invalid([&] { (void)pairwise(ctx, Q.view(), X5.view(), Metric::l2); }, "dimension mismatch");
  expect_invalid([&] { (void)knn(ctx, Q.view(), X5.view(), 2, Metric::cosine); }, "dimension mismatch");
  expect_invalid([&] { (void)knn(ctx, Q.view(), X5.view(), 2, Metric::cosine); }, "d = 6");
}

TEST_F(Validation, KOutOfRange) {
  for (int64_t k : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()})
    expect_invalid([&] { (void)knn(ctx, Q.view(), X.view(), k, Metric::l2); }, "k must be at least 1");
  expect_invalid([&] { (void)knn(ctx, Q.view(), X.view(), 10, Metric::l2); }, "exceeds the base size n = 9");
  expect_invalid([&] { (void)knn(ctx, Q.view(), X.view(), std::numeric_limits<int64_t>::max(), Metric::l1); },
                 "exceeds the base size");
  // k = n is allowed.
  EXPECT_NO_THROW((void)knn(ctx, Q.view(), X.view(), 9, Metric::l2));
}

TEST_F(Validation, EmptySets) {
  const MatrixView<const float> no_rows(Q.data(), 0, 6), no_cols(Q.data(), 4, 0), null_view;
  for (const auto& empty : {no_rows, no_cols, null_view}) {
    expect_invalid([&] { (void)pairwise(ctx, empty, X.view(), Metric::dot); }, "queries is empty");
    expect_invalid([&] { (void)pairwise(ctx, Q.view(), empty, Metric::dot); }, "base is empty");
    expect_invalid([&] { (void)knn(ctx, empty, X.view(), 1, Metric::dot); }, "queries is empty");
    expect_invalid([&] { (void)knn(ctx, Q.view(), empty, 1, Metric::dot); }, "base is empty");
  }
  const MatrixView<const float> null_data(nullptr, 3, 6);
  expect_invalid([&] { (void)pairwise(ctx, null_data, X.view(), Metric::dot); }, "null data pointer");
}

TEST_F(Validation, NonFiniteInputs) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    Matrix<float> Qb = Q, Xb = X;
    Qb(2, 3) = bad;
    Xb(8, 5) = bad;
    expect_invalid([&] { (void)pairwise(ctx, Qb.view(), X.view(), Metric::l2); }, "queries contains NaN or Inf");
    expect_invalid([&] { (void)pairwise(ctx, Qb.view(), X.view(), Metric::l2); }, "row 2, column 3");
    expect_invalid([&] { (void)pairwise(ctx, Q.view(), Xb.view(), Metric::cosine); }, "base contains NaN or Inf");
    expect_invalid([&] { (void)pairwise(ctx, Q.view(), Xb.view(), Metric::cosine); }, "row 8, column 5");
    expect_invalid([&] { (void)knn(ctx, Qb.view(), X.view(), 3, Metric::l1); }, "queries contains NaN or Inf");
    expect_invalid([&] { (void)knn(ctx, Q.view(), Xb.view(), 3, Metric::pearson); }, "base contains NaN or Inf");
  }
  // A large input goes through the parallel scan; the first bad element is still the one named.
  Matrix<float> big = random_matrix(3000, 400, 4);
  big(2999, 399) = std::numeric_limits<float>::quiet_NaN();
  big(1234, 7) = std::numeric_limits<float>::infinity();
  expect_invalid([&] { (void)knn(ctx, big.view(), big.view(), 1, Metric::l2); }, "row 1234, column 7");
}

TEST_F(Validation, WrongOutputShapes) {
  Matrix<float> out(4, 8);
  expect_invalid([&] { pairwise(ctx, Q.view(), X.view(), Metric::l2, out.view()); }, "output must be 4 x 9, got 4 x 8");
  Matrix<float> out_t(9, 4);
  expect_invalid([&] { pairwise(ctx, Q.view(), X.view(), Metric::l2, out_t.view()); }, "output must be 4 x 9");
  Matrix<float> values(4, 3), bad_values(3, 3);
  Matrix<int64_t> ids(4, 3), bad_ids(4, 2);
  expect_invalid([&] { knn(ctx, Q.view(), X.view(), 3, Metric::l2, bad_values.view(), ids.view()); },
                 "values must be 4 x 3");
  expect_invalid([&] { knn(ctx, Q.view(), X.view(), 3, Metric::l2, values.view(), bad_ids.view()); },
                 "ids must be 4 x 3");
  expect_invalid(
      [&] { knn(ctx, Q.view(), X.view(), 3, Metric::l2, values.view(), MatrixView<int64_t>(nullptr, 4, 3)); },
      "ids has a null data pointer");
}

TEST_F(Validation, DeviceMemoryOnCpuBackend) {
  const MatrixView<const float> on_device(Q.data(), Q.rows(), Q.cols(), Memory::device);
  expect_invalid([&] { (void)pairwise(ctx, on_device, X.view(), Metric::l2); }, "CPU backend needs host memory");
}

TEST(ParseNames, Metric) {
  for (const char* name : {"l2", "sqeuclidean", "cosine", "dot", "pearson", "l1"})
    EXPECT_STREQ(to_string(parse_metric(name)), name);
  for (const char* bad : {"L2", "euclidean", "", "cos", "l2 "})
    expect_invalid([&] { (void)parse_metric(bad); }, std::string("unknown metric '") + bad + "'");
  expect_invalid([&] { (void)parse_metric("manhattan"); },
                 "expected one of: l2, sqeuclidean, cosine, dot, pearson, l1");
}

TEST(ParseNames, Device) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu);
  EXPECT_EQ(parse_device("gpu"), Device::gpu);
  EXPECT_EQ(parse_device("auto"), Device::automatic);
  for (const char* bad : {"GPU", "cuda", "", "cpu0"})
    expect_invalid([&] { (void)parse_device(bad); }, std::string("unknown device '") + bad + "'");
}

// A name that is not one of the known ones comes back escaped: it may come from a file or a
// request, so a newline or an escape sequence in it must not reach the one-line message raw.
TEST(ParseNames, HostileNamesAreEscaped) {
  expect_escaped_error([] { (void)parse_metric("l2\n\x1b[2J"); }, ErrorCode::invalid_argument,
                       "unknown metric 'l2\\n\\x1b[2J' (expected one of");
  expect_escaped_error([] { (void)parse_metric(std::string(5000, 'm')); }, ErrorCode::invalid_argument,
                       "... (5000 bytes) (expected one of", 200);
  expect_escaped_error([] { (void)parse_device("gpu\x1b[0m\r"); }, ErrorCode::invalid_argument,
                       "unknown device 'gpu\\x1b[0m\\r' (expected cpu, gpu or auto)");
  expect_escaped_error([] { (void)parse_gauss_method("fmm\n"); }, ErrorCode::invalid_argument,
                       "unknown Gauss transform method 'fmm\\n'");
  expect_escaped_error([] { (void)parse_bandwidth_rule("\x1b]0;x\x07"); }, ErrorCode::invalid_argument,
                       "got '\\x1b]0;x\\x07'");
}

TEST(Quoted, EscapesWhatATerminalActsOn) {
  EXPECT_EQ(simkit::quoted(""), "''");
  EXPECT_EQ(simkit::quoted("l2"), "'l2'");
  EXPECT_EQ(simkit::quoted("a\nb\r\tc"), "'a\\nb\\r\\tc'");
  EXPECT_EQ(simkit::quoted("\x1b[2J\x07\x7f\x01"), "'\\x1b[2J\\x07\\x7f\\x01'");
  EXPECT_EQ(simkit::quoted(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(simkit::quoted("it's"), "'it\\'s'");
  EXPECT_EQ(simkit::quoted("a\\b"), "'a\\\\b'");
  // C1 controls (U+0080..U+009F) are well-formed UTF-8 but act like ESC: U+009B is CSI.
  EXPECT_EQ(simkit::quoted(std::string("\xc2\x9b") + "2J"), "'\\xc2\\x9b2J'");
  EXPECT_EQ(simkit::quoted("\xc2\x85"), "'\\xc2\\x85'");
}

TEST(Quoted, EscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(simkit::quoted("\xff"), "'\\xff'");
  EXPECT_EQ(simkit::quoted("\xc0\xaf"), "'\\xc0\\xaf'");                    // overlong '/'
  EXPECT_EQ(simkit::quoted("\xe0\x80\xaf"), "'\\xe0\\x80\\xaf'");           // overlong, three bytes
  EXPECT_EQ(simkit::quoted("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");           // a UTF-16 surrogate
  EXPECT_EQ(simkit::quoted("\xf4\x90\x80\x80"), "'\\xf4\\x90\\x80\\x80'");  // past U+10FFFF
  EXPECT_EQ(simkit::quoted("\xe2\x82"), "'\\xe2\\x82'");                    // cut short
  EXPECT_EQ(simkit::quoted("\xe2\x82x"), "'\\xe2\\x82x'");
  EXPECT_EQ(simkit::quoted("\x80"), "'\\x80'");  // a lone continuation byte
  // Every single byte comes out printable ASCII.
  for (int b = 0; b < 256; ++b) {
    const std::string q = simkit::quoted(std::string(1, static_cast<char>(b)));
    EXPECT_TRUE(printable_ascii(q)) << "byte " << b << ": " << ::testing::PrintToString(q);
  }
}

TEST(Quoted, KeepsWellFormedUtf8) {
  EXPECT_EQ(simkit::quoted("m\xc3\xa9trica"), "'m\xc3\xa9trica'");      // métrica
  EXPECT_EQ(simkit::quoted("\xc2\xa0"), "'\xc2\xa0'");                  // U+00A0, the first after the C1 block
  EXPECT_EQ(simkit::quoted("\xe2\x82\xac"), "'\xe2\x82\xac'");          // U+20AC
  EXPECT_EQ(simkit::quoted("\xf0\x9f\x98\x80"), "'\xf0\x9f\x98\x80'");  // U+1F600
  EXPECT_EQ(simkit::quoted("\xf4\x8f\xbf\xbf"), "'\xf4\x8f\xbf\xbf'");  // U+10FFFF
}

TEST(Quoted, CutsLongTextBetweenCharacters) {
  EXPECT_EQ(simkit::quoted(std::string(60, 'a')), "'" + std::string(60, 'a') + "'");
  EXPECT_EQ(simkit::quoted(std::string(61, 'a')), "'" + std::string(60, 'a') + "'... (61 bytes)");
  EXPECT_EQ(simkit::quoted(std::string(100000, 'a')).size(), 62 + std::string("... (100000 bytes)").size());
  EXPECT_EQ(simkit::quoted("abcdef", 3), "'abc'... (6 bytes)");
  EXPECT_EQ(simkit::quoted("abc", 0), "''... (3 bytes)");
  // max_chars counts characters: an escape or a multi-byte character is one, never split.
  EXPECT_EQ(simkit::quoted("\n\n\n", 2), "'\\n\\n'... (3 bytes)");
  EXPECT_EQ(simkit::quoted("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "'\xc3\xa9\xc3\xa9'... (6 bytes)");
  EXPECT_EQ(simkit::quoted("\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 1), "'\xf0\x9f\x98\x80'... (8 bytes)");
  EXPECT_EQ(simkit::quoted("\xc3\xa9\xc3\xa9", 2), "'\xc3\xa9\xc3\xa9'");
}

}  // namespace
}  // namespace simkit::test
