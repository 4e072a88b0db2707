#include "upsert_body.hpp"

#include <string>
#include <unordered_set>

#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"
#include "upsert_fast.hpp"

namespace simkit::server {

namespace {

// The ids read so far, so that one request cannot name a point twice.
struct SeenIds {
  std::unordered_set<int64_t> numbers;
  std::unordered_set<std::string> uuids;
};

std::vector<float> read_vector(const nlohmann::json& j, int64_t dim, const std::string& where) {
  if (j.is_object())
    bad_request(where + " is an object: named vectors are not supported (a point has one unnamed vector); it must be " +
                "an array of " + std::to_string(dim) + " numbers");
  return parse_vector(j, dim, where);
}

// One point from its three parts; `where` names each part in errors. `payload` may be null.
StoredPoint read_point(const nlohmann::json& id_json, const std::string& id_at, const nlohmann::json& vector,
                       const std::string& vector_at, const nlohmann::json* payload, const std::string& payload_at,
                       int64_t dim, const PayloadLimits& limits, SeenIds& seen) {
  StoredPoint point;
  PointId id = parse_point_id(id_json, id_at);
  if (id.is_uuid() ? !seen.uuids.insert(id.uuid).second : !seen.numbers.insert(id.number).second)
    bad_request(id_at + ": point " + id.json().dump() + " appears twice in one request");
  point.id = id.number;  // a UUID's is assigned by the store
  point.uuid = std::move(id.uuid);
  point.vector = read_vector(vector, dim, vector_at);
  if (payload && !payload->is_null()) {
    if (!payload->is_object()) bad_request(payload_at + " must be a JSON object");
    point.payload = payload_text(*payload, limits, payload_at);
  }
  return point;
}

std::vector<StoredPoint> read_points(const nlohmann::json& list, int64_t dim, const PayloadLimits& limits) {
  if (!list.is_array() || list.empty())
    bad_request("body.points must be a non-empty array of {\"id\", \"vector\", \"payload\"}");
  std::vector<StoredPoint> points;
  points.reserve(list.size());
  SeenIds seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "body.points[" + std::to_string(i) + "]";
    const nlohmann::json& p = list[i];
    if (!p.is_object()) bad_request(at + " must be an object {\"id\", \"vector\", \"payload\"}");
    check_fields(p, {"id", "vector", "payload"}, at);
    if (!p.contains("id")) bad_request(at + ".id is required");
    if (!p.contains("vector")) bad_request(at + ".vector is required");
    const auto payload = p.find("payload");
    points.push_back(read_point(p["id"], at + ".id", p["vector"], at + ".vector",
                                payload == p.end() ? nullptr : &*payload, at + ".payload", dim, limits, seen));
  }
  return points;
}

// Qdrant's column form: {"ids": [...], "vectors": [[...], ...], "payloads": [{...} or null, ...]}.
std::vector<StoredPoint> read_batch(const nlohmann::json& batch, int64_t dim, const PayloadLimits& limits) {
  if (!batch.is_object()) bad_request("body.batch must be an object {\"ids\", \"vectors\", \"payloads\"}");
  check_fields(batch, {"ids", "vectors", "payloads"}, "body.batch");
  if (!batch.contains("ids") || !batch["ids"].is_array() || batch["ids"].empty())
    bad_request("body.batch.ids must be a non-empty array of point ids");
  const nlohmann::json& ids = batch["ids"];
  if (!batch.contains("vectors")) bad_request("body.batch.vectors is required: one vector per id");
  const nlohmann::json& vectors = batch["vectors"];
  if (vectors.is_object())
    bad_request(
        "body.batch.vectors is an object: named vectors are not supported (a point has one unnamed vector); "
        "it must be an array of vectors, one per id");
  if (!vectors.is_array()) bad_request("body.batch.vectors must be an array of vectors, one per id");
  if (vectors.size() != ids.size())
    bad_request("body.batch.vectors has " + std::to_string(vectors.size()) + " vectors; body.batch.ids has " +
                std::to_string(ids.size()) + " ids");
  const nlohmann::json* payloads = batch.contains("payloads") ? &batch["payloads"] : nullptr;
  if (payloads && payloads->is_null()) payloads = nullptr;
  if (payloads && !payloads->is_array())
    bad_request("body.batch.payloads must be an array of payloads (objects or null), one per id");
  if (payloads && payloads->size() != ids.size())
    bad_request("body.batch.payloads has " + std::to_string(payloads->size()) + " payloads; body.batch.ids has " +
                std::to_string(ids.size()) + " ids");
  std::vector<StoredPoint> points;
  points.reserve(ids.size());
  SeenIds seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto at = [i](std::string field) { return field.append("[").append(std::to_string(i)).append("]"); };
    points.push_back(read_point(ids[i], at("body.batch.ids"), vectors[i], at("body.batch.vectors"),
                                payloads ? &(*payloads)[i] : nullptr, at("body.batch.payloads"), dim, limits, seen));
  }
  return points;
}

}  // namespace

std::vector<StoredPoint> parse_upsert(const nlohmann::json& body, int64_t dim, const PayloadLimits& limits) {
  check_fields(body, {"points", "batch"}, "body");
  if (body.contains("points") && body.contains("batch"))
    bad_request("the body holds both points and batch: send the points in one of the two forms");
  if (body.contains("batch")) return read_batch(body["batch"], dim, limits);
  if (!body.contains("points"))
    bad_request("body.points must be a non-empty array of {\"id\", \"vector\", \"payload\"}");
  return read_points(body["points"], dim, limits);
}

std::vector<StoredPoint> parse_upsert_body(const std::string& body, int64_t dim, const RequestLimits& limits,
                                           bool* fast) {
  if (fast) *fast = false;
  if (!body.empty()) {
    check_body_shape(body, limits);  // before either parser builds anything
    if (auto points = read_upsert_fast(body, dim, limits.payload)) {
      if (fast) *fast = true;
      return std::move(*points);
    }
  }
  // Refused or unusual: the tree reader decides, and names the problem.
  return parse_upsert(parse_object(body, limits), dim, limits.payload);
}

}  // namespace simkit::server
