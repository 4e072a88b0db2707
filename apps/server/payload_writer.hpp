#pragma once
// JSON read by simdjson, written back as the compact text payload_text keeps (payload.hpp), byte
// for byte what nlohmann::json::dump writes for the same text: an object's keys sorted bytewise
// with a repeated key keeping its last value (nlohmann's std::map), strings escaped as it escapes
// them (", \ and the named controls, other bytes below 0x20 as \u00xx, UTF-8 kept as it is),
// integers in decimal, and floating-point numbers printed by nlohmann itself (its own shortest
// round-trip digits, "1.0" and "1e+20" forms). Both parsers round a number's text to the same
// double (correctly rounded), and simdjson refuses the texts nlohmann would read as a double
// although they look like integers (beyond 64 bits), so the same text gives the same number.

#include <string>

#include <simdjson.h>

namespace simkit::server {

/// Appends the compact text of `value` to `out` (recursively: the body's depth limit, checked
/// before parsing, bounds the recursion).
void append_compact_json(simdjson::dom::element value, std::string& out);

}  // namespace simkit::server
