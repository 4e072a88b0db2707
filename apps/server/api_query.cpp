// Routes that search a collection: simkit's search and search/batch, and Qdrant's Query API
// (query and query/batch). All of them go through the collection's batcher (collection.hpp);
// they differ in how they read the request and shape the answer.

#include <cmath>
#include <cstdlib>
#include <mutex>

#include <simkit/error.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "query_body.hpp"
#include "request_json.hpp"
#include "search_body.hpp"

namespace simkit::server {

namespace {

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

// Reads the stored vectors a query names, leaves those points out of its answer, and sets its
// query vector. 404 for a point the collection does not hold.
SearchQuery resolve_query(Collection& collection, QueryRequest&& q) {
  for (auto* list : {&q.positive, &q.negative})
    for (QueryExample& e : *list) {
      if (!e.id) continue;
      const std::optional<int64_t> id = collection.resolve(*e.id);
      std::optional<StoredPoint> p = id ? collection.get(*id, /*with_vector=*/true) : std::nullopt;
      if (!p)
        throw ApiError(
            404, e.where + ": point " + e.id->json().dump() + " is not in collection '" + collection.name() + "'");
      e.vector = std::move(p->vector);
      q.search.exclude.push_back(*id);
    }
  return finish_query(q, collection);
}

}  // namespace

void Api::run_searches(Call&& call, const std::shared_ptr<Collection>& collection, std::vector<SearchQuery> queries,
                       AnswerShape shape) {
  // More searches than the queue holds would be refused however long the client waited.
  const int64_t max_queue = settings_.collection.limits.max_queue;
  if (static_cast<int64_t>(queries.size()) > max_queue)
    bad_request("this request holds " + std::to_string(queries.size()) + " searches; the server queues at most " +
                std::to_string(max_queue) + " (--max-queue): send fewer at a time");
  const Clock::time_point deadline = deadline_of(call, settings_.timeout);
  struct Gather {
    std::mutex mutex;
    std::vector<SearchOutcome> outcomes;
    size_t left;
    Call call;
  };
  auto gather = std::make_shared<Gather>();
  gather->outcomes.resize(queries.size());
  gather->left = queries.size();
  std::vector<Queued<SearchJob>> jobs(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    jobs[i].job.query = std::move(queries[i]);
    jobs[i].enqueued = Clock::now();
    jobs[i].deadline = deadline;
    jobs[i].job.done = [this, gather, i, shape](SearchOutcome&& o) {
      std::unique_lock lock(gather->mutex);
      gather->outcomes[i] = std::move(o);
      if (--gather->left > 0) return;
      lock.unlock();
      const bool query = shape == AnswerShape::query || shape == AnswerShape::query_batch;
      const bool batch = shape == AnswerShape::search_batch || shape == AnswerShape::query_batch;
      std::string results = batch ? "[" : "";
      for (size_t j = 0; j < gather->outcomes.size(); ++j) {
        SearchOutcome& out = gather->outcomes[j];
        if (out.status != 200) return reply_error(gather->call, out.status, out.error);
        if (j > 0) results += ',';
        results += query ? "{\"points\":" + out.hits + "}" : out.hits;
        if (static_cast<int64_t>(results.size()) > settings_.limits.max_response_bytes)
          return reply_error(gather->call, 400, response_too_large(settings_.limits.max_response_bytes));
      }
      reply_result_text(gather->call, batch ? results + "]" : results);
    };
  }
  gather->call = std::move(call);
  if (!collection->submit(jobs)) {
    if (collection->closing())
      return reply_error(gather->call, 503,
                         "collection '" + collection->name() + "' is being deleted, recovered or shut down; retry",
                         {{"Retry-After", "1"}});
    metrics_.rejected("queue_full");
    reply_error(gather->call, 429, "the search queue of collection '" + collection->name() + "' is full; retry later",
                {{"Retry-After", "1"}});
  }
}

void Api::search_one(Call& call) {
  auto collection = find(call.params[0]);
  std::vector<SearchQuery> queries(1);
  if (!parse_simple_search(call.request.body, collection->dim(), kMaxLimit, queries[0]))
    queries[0] = parse_search(parse_object(call.request.body, settings_.limits), collection->dim(), kMaxLimit, "body");
  run_searches(std::move(call), collection, std::move(queries), AnswerShape::search);
}

void Api::search_batch(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"searches"}, "body");
  if (!body.contains("searches") || !body["searches"].is_array() || body["searches"].empty())
    bad_request("body.searches must be a non-empty array of search requests");
  std::vector<SearchQuery> queries;
  for (size_t i = 0; i < body["searches"].size(); ++i)
    queries.push_back(
        parse_search(body["searches"][i], collection->dim(), kMaxLimit, "body.searches[" + std::to_string(i) + "]"));
  run_searches(std::move(call), collection, std::move(queries), AnswerShape::search_batch);
}

void Api::query_points(Call& call) {
  auto collection = find(call.params[0]);
  std::vector<SearchQuery> queries;
  queries.push_back(resolve_query(*collection, parse_query(parse_object(call.request.body, settings_.limits),
                                                           collection->dim(), kMaxLimit, "body")));
  run_searches(std::move(call), collection, std::move(queries), AnswerShape::query);
}

void Api::query_batch(Call& call) {
  auto collection = find(call.params[0]);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"searches"}, "body");
  if (!body.contains("searches") || !body["searches"].is_array() || body["searches"].empty())
    bad_request("body.searches must be a non-empty array of query requests");
  std::vector<SearchQuery> queries;
  for (size_t i = 0; i < body["searches"].size(); ++i)
    queries.push_back(resolve_query(*collection, parse_query(body["searches"][i], collection->dim(), kMaxLimit,
                                                             "body.searches[" + std::to_string(i) + "]")));
  run_searches(std::move(call), collection, std::move(queries), AnswerShape::query_batch);
}

}  // namespace simkit::server
