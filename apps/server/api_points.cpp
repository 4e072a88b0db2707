// Routes on a collection's points: upsert, delete, read, scroll, and the searches, which go
// through the collection's batcher (collection.hpp).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <simkit/error.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "request_json.hpp"
#include "search_body.hpp"
#include "upsert_body.hpp"

namespace simkit::server {

namespace {

constexpr int64_t kMaxLimit = 10000;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

nlohmann::json point_json(const StoredPoint& p, bool with_payload, bool with_vector) {
  nlohmann::json j = {{"id", p.uuid.empty() ? nlohmann::json(p.id) : nlohmann::json(p.uuid)}};
  if (with_payload)
    j["payload"] = p.payload.empty() ? nlohmann::json::object() : nlohmann::json::parse(p.payload, nullptr, false);
  if (with_vector) j["vector"] = p.vector;
  return j;
}

// About what a point adds to an answer: its payload's text, ~16 characters a vector value.
int64_t answer_bytes(const StoredPoint& p, bool with_payload) {
  return 32 + (with_payload ? static_cast<int64_t>(p.payload.size()) : 0) + 16 * static_cast<int64_t>(p.vector.size());
}

// The deadline of a queued search: the server's --timeout-ms, or sooner with ?timeout=SECONDS.
Clock::time_point deadline_of(const Call& call, std::chrono::milliseconds server_timeout) {
  Clock::duration limit = server_timeout;
  const std::string t = query_param(call.request.query, "timeout");
  if (!t.empty()) {
    char* end = nullptr;
    const double seconds = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0)
      bad_request("timeout must be a positive number of seconds (got " + simkit::quoted(t) + ")");
    // Compared as seconds first: 1e10 s does not fit the clock's int64 nanoseconds.
    if (seconds < std::chrono::duration<double>(server_timeout).count())
      limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  return call.request.received + limit;
}

bool wait_param(const Call& call) {
  const std::string w = query_param(call.request.query, "wait");
  if (w.empty() || w == "true") return true;
  if (w == "false") return false;
  bad_request("wait must be true or false (got " + simkit::quoted(w) + ")");
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
    reply(c, 200, {{"result", {{"status", wait ? "completed" : "acknowledged"}}}});
  });
}

void Api::delete_points(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"points"}, "body");
  if (!body.contains("points")) bad_request("body.points is required: an array of point ids");
  std::vector<int64_t> ids = resolve_ids(*collection, body["points"], "body.points");
  blocking(std::move(call), [this, collection, ids = std::move(ids), wait](Call& c) {
    const int64_t removed = collection->remove(ids);
    reply(c, 200, {{"result", {{"status", wait ? "completed" : "acknowledged"}, {"deleted", removed}}}});
  });
}

void Api::get_point(Call& call) {
  auto collection = find(call.params[0]);
  const PointId asked = parse_point_id_text(call.params[1]);
  const int64_t id = collection->resolve(asked).value_or(-1);
  blocking(std::move(call), [this, collection, id, asked](Call& c) {
    auto p = id < 0 ? std::nullopt : collection->get(id, /*with_vector=*/true);
    if (!p) throw ApiError(404, "point " + asked.json().dump() + " is not in collection '" + collection->name() + "'");
    reply(c, 200, {{"result", point_json(*p, true, true)}});
  });
}

void Api::retrieve_points(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"ids", "with_payload", "with_vector"}, "body");
  if (!body.contains("ids")) bad_request("body.ids is required: an array of point ids");
  std::vector<int64_t> ids = resolve_ids(*collection, body["ids"], "body.ids");
  const bool with_payload = bool_field(body, "with_payload", true, "body");
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
  check_fields(body, {"offset", "limit", "with_payload", "with_vector"}, "body");
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
  const bool with_payload = bool_field(body, "with_payload", true, "body");
  const bool with_vector = bool_field(body, "with_vector", false, "body");
  blocking(std::move(call), [this, collection, from, limit, with_payload, with_vector](Call& c) {
    std::vector<StoredPoint> page = collection->scroll(from, limit + 1, with_vector);
    nlohmann::json next = nullptr;
    if (static_cast<int64_t>(page.size()) > limit) {
      next = collection->point_id(page.back().id).json();
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

void Api::search_one(Call& call) {
  auto collection = find(call.params[0]);
  const Clock::time_point deadline = deadline_of(call, settings_.timeout);
  std::vector<Queued<SearchJob>> jobs(1);
  if (!parse_simple_search(call.request.body, collection->dim(), kMaxLimit, jobs[0].job.query))
    jobs[0].job.query =
        parse_search(parse_object(call.request.body, settings_.limits), collection->dim(), kMaxLimit, "body");
  jobs[0].enqueued = Clock::now();
  jobs[0].deadline = deadline;
  auto shared = std::make_shared<Call>(std::move(call));
  jobs[0].job.done = [this, shared](SearchOutcome&& o) {
    if (o.status == 200) return reply_result_text(*shared, o.hits);
    reply_error(*shared, o.status, o.error);
  };
  if (!collection->submit(jobs)) {
    metrics_.rejected("queue_full");
    reply_error(*shared, 503, "the search queue of collection '" + collection->name() + "' is full; retry later",
                {{"Retry-After", "1"}});
  }
}

void Api::search_batch(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"searches"}, "body");
  if (!body.contains("searches") || !body["searches"].is_array() || body["searches"].empty())
    bad_request("body.searches must be a non-empty array of search requests");
  const nlohmann::json& list = body["searches"];
  const Clock::time_point deadline = deadline_of(call, settings_.timeout);
  struct Gather {
    std::mutex mutex;
    std::vector<SearchOutcome> outcomes;
    size_t left;
    Call call;
  };
  auto gather = std::make_shared<Gather>();
  gather->outcomes.resize(list.size());
  gather->left = list.size();
  std::vector<Queued<SearchJob>> jobs(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    jobs[i].job.query = parse_search(list[i], collection->dim(), kMaxLimit, "body.searches[" + std::to_string(i) + "]");
    jobs[i].enqueued = Clock::now();
    jobs[i].deadline = deadline;
    jobs[i].job.done = [this, gather, i](SearchOutcome&& o) {
      std::unique_lock lock(gather->mutex);
      gather->outcomes[i] = std::move(o);
      if (--gather->left > 0) return;
      lock.unlock();
      std::string results = "[";
      for (SearchOutcome& out : gather->outcomes) {
        if (out.status != 200) return reply_error(gather->call, out.status, out.error);
        results += (results.size() > 1 ? "," : "") + out.hits;
        if (static_cast<int64_t>(results.size()) > settings_.limits.max_response_bytes)
          return reply_error(gather->call, 400, response_too_large(settings_.limits.max_response_bytes));
      }
      reply_result_text(gather->call, results + "]");
    };
  }
  gather->call = std::move(call);
  if (!collection->submit(jobs)) {
    metrics_.rejected("queue_full");
    reply_error(gather->call, 503, "the search queue of collection '" + collection->name() + "' is full; retry later",
                {{"Retry-After", "1"}});
  }
}

}  // namespace simkit::server
