#include <simkit/error.hpp>

namespace simkit {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::io: return "i/o error";
    case ErrorCode::out_of_memory: return "out of memory";
    case ErrorCode::device: return "device error";
    case ErrorCode::unsupported: return "unsupported";
  }
  return "error";
}

}  // namespace simkit
