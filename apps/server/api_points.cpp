// Routes on a collection's points: upsert, delete, read, scroll, and the searches, which go
// through the collection's batcher (collection.hpp).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <simkit/error.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"
#include "search_body.hpp"
#include "upsert_body.hpp"

namespace simkit::server {

namespace {

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

nlohmann::json point_json(const StoredPoint& p, const PayloadSelector& with_payload, bool with_vector) {
  nlohmann::json j = {{"id", p.uuid.empty() ? nlohmann::json(p.id) : nlohmann::json(p.uuid)}};
  if (with_payload.any()) j["payload"] = nlohmann::json::parse(select_payload(p.payload, with_payload), nullptr, false);
  if (with_vector) j["vector"] = p.vector;
  return j;
}

// About what a point adds to an answer: its payload's text, ~16 characters a vector value.
int64_t answer_bytes(const StoredPoint& p, const PayloadSelector& with_payload) {
  return 32 + (with_payload.any() ? static_cast<int64_t>(p.payload.size()) : 0) +
         16 * static_cast<int64_t>(p.vector.size());
}

// A read's `with_payload`: every key unless the body says otherwise (Qdrant's default for reads).
PayloadSelector read_selector(const nlohmann::json& body) {
  if (!body.contains("with_payload")) return PayloadSelector::all();
  return parse_payload_selector(body["with_payload"], "body.with_payload");
}

std::optional<Filter> optional_filter(const nlohmann::json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  return parse_filter(body[key]);
}

// The internal ids of the listed API ids that the collection holds (a UUID never stored has none).
std::vector<int64_t> resolve_ids(const Collection& collection, const nlohmann::json& list, const std::string& where) {
  if (!list.is_array()) bad_request(where + " must be an array of point ids");
  std::vector<int64_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    if (auto id = collection.resolve(parse_point_id(list[i], where + "[" + std::to_string(i) + "]")))
      ids.push_back(*id);
  return ids;
}

// Which points a write names: Qdrant's PointsSelector, ids or a filter (evaluated by the write
// itself, with other writes held off, so that it sees every write acknowledged before it and no
// write slips in between).
struct Selection {
  std::vector<int64_t> ids;
  std::optional<Filter> filter;
};

Selection parse_selection(const Collection& collection, const nlohmann::json& body) {
  if (body.contains("points") == body.contains("filter"))
    bad_request("body needs one of points (an array of point ids) or filter (the points it matches)");
  Selection s;
  if (body.contains("points"))
    s.ids = resolve_ids(collection, body["points"], "body.points");
  else if (!(s.filter = optional_filter(body, "filter")))
    bad_request("body.filter must be a filter object ({} matches every point)");
  return s;
}

nlohmann::json update_result(const Collection& c, bool wait) {
  return {{"operation_id", c.seq()}, {"status", wait ? "completed" : "acknowledged"}};
}

}  // namespace

void Api::upsert_points(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const Clock::time_point parse_start = Clock::now();
  bool fast = false;
  std::vector<StoredPoint> points = parse_upsert_body(call.request.body, collection->dim(), settings_.limits, &fast);
  metrics_.upsert_body_read(fast);
  // Writes run on the pool (their fsync must not hold an I/O thread) and are acknowledged only
  // once durable and visible; wait=false answers the same way (its "acknowledged" is as strong).
  auto shared = std::make_shared<std::vector<StoredPoint>>(std::move(points));
  const Clock::time_point posted = Clock::now();
  double stages[5] = {seconds(call.request.received, parse_start), seconds(parse_start, posted)};
  blocking(std::move(call), [this, collection, shared, wait, posted, stages](Call& c) mutable {
    stages[2] = seconds(posted, Clock::now());
    WriteTimes times;
    collection->upsert(std::move(*shared), &times);
    stages[2] += times.wait;
    stages[3] = times.store;
    stages[4] = times.apply;
    metrics_.upsert_stages(stages);
    reply(c, 200, {{"result", update_result(*collection, wait)}});
  });
}

void Api::delete_points(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"points", "filter"}, "body");
  Selection selection = parse_selection(*collection, body);
  blocking(std::move(call), [this, collection, selection = std::move(selection), wait](Call& c) {
    const int64_t removed = collection->remove(selection.ids, selection.filter);
    nlohmann::json result = update_result(*collection, wait);
    result["deleted"] = removed;
    reply(c, 200, {{"result", result}});
  });
}

void Api::get_point(Call& call) {
  auto collection = find(call.params[0]);
  const PointId asked = parse_point_id_text(call.params[1]);
  const int64_t id = collection->resolve(asked).value_or(-1);
  blocking(std::move(call), [this, collection, id, asked](Call& c) {
    auto p = id < 0 ? std::nullopt : collection->get(id, /*with_vector=*/true);
    if (!p) throw ApiError(404, "point " + asked.json().dump() + " is not in collection '" + collection->name() + "'");
    reply(c, 200, {{"result", point_json(*p, PayloadSelector::all(), true)}});
  });
}

void Api::retrieve_points(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"ids", "with_payload", "with_vector"}, "body");
  if (!body.contains("ids")) bad_request("body.ids is required: an array of point ids");
  std::vector<int64_t> ids = resolve_ids(*collection, body["ids"], "body.ids");
  const PayloadSelector with_payload = read_selector(body);
  const bool with_vector = bool_field(body, "with_vector", false, "body");
  blocking(std::move(call), [this, collection, ids = std::move(ids), with_payload, with_vector](Call& c) {
    nlohmann::json list = nlohmann::json::array();
    int64_t bytes = 0;
    for (int64_t id : ids)
      if (auto p = collection->get(id, with_vector)) {
        if ((bytes += answer_bytes(*p, with_payload)) > settings_.limits.max_response_bytes)
          bad_request(response_too_large(settings_.limits.max_response_bytes));
        list.push_back(point_json(*p, with_payload, with_vector));
      }
    reply(c, 200, {{"result", list}});
  });
}

void Api::scroll_points(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits, /*empty_is_object=*/true);
  check_fields(body, {"offset", "limit", "with_payload", "with_vector", "filter"}, "body");
  int64_t from = 0;
  if (body.contains("offset") && !body["offset"].is_null()) {
    // An offset is where the previous page stopped: a UUID that is gone again restarts nothing,
    // it is refused (the pages run in internal id order, which only a stored UUID names).
    const PointId offset = parse_point_id(body["offset"], "body.offset");
    const auto id = collection->resolve(offset);
    if (!id) bad_request("body.offset: point " + offset.json().dump() + " is not in the collection");
    from = *id;
  }
  const int64_t limit = int_field(body, "limit", 10, 1, kMaxLimit, "body");
  const PayloadSelector with_payload = read_selector(body);
  const bool with_vector = bool_field(body, "with_vector", false, "body");
  std::optional<Filter> filter = optional_filter(body, "filter");
  blocking(std::move(call), [this, collection, from, limit, with_payload, with_vector, filter](Call& c) {
    std::vector<StoredPoint> page = collection->scroll(from, limit + 1, with_vector, filter);
    nlohmann::json next = nullptr;
    if (static_cast<int64_t>(page.size()) > limit) {
      const StoredPoint& last = page.back();  // its own uuid: the point may be gone by now
      next = last.uuid.empty() ? nlohmann::json(last.id) : nlohmann::json(last.uuid);
      page.pop_back();
    }
    nlohmann::json list = nlohmann::json::array();
    int64_t bytes = 0;
    for (const StoredPoint& p : page) {
      if ((bytes += answer_bytes(p, with_payload)) > settings_.limits.max_response_bytes)
        bad_request(response_too_large(settings_.limits.max_response_bytes));
      list.push_back(point_json(p, with_payload, with_vector));
    }
    reply(c, 200, {{"result", {{"points", list}, {"next_page_offset", next}}}});
  });
}

void Api::count_points(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits, /*empty_is_object=*/true);
  check_fields(body, {"filter", "exact"}, "body");
  bool_field(body, "exact", true, "body");  // always exact here: the count comes from the same ids a search uses
  std::optional<Filter> filter = optional_filter(body, "filter");
  blocking(std::move(call), [this, collection, filter](Call& c) {
    reply(c, 200, {{"result", {{"count", collection->count(filter)}}}});
  });
}

// set (POST: merge keys in), overwrite (PUT: replace), delete keys, clear: Qdrant's payload
// operations, each one durable transaction over the points it names.
void Api::set_payload(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const bool overwrite = call.request.method == "PUT";
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"payload", "points", "filter", "key"}, "body");
  if (!body.contains("payload") || !body["payload"].is_object())
    bad_request("body.payload must be a JSON object: the keys to " + std::string(overwrite ? "store" : "set"));
  if (body.contains("key") && !body["key"].is_null())
    bad_request("body.key (setting inside a nested key) is not supported; send the nested object in payload");
  Selection selection = parse_selection(*collection, body);
  const PayloadLimits limits = settings_.limits.payload;
  nlohmann::json keys = body["payload"];
  if (overwrite) payload_text(keys, limits, "body.payload");  // checked before anything is written
  blocking(std::move(call), [this, collection, selection = std::move(selection), keys = std::move(keys), limits,
                             overwrite, wait](Call& c) {
    const std::string replacement = overwrite && !keys.empty() ? payload_text(keys, limits, "body.payload") : "";
    collection->edit_payloads(selection.ids, selection.filter, [&](std::string_view old) {
      return overwrite ? replacement : merge_payload(old, keys, limits, "body.payload");
    });
    reply(c, 200, {{"result", update_result(*collection, wait)}});
  });
}

void Api::delete_payload(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  const bool clear = call.route.ends_with("/clear");
  check_fields(body, {"keys", "points", "filter"}, "body");
  std::vector<std::string> keys;
  if (!clear) {
    if (!body.contains("keys")) bad_request("body.keys is required: the payload keys to delete");
    PayloadSelector s = parse_payload_selector(body["keys"], "body.keys");
    if (s.kind != PayloadSelector::Kind::include) bad_request("body.keys must be an array of payload keys");
    keys = std::move(s.keys);
  } else if (body.contains("keys")) {
    bad_request("body: unknown field 'keys' (clear removes every key)");
  }
  Selection selection = parse_selection(*collection, body);
  blocking(std::move(call),
           [this, collection, selection = std::move(selection), keys = std::move(keys), clear, wait](Call& c) {
             collection->edit_payloads(selection.ids, selection.filter, [&](std::string_view old) {
               return clear ? std::string() : delete_payload_keys(old, keys);
             });
             reply(c, 200, {{"result", update_result(*collection, wait)}});
           });
}

}  // namespace simkit::server
