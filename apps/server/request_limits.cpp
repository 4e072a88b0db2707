#include "request_limits.hpp"

#include <algorithm>
#include <vector>

#include "api_error.hpp"

namespace simkit::server {

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
        while (i + 1 < text.size() && std::string_view(",]}: \t\n\r\"[{").find(text[i + 1]) == std::string_view::npos)
          ++i;
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
