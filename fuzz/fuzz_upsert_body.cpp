// Fuzzes the readers of an upsert body (apps/server/upsert_body.hpp): the reference reader,
// parse_object (with measure_json / check_body_shape before it) and parse_upsert, with the
// payloads kept as compact text (payload.hpp); and parse_upsert_body, which tries the fast
// reader (upsert_fast.hpp, simdjson) first, against it.
//
// Input: one byte (the collection's dimension is 1 + byte % 8, the limits variant byte / 8;
// server_fuzz_support.hpp), then the body.
//
// What must hold: a refusal is ApiError 400 or 413 and nothing else; every accepted point has a
// non-negative id (no two alike), the collection's dimension and finite values, and a payload
// that is empty or a JSON object in compact form within the payload limits -- which
// check_stored_payload (what a recovered snapshot must pass) accepts too. parse_upsert_body
// accepts exactly what the reference reader accepts, with the same points (ids, UUIDs, vector
// bits, payload text), and refuses the rest with the same status and message.

#include <bit>
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

namespace {

// What a reader made of a body: its points, each field spelled out, or its refusal.
template <typename Read>
std::string outcome(Read&& read) {
  try {
    std::string out;
    for (const auto& p : read()) {
      out += std::to_string(p.id) + " " + p.uuid + " [";
      for (const float x : p.vector) out += std::to_string(std::bit_cast<uint32_t>(x)) + ",";
      out += "] " + p.payload + "\n";
    }
    return out;
  } catch (const simkit::server::ApiError& e) {
    return "refused " + std::to_string(e.status()) + ": " + e.what();
  }
}

}  // namespace

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
    std::set<std::string> ids;
    for (const auto& p : points) {
      // A UUID's internal id is the store's to assign: -1 until then (point_id.hpp).
      check(p.uuid.empty() ? p.id >= 0 : p.id == -1, "parse_upsert accepted a negative id");
      check(ids.insert(p.uuid.empty() ? std::to_string(p.id) : p.uuid).second, "parse_upsert accepted an id twice");
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

  const std::string reference = outcome(
      [&] { return simkit::server::parse_upsert(simkit::server::parse_object(body, limits), dim, limits.payload); });
  const std::string both = outcome([&] { return simkit::server::parse_upsert_body(body, dim, limits); });
  check(both == reference, "parse_upsert_body and the reference reader disagree:\n" + both + "\n---\n" + reference);
  return 0;
}
