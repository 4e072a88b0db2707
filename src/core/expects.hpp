#pragma once
// SIMKIT_EXPECTS(cond, code, message parts...): throws simkit::Error(code, parts joined) when
// cond is false. The parts are streamed (strings, numbers), and only on failure.
//
//   SIMKIT_EXPECTS(k >= 1, invalid_argument, "k must be at least 1, got ", k);
//
// `code` is an ErrorCode enumerator name (invalid_argument, io, out_of_memory, device,
// unsupported).

#include <sstream>
#include <string>

#include <simkit/error.hpp>

namespace simkit::detail {

template <class... Parts>
[[noreturn]] void raise(ErrorCode code, const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  throw Error(code, s.str());
}

}  // namespace simkit::detail

#define SIMKIT_EXPECTS(cond, code, ...)                                \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      ::simkit::detail::raise(::simkit::ErrorCode::code, __VA_ARGS__); \
  } while (0)
