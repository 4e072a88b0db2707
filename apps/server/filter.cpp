#include "filter.hpp"

#include <algorithm>

#include "api_error.hpp"

namespace simkit::server {

namespace {

bool equal_value(const nlohmann::json& field, const nlohmann::json& value) {
  if (value.is_boolean()) return field.is_boolean() && field.get<bool>() == value.get<bool>();
  if (value.is_string())
    return field.is_string() && field.get_ref<const std::string&>() == value.get_ref<const std::string&>();
  // Integers: JSON's signed and unsigned integers compare by value; a float field never matches.
  if (!field.is_number_integer()) return false;
  if (field.is_number_unsigned() && value.is_number_unsigned()) return field.get<uint64_t>() == value.get<uint64_t>();
  if (field.is_number_unsigned() || value.is_number_unsigned()) {
    const nlohmann::json& u = field.is_number_unsigned() ? field : value;
    const nlohmann::json& s = field.is_number_unsigned() ? value : field;
    return s.get<int64_t>() >= 0 && static_cast<uint64_t>(s.get<int64_t>()) == u.get<uint64_t>();
  }
  return field.get<int64_t>() == value.get<int64_t>();
}

}  // namespace

std::string Filter::key() const {
  std::string k;
  for (const FieldMatch& m : must) k += m.key + '\x1f' + m.value.dump() + '\x1e';
  return k;
}

bool Filter::matches(const nlohmann::json& payload) const {
  if (!payload.is_object()) return must.empty();
  for (const FieldMatch& m : must) {
    auto it = payload.find(m.key);
    if (it == payload.end()) return false;
    if (it->is_array()) {
      if (std::none_of(it->begin(), it->end(), [&](const nlohmann::json& e) { return equal_value(e, m.value); }))
        return false;
    } else if (!equal_value(*it, m.value)) {
      return false;
    }
  }
  return true;
}

Filter parse_filter(const nlohmann::json& j) {
  if (!j.is_object())
    bad_request("filter must be an object such as {\"must\": [{\"key\": ..., \"match\": {\"value\": ...}}]}");
  Filter f;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "must")
      bad_request("filter: unknown clause '" + it.key() + "' (this server supports 'must' of equality matches)");
    if (!it->is_array()) bad_request("filter.must must be an array of conditions");
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& c = (*it)[i];
      const std::string at = "filter.must[" + std::to_string(i) + "]";
      if (!c.is_object()) bad_request(at + " must be an object {\"key\": ..., \"match\": {\"value\": ...}}");
      for (auto f2 = c.begin(); f2 != c.end(); ++f2)
        if (f2.key() != "key" && f2.key() != "match")
          bad_request(at + ": unknown field '" + f2.key() + "' (expected 'key' and 'match')");
      if (!c.contains("key") || !c["key"].is_string() || c["key"].get<std::string>().empty())
        bad_request(at + ".key must be a non-empty string");
      if (!c.contains("match") || !c["match"].is_object())
        bad_request(at + ".match must be an object {\"value\": ...}");
      const nlohmann::json& match = c["match"];
      for (auto m = match.begin(); m != match.end(); ++m)
        if (m.key() != "value")
          bad_request(at + ".match: unknown field '" + m.key() + "' (only equality, 'value', is supported)");
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

std::vector<int64_t> allowed_ids(const Filter& f, const std::unordered_map<int64_t, nlohmann::json>& payloads) {
  std::vector<int64_t> ids;
  for (const auto& [id, payload] : payloads)
    if (f.matches(payload)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace simkit::server
