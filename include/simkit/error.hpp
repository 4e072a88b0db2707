#pragma once
// Errors raised by every public simkit entry point.
//
// Each public function validates its input before touching a device and throws a
// simkit::Error whose code() tells the caller what kind of problem it was. The CLI maps
// invalid_argument and io to exit status 2; the other codes to exit status 1.

#include <stdexcept>
#include <string>
#include <string_view>

namespace simkit {

enum class ErrorCode {
  invalid_argument,  // wrong shape, k out of range, NaN/Inf, empty set, bad option value
  io,                // file missing, unreadable, truncated, or its header disagrees with its size
  out_of_memory,     // host or device allocation failed, or the budget is too small
  device,            // a CUDA call failed, or a GPU was requested and none is usable
  unsupported,       // valid request this build cannot serve (e.g. GPU in a CPU-only build)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

const char* to_string(ErrorCode code) noexcept;

/// Text from a file or a request made safe to put in a one-line message: quoted, at most
/// `max_chars` characters, with quotes, backslashes, control characters and bytes that are not
/// UTF-8 escaped (\n, \x1b, \xff), and "... (N bytes)" after a cut. Every simkit message that
/// repeats such text goes through it, so a newline cannot split an error line and an escape
/// sequence cannot reach a terminal. Call it as simkit::quoted: unqualified, a std::string
/// argument also finds std::quoted by argument-dependent lookup, which wins and escapes nothing.
std::string quoted(std::string_view text, size_t max_chars = 60);

}  // namespace simkit
