#include "payload_edit.hpp"

#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace {

nlohmann::json parse_text(std::string_view text) {
  if (text.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(text);  // the collection's own compact text: always an object
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// The value at a dotted path, or nullptr when a step is missing or not an object.
const nlohmann::json* find_path(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* at = &object;
  for (const std::string& part : split_key(key)) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(part);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

void put_path(nlohmann::json& object, const std::string& key, const nlohmann::json& value) {
  nlohmann::json* at = &object;
  for (const std::string& part : split_key(key)) {
    if (!at->is_object()) *at = nlohmann::json::object();
    at = &(*at)[part];
  }
  *at = value;
}

void erase_path(nlohmann::json& object, const std::string& key) {
  const std::vector<std::string> parts = split_key(key);
  nlohmann::json* at = &object;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!at->is_object() || !at->contains(parts[i])) return;
    at = &(*at)[parts[i]];
  }
  if (at->is_object()) at->erase(parts.back());
}

std::vector<std::string> key_list(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) bad_request(where + " must be an array of payload keys");
  std::vector<std::string> keys;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string() || j[i].get_ref<const std::string&>().empty())
      bad_request(where + "[" + std::to_string(i) + "] must be a non-empty string");
    keys.push_back(j[i].get<std::string>());
  }
  return keys;
}

}  // namespace

PayloadSelector parse_payload_selector(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return {};
  if (j.is_boolean()) return j.get<bool>() ? PayloadSelector::all() : PayloadSelector{};
  if (j.is_array()) return {PayloadSelector::Kind::include, key_list(j, where)};
  if (j.is_object() && j.size() == 1 && (j.contains("include") || j.contains("exclude"))) {
    const bool include = j.contains("include");
    return {include ? PayloadSelector::Kind::include : PayloadSelector::Kind::exclude,
            key_list(include ? j["include"] : j["exclude"], where + (include ? ".include" : ".exclude"))};
  }
  bad_request(where + " must be true, false, a list of keys, {\"include\": [...]} or {\"exclude\": [...]} (got " +
              value_excerpt(j) + ")");
}

std::string select_payload(std::string_view text, const PayloadSelector& selector) {
  if (selector.kind == PayloadSelector::Kind::all) return text.empty() ? "{}" : std::string(text);
  const nlohmann::json payload = parse_text(text);
  nlohmann::json out = nlohmann::json::object();
  if (selector.kind == PayloadSelector::Kind::include) {
    for (const std::string& key : selector.keys)
      if (const nlohmann::json* v = find_path(payload, key)) put_path(out, key, *v);
  } else {
    out = payload;
    for (const std::string& key : selector.keys) erase_path(out, key);
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string merge_payload(std::string_view text, const nlohmann::json& keys, const PayloadLimits& limits,
                          const std::string& where) {
  nlohmann::json payload = parse_text(text);
  for (auto it = keys.begin(); it != keys.end(); ++it) payload[it.key()] = it.value();
  return payload.empty() ? std::string() : payload_text(payload, limits, where);
}

std::string delete_payload_keys(std::string_view text, const std::vector<std::string>& keys) {
  nlohmann::json payload = parse_text(text);
  for (const std::string& key : keys) erase_path(payload, key);
  return payload.empty() ? std::string() : payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace simkit::server
