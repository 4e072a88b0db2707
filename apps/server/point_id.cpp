#include "point_id.hpp"

#include <cctype>
#include <charconv>

#include <simkit/error.hpp>

#include "api_error.hpp"

namespace simkit::server {

namespace {

const std::string kRange = "integer ids are 0 .. 2^62 - 1 (4611686018427387903); use a UUID string beyond";

}  // namespace

bool canonical_uuid(std::string_view text, std::string& out) {
  if (text.rfind("urn:uuid:", 0) == 0) text.remove_prefix(9);
  if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
  std::string hex;
  hex.reserve(32);
  if (text.size() == 36) {
    for (size_t i = 0; i < 36; ++i) {
      const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash != (text[i] == '-')) return false;
      if (!dash) hex += text[i];
    }
  } else if (text.size() == 32) {
    hex = text;
  } else {
    return false;
  }
  out.clear();
  for (size_t i = 0; i < 32; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(hex[i]))) return false;
    if (i == 8 || i == 12 || i == 16 || i == 20) out += '-';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(hex[i])));
  }
  return true;
}

PointId parse_point_id(const nlohmann::json& j, const std::string& where) {
  PointId id;
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (!canonical_uuid(s, id.uuid))
      bad_request(where + ": " + simkit::quoted(s) + " is neither an unsigned integer nor a UUID");
    return id;
  }
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v >= static_cast<uint64_t>(kFirstUuidId))
      bad_request(where + ": id " + j.dump() + " is too large (" + kRange + ")");
    id.number = static_cast<int64_t>(v);
    return id;
  }
  if (j.is_number_integer()) bad_request(where + ": a point id must be >= 0 (got " + j.dump() + ")");
  bad_request(where + ": a point id must be an unsigned integer or a UUID string (got " + std::string(j.type_name()) +
              ")");
}

PointId parse_point_id_text(std::string_view text) {
  PointId id;
  if (canonical_uuid(text, id.uuid)) return id;
  uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
    bad_request("point id " + simkit::quoted(std::string(text)) + " is neither an unsigned integer nor a UUID");
  if (v >= static_cast<uint64_t>(kFirstUuidId))
    bad_request("point id " + std::string(text) + " is too large (" + kRange + ")");
  id.number = static_cast<int64_t>(v);
  return id;
}

}  // namespace simkit::server
