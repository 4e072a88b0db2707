// Fuzzes the two readers of a search body (apps/server/search_body.hpp): the strict fast path
// parse_simple_search and the general path parse_object + parse_search, and measure_json /
// check_body_shape (request_limits.hpp) that run before any tree is built.
//
// Input: one byte (the collection's dimension is 1 + byte % 8, the limits variant byte / 8;
// server_fuzz_support.hpp), then the body.
//
// What must hold: the general path refuses with ApiError 400 or 413 and nothing else; when the
// fast path accepts a body, the general path accepts it too and reads the same vector (bit for
// bit), limit, offset and with_payload, and no filter; measure_json counts what the JSON parser
// sees; an accepted query has the collection's dimension, finite values and limits in range.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "api_error.hpp"
#include "request_json.hpp"
#include "search_body.hpp"
#include "server_fuzz_support.hpp"

namespace {

using simkit::fuzz::check;

constexpr int64_t kMaxLimit = 10000;  // docs/API.md: limit is 1 to 10000

void check_query(const simkit::server::SearchQuery& q, int64_t dim, const char* path) {
  const std::string p = path;
  check(static_cast<int64_t>(q.vector.size()) == dim, p + " accepted a vector of the wrong dimension");
  for (const float x : q.vector) check(std::isfinite(x), p + " accepted a value that is not finite");
  check(q.limit >= 1 && q.limit <= kMaxLimit, p + " accepted a limit out of range");
  check(q.offset >= 0 && q.offset <= kMaxLimit, p + " accepted an offset out of range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t dim = 1 + data[0] % 8;
  const simkit::server::RequestLimits limits = simkit::fuzz::limits_for(data[0] / 8);
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);

  simkit::fuzz::check_measure(body);

  simkit::server::SearchQuery fast;
  const bool simple = simkit::server::parse_simple_search(body, dim, kMaxLimit, fast);
  if (simple) check_query(fast, dim, "parse_simple_search");

  simkit::server::SearchQuery general;
  bool accepted = false;
  unsigned status = 0;
  std::string why;
  try {
    const nlohmann::json j = simkit::server::parse_object(body, limits);
    check(body.find('\0') == std::string::npos,
          "parse_object accepted a body with a NUL byte (and ignored what follows it)");
    general = simkit::server::parse_search(j, dim, kMaxLimit, "body");
    accepted = true;
  } catch (const simkit::server::ApiError& e) {
    simkit::fuzz::check_message(e);
    status = e.status();
    why = e.what();
    check(status == 400 || status == 413, "a search body refused with status " + std::to_string(status) + ": " + why);
  }
  if (accepted) check_query(general, dim, "parse_search");

  if (simple) {
    // A body the fast path takes is an object holding one array: within every limits variant.
    check(accepted, "the fast path accepted a body the general path refuses (" + why + ")");
    {
      check(!general.filter.has_value(), "the general path found a filter in a body the fast path took");
      check(general.vector.size() == fast.vector.size() &&
                std::memcmp(general.vector.data(), fast.vector.data(), fast.vector.size() * sizeof(float)) == 0,
            "the fast and general paths read different vectors");
      check(general.limit == fast.limit && general.offset == fast.offset && general.with_payload == fast.with_payload,
            "the fast and general paths read different limit / offset / with_payload");
    }
  }
  return 0;
}
