#pragma once
// The one way the tests assert that a call is refused: simkit::Error with the expected code and
// a message that names the problem.

#include <cstddef>
#include <exception>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <simkit/error.hpp>

namespace simkit::test {

/// f() must throw simkit::Error with `code` and a message containing `needle`; returning
/// normally, or throwing anything else, is a failure.
inline void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << "message: " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' lacks '" << needle << "'";
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-simkit exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "no simkit::Error thrown; expected one mentioning '" << needle << "'";
}

/// True when every byte of `text` is printable ASCII: no newline to split a one-line error, no
/// escape (C0, DEL, or a C1 control in UTF-8) for the terminal that shows it.
inline bool printable_ascii(const std::string& text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

/// As expect_error, for input that carries hostile text (from a file or the caller): the message
/// must also show it escaped (simkit::quoted), printable ASCII throughout and at most `max_bytes`
/// long.
inline void expect_escaped_error(const std::function<void()>& f, ErrorCode code, const std::string& needle,
                                 size_t max_bytes = 1000) {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), code) << "message: " << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message '" << what << "' lacks '" << needle << "'";
    EXPECT_TRUE(printable_ascii(what)) << "message holds raw control bytes: " << ::testing::PrintToString(what);
    EXPECT_LE(what.size(), max_bytes) << "message: " << what;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-simkit exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "no simkit::Error thrown; expected one mentioning '" << needle << "'";
}

}  // namespace simkit::test
