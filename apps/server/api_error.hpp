#pragma once
// What a route throws to answer with an HTTP error: the status and a message naming the
// problem, sent as {"status": {"error": message}, "time": seconds}.

#include <stdexcept>
#include <string>

namespace simkit::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(unsigned status, const std::string& message) : std::runtime_error(message), status_(status) {}
  unsigned status() const noexcept { return status_; }

 private:
  unsigned status_;
};

[[noreturn]] inline void bad_request(const std::string& message) { throw ApiError(400, message); }

}  // namespace simkit::server
