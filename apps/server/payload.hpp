#pragma once
// Payloads as the collection keeps them: the compact JSON text of the object (what
// nlohmann::json::dump writes), one string per point. A tree per point cost 40-80 bytes per
// value whatever its text (a payload of 10^6 empty arrays, 2 MB of text, held ~100 MB); text
// costs its bytes, is what a search's answer sends as it is, and is what SQLite stores.
// Filters read the few fields they test straight out of the text (PayloadFields), without a tree.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "request_limits.hpp"

namespace simkit::server {

/// The compact text of `payload` (a JSON object), after checking it against `limits`: 400 naming
/// `where` and the limit (depth, values or bytes) it exceeds.
std::string payload_text(const nlohmann::json& payload, const PayloadLimits& limits, const std::string& where);

/// Checks a payload read from a file the server did not write itself (a snapshot to recover):
/// a JSON object within `limits`, in the compact form payload_text writes, since searches send
/// it as it is and filters read it as text. Error(io) naming point `id` otherwise.
void check_stored_payload(int64_t id, const std::string& text, const PayloadLimits& limits);

/// The text of top-level member `key` of the JSON object `object_text` (the last one, as a
/// parser keeps it, if the key repeats), or an empty view when it has none. Reads only what it
/// must, never recursively, and never past the text: on malformed text it answers "absent".
std::string_view payload_field(std::string_view object_text, std::string_view key);

/// The JSON string `text` (quotes included) decoded into `out`; false when `text` is not one.
bool decode_json_string(std::string_view text, std::string& out);

/// A JSON number's text as an int64 when it is an integer that fits (no fraction or exponent:
/// 1.0 is no integer, as in Qdrant, whose as_i64 reads payloads), else nullopt.
std::optional<int64_t> json_integer(std::string_view number_text);
/// A JSON number's text as a double (how range conditions compare numbers), nullopt if it is none.
std::optional<double> json_number(std::string_view number_text);

/// One past the end of the JSON value starting at `text[at]` (whitespace skipped first), or
/// text.size() + 1 when the text ends first.
size_t skip_json_value(std::string_view text, size_t at);

}  // namespace simkit::server
