#pragma once
// What the harnesses of the server's request parsers share: the shape of JSON text counted by
// nlohmann's own SAX parser (every value the text holds, repeated keys included), to check
// measure_json against on text that is valid JSON, and the limits a harness runs under.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "request_limits.hpp"

namespace simkit::fuzz {

/// Counts as measure_json does: depth of the deepest array or object, containers, and values of
/// every kind (containers included, object keys not).
class ShapeCounter : public nlohmann::json_sax<nlohmann::json> {
 public:
  server::JsonShape shape;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool value() {
    ++shape.values;
    return true;
  }
  bool open() {
    ++shape.values;
    ++shape.containers;
    ++level_;
    if (level_ > shape.depth) shape.depth = level_;
    return true;
  }
  bool close() {
    --level_;
    return true;
  }
  int64_t level_ = 0;
};

/// The part of `text` that nlohmann's parser reads: up to the first NUL byte.
inline std::string_view parsed_part(std::string_view text) { return text.substr(0, text.find('\0')); }

/// When `text` (up to a NUL, where nlohmann stops reading) is valid JSON, measure_json must count exactly
/// what the parser sees; on any text it must not crash nor count negatively. Returns whether
/// nlohmann's parser accepts the text.
inline bool check_measure(std::string_view text) {
  const server::JsonShape whole = server::measure_json(text);
  check(
      whole.depth >= 0 && whole.containers >= 0 && whole.values >= whole.containers && whole.depth <= whole.containers,
      "measure_json: inconsistent counts");
  text = parsed_part(text);
  const server::JsonShape m = server::measure_json(text);
  ShapeCounter counter;
  const bool valid = nlohmann::json::sax_parse(text.begin(), text.end(), &counter);
  if (valid)
    check(
        m.depth == counter.shape.depth && m.containers == counter.shape.containers && m.values == counter.shape.values,
        "measure_json disagrees with the JSON parser on valid JSON: depth " + std::to_string(m.depth) + " vs " +
            std::to_string(counter.shape.depth) + ", containers " + std::to_string(m.containers) + " vs " +
            std::to_string(counter.shape.containers) + ", values " + std::to_string(m.values) + " vs " +
            std::to_string(counter.shape.values));
  return valid;
}

/// The server's defaults (variant 0) or tight limits that the seeds already reach (1..3), so the
/// refusals behind them run too.
inline server::RequestLimits limits_for(int variant) {
  server::RequestLimits limits;
  switch (variant % 4) {
    case 1:
      limits.payload.max_depth = 2;
      limits.payload.max_values = 8;
      limits.payload.max_bytes = 64;
      limits.max_containers = 12;
      break;
    case 2: limits.payload.max_depth = 1; break;
    case 3:
      limits.payload.max_bytes = 16;
      limits.max_containers = 3;
      break;
    default: break;
  }
  return limits;
}

}  // namespace simkit::fuzz
