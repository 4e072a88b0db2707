#include "request_limits.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "api_error.hpp"

namespace simkit::server {

namespace {

// The bytes that end a number or a literal: measure_json skips everything else in one run.
struct TokenEnd {
  bool is[256] = {};
  constexpr TokenEnd() {
    for (const char c : std::string_view(",]}: \t\n\r\"[{")) is[static_cast<unsigned char>(c)] = true;
  }
};
constexpr TokenEnd kTokenEnd;

// Whether all 8 bytes of `w` are in '-' .. '9' (minus, dot, slash, digits: none ends a token).
// A float's digits then go 8 at a time: an upsert of 1,000 x 384 floats is 8.5 MB, mostly such
// digits, which byte by byte (a search of the set above for each) took 16 ms to measure, more
// than simdjson takes to parse it (9.5 ms); 8 at a time, 5 ms.
bool all_number_bytes(uint64_t w) {
  constexpr uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
  const uint64_t below = (w - ones * '-') & ~w & high;           // a byte < '-' (or >= 0x80: not ASCII)
  const uint64_t above = ((w + ones * (127 - '9')) | w) & high;  // a byte > '9'
  return (below | above) == 0;
}

// One past the number or literal starting at text[i].
size_t token_end(std::string_view text, size_t i) {
  for (++i; i + 8 <= text.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    if (!all_number_bytes(w)) break;
  }
  while (i < text.size() && !kTokenEnd.is[static_cast<unsigned char>(text[i])]) ++i;
  return i;
}

}  // namespace

JsonShape measure_json(std::string_view text) {
  JsonShape shape;
  std::vector<bool> in_object;  // one entry per open level: object (true) or array
  bool expect_key = false;      // the next string in this object is a key, not a value
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '"':
        if (!expect_key) ++shape.values;
        expect_key = false;
        // Skip the string, escapes included: brackets inside it are text.
        for (++i; i < text.size() && text[i] != '"'; ++i)
          if (text[i] == '\\') ++i;
        break;
      case '{':
      case '[':
        ++shape.values;
        ++shape.containers;
        in_object.push_back(c == '{');
        shape.depth = std::max(shape.depth, static_cast<int64_t>(in_object.size()));
        expect_key = c == '{';
        break;
      case '}':
      case ']':
        if (!in_object.empty()) in_object.pop_back();
        expect_key = false;
        break;
      case ',': expect_key = !in_object.empty() && in_object.back(); break;
      case ' ':
      case '\t':
      case '\n':
      case '\r':
      case ':': break;
      default:
        // A number or a literal: count it once, at its first character.
        ++shape.values;
        i = token_end(text, i) - 1;
    }
  }
  return shape;
}

std::string response_too_large(int64_t max_response_bytes) {
  return "the answer would exceed " + std::to_string(max_response_bytes >> 20) +
         " MB (--max-response-mb): ask for fewer points, or without payloads or vectors";
}

void check_body_shape(std::string_view body, const RequestLimits& limits) {
  const JsonShape shape = measure_json(body);
  if (shape.depth > limits.max_json_depth())
    bad_request("the JSON body nests arrays and objects " + std::to_string(shape.depth) + " deep; the limit is " +
                std::to_string(limits.max_json_depth()) + " (payloads may nest " +
                std::to_string(limits.payload.max_depth) + " deep: --max-payload-depth)");
  if (shape.containers > limits.max_containers)
    throw ApiError(413, "the JSON body holds " + std::to_string(shape.containers) +
                            " arrays and objects; the limit is " + std::to_string(limits.max_containers) +
                            " per request (send fewer points per request)");
}

}  // namespace simkit::server
