#pragma once
// Point ids as the API names them, Qdrant's two kinds: an unsigned integer, or a UUID string
// ("936DA01F-9ABD-4D9D-80C7-02AF85C822A8", with or without hyphens, in braces or as a urn:uuid:
// name; answered in the lower-case hyphenated form). The index and the store key points by one
// int64: an integer id is itself, and must be below 2^62; a UUID gets an id at or above 2^62,
// assigned by the store when the UUID is first upserted and kept with the point
// (point_store.hpp), so the two kinds never meet.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace simkit::server {

/// The first internal id a UUID is given; integer ids stay below it.
constexpr int64_t kFirstUuidId = int64_t{1} << 62;

struct PointId {
  int64_t number = -1;  // the integer id; -1 when the id is a UUID
  std::string uuid;     // canonical form, or empty
  bool is_uuid() const noexcept { return !uuid.empty(); }
  /// As the API writes it: the number, or the UUID in quotes.
  nlohmann::json json() const { return is_uuid() ? nlohmann::json(uuid) : nlohmann::json(number); }
};

/// Reads a point id (a JSON integer or UUID string); 400 naming `where` and what is wrong.
PointId parse_point_id(const nlohmann::json& j, const std::string& where);

/// The id in a URL path segment: digits, or a UUID; 400 otherwise.
PointId parse_point_id_text(std::string_view text);

/// The canonical (lower-case, hyphenated) form of a UUID in any of the accepted spellings; false
/// when `text` is not one.
bool canonical_uuid(std::string_view text, std::string& out);

}  // namespace simkit::server
