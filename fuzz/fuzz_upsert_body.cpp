// Fuzzes the reader of an upsert body (apps/server/upsert_body.hpp): parse_object (with
// measure_json / check_body_shape before it) and parse_upsert, with the payloads kept as
// compact text (payload.hpp).
//
// Input: one byte (the collection's dimension is 1 + byte % 8, the limits variant byte / 8;
// server_fuzz_support.hpp), then the body.
//
// What must hold: a refusal is ApiError 400 or 413 and nothing else; every accepted point has a
// non-negative id (no two alike), the collection's dimension and finite values, and a payload
// that is empty or a JSON object in compact form within the payload limits -- which
// check_stored_payload (what a recovered snapshot must pass) accepts too.

#include <cmath>
#include <cstdint>
#include <set>
#include <string>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"
#include "server_fuzz_support.hpp"
#include "upsert_body.hpp"

using simkit::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t dim = 1 + data[0] % 8;
  const simkit::server::RequestLimits limits = simkit::fuzz::limits_for(data[0] / 8);
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);

  const bool valid = simkit::fuzz::check_measure(body);
  const simkit::server::JsonShape shape = simkit::server::measure_json(body);
  const bool within = shape.depth <= limits.max_json_depth() && shape.containers <= limits.max_containers;

  try {
    simkit::server::check_body_shape(body, limits);
    check(within, "check_body_shape accepted a body beyond the limits");
  } catch (const simkit::server::ApiError& e) {
    check(!within, std::string("check_body_shape refused a body within the limits: ") + e.what());
    check(e.status() == (shape.depth > limits.max_json_depth() ? 400u : 413u),
          std::string("check_body_shape answered the wrong status: ") + e.what());
  }

  try {
    const nlohmann::json j = simkit::server::parse_object(body, limits);
    check(valid && within, "parse_object accepted what is not JSON or beyond the limits");
    check(body.find('\0') == std::string::npos,
          "parse_object accepted a body with a NUL byte (and ignored what follows it)");
    const auto points = simkit::server::parse_upsert(j, dim, limits.payload);
    check(!points.empty(), "parse_upsert accepted no points");
    std::set<int64_t> ids;
    for (const auto& p : points) {
      check(p.id >= 0, "parse_upsert accepted a negative id");
      check(ids.insert(p.id).second, "parse_upsert accepted an id twice");
      check(static_cast<int64_t>(p.vector.size()) == dim, "parse_upsert accepted a vector of the wrong dimension");
      for (const float x : p.vector) check(std::isfinite(x), "parse_upsert accepted a value that is not finite");
      if (p.payload.empty()) continue;
      try {
        simkit::server::check_stored_payload(p.id, p.payload, limits.payload);
      } catch (const simkit::Error& e) {
        simkit::fuzz::fail(std::string("an accepted payload fails check_stored_payload: ") + e.what());
      }
    }
  } catch (const simkit::server::ApiError& e) {
    simkit::fuzz::check_message(e);
    check(e.status() == 400 || e.status() == 413,
          "an upsert body refused with status " + std::to_string(e.status()) + ": " + e.what());
  }
  return 0;
}
