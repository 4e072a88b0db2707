#include "request_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <simkit/error.hpp>

#include "api_error.hpp"

namespace simkit::server {

namespace {

// nlohmann's parse errors repeat the bytes last read, raw ("last read: '<token>'"): the token is
// replaced by a quoted excerpt of the body around the error's byte, and any control byte left is
// made visible, so the message stays one printable line.
std::string parse_error_text(const nlohmann::json::exception& e, const std::string& body) {
  std::string what = e.what();
  if (const size_t last = what.find("; last read: "); last != std::string::npos) {
    const size_t expected = what.rfind("; expected ");
    what = what.substr(0, last) + (expected != std::string::npos && expected > last ? what.substr(expected) : "");
  }
  if (const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e); pe && pe->byte > 0) {
    const size_t at = std::min(pe->byte - 1, body.size());
    const size_t from = at > 20 ? at - 20 : 0;
    what += " (near " + simkit::quoted(std::string_view(body).substr(from, 40)) + ")";
  }
  for (char& c : what)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return what;
}

}  // namespace

nlohmann::json parse_object(const std::string& body, const RequestLimits& limits, bool empty_is_object) {
  if (body.empty()) {
    if (empty_is_object) return nlohmann::json::object();
    bad_request("the request needs a JSON body");
  }
  check_body_shape(body, limits);  // before any tree is built
  // nlohmann's parser stops at a NUL byte and would ignore what follows; JSON text never holds one.
  if (const size_t nul = body.find('\0'); nul != std::string::npos)
    bad_request("malformed JSON body: a NUL byte at offset " + std::to_string(nul));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and also out_of_range: a number such as 1e400 overflows a double while parsing.
    bad_request("malformed JSON body: " + parse_error_text(e, body));
  }
  if (!j.is_object()) bad_request(std::string("the body must be a JSON object, not ") + j.type_name());
  return j;
}

void check_fields(const nlohmann::json& object, std::initializer_list<const char*> known, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    bad_request(where + ": unknown field " + simkit::quoted(it.key()) + " (expected: " + list + ")");
  }
}

std::string value_excerpt(const nlohmann::json& j) {
  if (j.is_primitive()) return simkit::quoted(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return std::string("an ") + (j.is_array() ? "array" : "object") + " of " + std::to_string(j.size()) + " values";
}

bool scores_stay_finite(const std::vector<float>& v) {
  double squared = 0;
  for (float x : v) squared += static_cast<double>(x) * x;
  return squared <= std::ldexp(1.0, 125);
}

std::vector<float> parse_vector(const nlohmann::json& j, int64_t dim, const std::string& where) {
  if (!j.is_array()) bad_request(where + " must be an array of " + std::to_string(dim) + " numbers");
  if (static_cast<int64_t>(j.size()) != dim)
    bad_request(where + " has " + std::to_string(j.size()) + " values; the collection's vectors have " +
                std::to_string(dim));
  std::vector<float> v(static_cast<size_t>(dim));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number())
      bad_request(where + "[" + std::to_string(i) + "] is not a number (" + std::string(j[i].type_name()) + ")");
    const double x = j[i].get<double>();
    v[i] = vector_coordinate(x);
    if (!std::isfinite(v[i]))
      bad_request(where + "[" + std::to_string(i) + "] = " + j[i].dump() + " is not a finite float32");
  }
  if (!scores_stay_finite(v))
    bad_request(where +
                " is too long: its squared norm exceeds 2^125 (about 4.3e37), so its scores against other "
                "vectors could overflow float32; scale the vectors down");
  return v;
}

int64_t int_field(const nlohmann::json& object, const char* key, int64_t fallback, int64_t lo, int64_t hi,
                  const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    bad_request(where + "." + key + " must be an integer (got " + std::string(it->type_name()) + ")");
  const bool negative = it->is_number_unsigned() ? false : it->get<int64_t>() < 0;
  const bool too_big = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi);
  const int64_t v = too_big ? hi : (negative ? it->get<int64_t>() : static_cast<int64_t>(it->get<uint64_t>()));
  if (too_big || v < lo || v > hi)
    bad_request(where + "." + key + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                it->dump() + ")");  // an integer: short
  return v;
}

bool bool_field(const nlohmann::json& object, const char* key, bool fallback, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) bad_request(where + "." + key + " must be true or false (got " + value_excerpt(*it) + ")");
  return it->get<bool>();
}

std::string query_param(const std::string& query, const std::string& key) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string::npos) end = query.size();
    const std::string part = query.substr(pos, end - pos);
    const size_t eq = part.find('=');
    if (part.substr(0, eq) == key) return eq == std::string::npos ? "true" : part.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

}  // namespace simkit::server
