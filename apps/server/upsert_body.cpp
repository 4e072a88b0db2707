#include "upsert_body.hpp"

#include <string>
#include <unordered_set>

#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"

namespace simkit::server {

std::vector<StoredPoint> parse_upsert(const nlohmann::json& body, int64_t dim, const PayloadLimits& limits) {
  check_fields(body, {"points"}, "body");
  if (!body.contains("points") || !body["points"].is_array() || body["points"].empty())
    bad_request("body.points must be a non-empty array of {\"id\", \"vector\", \"payload\"}");
  std::vector<StoredPoint> points;
  std::unordered_set<int64_t> seen;
  std::unordered_set<std::string> seen_uuids;
  const nlohmann::json& list = body["points"];
  points.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "body.points[" + std::to_string(i) + "]";
    const nlohmann::json& p = list[i];
    if (!p.is_object()) bad_request(at + " must be an object {\"id\", \"vector\", \"payload\"}");
    check_fields(p, {"id", "vector", "payload"}, at);
    if (!p.contains("id")) bad_request(at + ".id is required");
    if (!p.contains("vector")) bad_request(at + ".vector is required");
    StoredPoint point;
    PointId id = parse_point_id(p["id"], at + ".id");
    if (id.is_uuid() ? !seen_uuids.insert(id.uuid).second : !seen.insert(id.number).second)
      bad_request(at + ".id: point " + id.json().dump() + " appears twice in one request");
    point.id = id.number;  // a UUID's is assigned by the store
    point.uuid = std::move(id.uuid);
    point.vector = parse_vector(p["vector"], dim, at + ".vector");
    if (p.contains("payload") && !p["payload"].is_null()) {
      if (!p["payload"].is_object()) bad_request(at + ".payload must be a JSON object");
      point.payload = payload_text(p["payload"], limits, at + ".payload");
    }
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace simkit::server
