#pragma once
// What one request may cost before the server has looked at its meaning.
//
// A JSON body is measured as text first (measure_json: one pass, no tree, no recursion), so a
// body nested 10^6 deep or made of millions of empty arrays is refused before nlohmann::json
// builds anything from it: building costs ~80 bytes per array or object whatever its text, and
// printing a tree (as an error message would) recurses once per level. Payloads are bounded per
// point in depth, values and stored bytes, and kept as the compact JSON text they arrive as
// (payload.hpp), so the memory a collection holds follows the bytes it accepted.

#include <cstdint>
#include <string>
#include <string_view>

namespace simkit::server {

struct PayloadLimits {
  int64_t max_depth = 32;        // a payload object alone is depth 1; {"a": [1]} is 2
  int64_t max_values = 65536;    // every value counts: objects, arrays, strings, numbers, ...
  int64_t max_bytes = 1u << 20;  // of the payload's compact JSON text
};

struct RequestLimits {
  PayloadLimits payload;
  /// Arrays and objects one body may hold: what the parsed tree costs beyond its text.
  int64_t max_containers = 1 << 20;
  /// The largest answer a read builds (searches with payloads, scroll, retrieve): 10,000 hits of
  /// 1 MB payloads would otherwise be a 10 GB string.
  int64_t max_response_bytes = 64 << 20;
  /// A body's deepest nesting: a payload's own limit plus room for the request around it
  /// ({"points": [{"payload": ...}]} puts a payload at depth 4; a filter nests a few more).
  int64_t max_json_depth() const noexcept { return payload.max_depth + 8; }
};

/// The shape of JSON text: its deepest nesting (a top-level scalar is 0, `[]` is 1), and how
/// many arrays and objects, and values of any kind, it holds. It reads the text once and keeps
/// one bit per open level; it does not check the grammar (the parser does that afterwards), but
/// it honours strings and their escapes, so brackets inside strings do not count.
struct JsonShape {
  int64_t depth = 0;
  int64_t containers = 0;
  int64_t values = 0;
};
JsonShape measure_json(std::string_view text);

/// The message of a read refused because its answer passed `max_response_bytes`.
std::string response_too_large(int64_t max_response_bytes);

/// 400 naming the limit when `body` nests deeper than limits.max_json_depth(), 413 when it holds
/// more than limits.max_containers arrays and objects.
void check_body_shape(std::string_view body, const RequestLimits& limits);

}  // namespace simkit::server
