#include "payload_writer.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace simkit::server {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

void append_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plain = 0;  // start of the run of bytes copied as they are
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
}

template <typename Int>
void append_integer(Int v, std::string& out) {
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

void append_object(simdjson::dom::object object, std::string& out) {
  // Sorted stably, so that among equal keys the last one read comes last and is the one kept.
  std::vector<std::pair<std::string_view, element>> members;
  members.reserve(object.size());
  for (auto [key, value] : object) members.emplace_back(key, value);
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  bool first = true;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i + 1 < members.size() && members[i + 1].first == members[i].first) continue;
    if (!first) out += ',';
    first = false;
    append_string(members[i].first, out);
    out += ':';
    append_compact_json(members[i].second, out);
  }
  out += '}';
}

}  // namespace

void append_compact_json(element value, std::string& out) {
  switch (value.type()) {
    case element_type::OBJECT: return append_object(value.get_object().value_unsafe(), out);
    case element_type::ARRAY: {
      const simdjson::dom::array items = value.get_array().value_unsafe();
      out += '[';
      bool first = true;
      for (element item : items) {
        if (!first) out += ',';
        first = false;
        append_compact_json(item, out);
      }
      out += ']';
      return;
    }
    case element_type::STRING: return append_string(value.get_string().value_unsafe(), out);
    case element_type::INT64: return append_integer(value.get_int64().value_unsafe(), out);
    case element_type::UINT64: return append_integer(value.get_uint64().value_unsafe(), out);
    // nlohmann's own digits: its Grisu2 is not always the shortest form std::to_chars writes.
    case element_type::DOUBLE: out += nlohmann::json(value.get_double().value_unsafe()).dump(); return;
    case element_type::BOOL: out += value.get_bool().value_unsafe() ? "true" : "false"; return;
    case element_type::NULL_VALUE: out += "null"; return;
  }
}

}  // namespace simkit::server
