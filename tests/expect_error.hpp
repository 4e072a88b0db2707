#pragma once
// The one way the tests assert that a call is refused: simkit::Error with the expected code and
// a message that names the problem.

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

}  // namespace simkit::test
