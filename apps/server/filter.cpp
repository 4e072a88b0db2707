#include "filter.hpp"

#include <algorithm>
#include <charconv>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "payload.hpp"

namespace simkit::server {

namespace {

// Whether the JSON scalar `text` (a payload field or one element of it) equals the filter's value.
// Integers compare by value whether written signed or not; a float such as 1.0 never equals 1,
// and strings compare after decoding their escapes, as a parsed tree would.
bool equal_value(std::string_view text, const nlohmann::json& value) {
  if (text.empty()) return false;
  if (value.is_boolean()) return text == (value.get<bool>() ? "true" : "false");
  if (value.is_string()) {
    thread_local std::string decoded;
    return text.front() == '"' && decode_json_string(text, decoded) && decoded == value.get_ref<const std::string&>();
  }
  if (text.find_first_of(".eE") != std::string_view::npos) return false;
  const char* end = text.data() + text.size();
  if (text.front() == '-') {
    int64_t v = 0;
    const auto r = std::from_chars(text.data(), end, v);
    if (r.ec != std::errc() || r.ptr != end) return false;
    return value.is_number_unsigned() ? v >= 0 && static_cast<uint64_t>(v) == value.get<uint64_t>()
                                      : v == value.get<int64_t>();
  }
  uint64_t v = 0;
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end) return false;
  return value.is_number_unsigned() ? v == value.get<uint64_t>()
                                    : value.get<int64_t>() >= 0 && v == static_cast<uint64_t>(value.get<int64_t>());
}

// A field holding an array matches when one of its elements does.
bool field_matches(std::string_view field, const nlohmann::json& value) {
  if (field.empty() || field.front() != '[') return equal_value(field, value);
  size_t i = 1;
  while (i < field.size()) {
    while (i < field.size() &&
           (field[i] == ',' || field[i] == ' ' || field[i] == '\n' || field[i] == '\t' || field[i] == '\r'))
      ++i;
    if (i >= field.size() || field[i] == ']') return false;
    const size_t end = skip_json_value(field, i);
    if (end > field.size() || end == i) return false;
    if (equal_value(field.substr(i, end - i), value)) return true;
    i = end;
  }
  return false;
}

}  // namespace

std::string Filter::key() const {
  std::string k;
  // Length-prefixed, so that no key or value, whatever bytes it holds, can make two filters equal.
  for (const FieldMatch& m : must) {
    const std::string v = m.value.dump();
    k += std::to_string(m.key.size()) + ':' + m.key + std::to_string(v.size()) + ':' + v;
  }
  return k;
}

bool Filter::matches(std::string_view payload_text) const {
  for (const FieldMatch& m : must)
    if (!field_matches(payload_field(payload_text, m.key), m.value)) return false;
  return true;
}

Filter parse_filter(const nlohmann::json& j) {
  if (!j.is_object())
    bad_request("filter must be an object such as {\"must\": [{\"key\": ..., \"match\": {\"value\": ...}}]}");
  Filter f;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "must")
      bad_request("filter: unknown clause " + simkit::quoted(it.key()) +
                  " (this server supports 'must' of equality matches)");
    if (!it->is_array()) bad_request("filter.must must be an array of conditions");
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& c = (*it)[i];
      const std::string at = "filter.must[" + std::to_string(i) + "]";
      if (!c.is_object()) bad_request(at + " must be an object {\"key\": ..., \"match\": {\"value\": ...}}");
      for (auto f2 = c.begin(); f2 != c.end(); ++f2)
        if (f2.key() != "key" && f2.key() != "match")
          bad_request(at + ": unknown field " + simkit::quoted(f2.key()) + " (expected 'key' and 'match')");
      if (!c.contains("key") || !c["key"].is_string() || c["key"].get<std::string>().empty())
        bad_request(at + ".key must be a non-empty string");
      if (!c.contains("match") || !c["match"].is_object())
        bad_request(at + ".match must be an object {\"value\": ...}");
      const nlohmann::json& match = c["match"];
      for (auto m = match.begin(); m != match.end(); ++m)
        if (m.key() != "value")
          bad_request(at + ".match: unknown field " + simkit::quoted(m.key()) +
                      " (only equality, 'value', is supported)");
      if (!match.contains("value")) bad_request(at + ".match.value is missing");
      const nlohmann::json& v = match["value"];
      if (!v.is_string() && !v.is_boolean() && !v.is_number_integer())
        bad_request(at + ".match.value must be a string, an integer or a bool (got " + std::string(v.type_name()) +
                    ")");
      f.must.push_back({c["key"].get<std::string>(), v});
    }
  }
  return f;
}

std::vector<int64_t> allowed_ids(const Filter& f, const std::unordered_map<int64_t, std::string>& payloads) {
  std::vector<int64_t> ids;
  for (const auto& [id, payload] : payloads)
    if (f.matches(payload)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace simkit::server
