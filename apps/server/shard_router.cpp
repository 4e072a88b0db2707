// apps/server/shard_router.hpp: rank 0 of the sharded server, which spreads requests over the ranks.

#include "shard_router.hpp"

#include <future>
#include <mutex>
#include <set>

#include <boost/asio/post.hpp>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "log.hpp"
#include "payload_edit.hpp"
#include "query_body.hpp"
#include "request_json.hpp"
#include "request_limits.hpp"
#include "shard_merge.hpp"
#include "shard_worker.hpp"
#include "upsert_body.hpp"

namespace simkit::server {

namespace {

using nlohmann::json;

// Routes rank 0 answers alone: what every rank holds alike, and the searches, which reach the
// ranks through the collection's batches (ShardRouter::run_batch).
const std::set<std::string> kHere = {
    "GET /collections",
    "GET /aliases",
    "GET /collections/{name}/aliases",
    "GET /collections/{name}/exists",
    "POST /collections/{name}/points/search",
    "POST /collections/{name}/points/search/batch",
};

// Routes every rank runs, answered with the first error or rank 0's result, numbers summed.
const std::set<std::string> kEverywhere = {
    "POST /collections/aliases",
    "PUT /collections/{name}",
    "DELETE /collections/{name}",
    "PUT /collections/{name}/vector_index",
    "PUT /collections/{name}/index",
    "DELETE /collections/{name}/index/{field_name}",
    "POST /collections/{name}/points/delete",
    "POST /collections/{name}/points/payload",
    "PUT /collections/{name}/points/payload",
    "POST /collections/{name}/points/payload/delete",
    "POST /collections/{name}/points/payload/clear",
};

const char* const kNoSnapshots =
    "snapshots are not served by a sharded server (mpirun -n P simkit serve): each rank holds only its share of the "
    "collection; stop the server and copy the data directory (every rank-R-of-P folder) instead";

std::string from_rank(int rank) { return rank == 0 ? std::string() : "rank " + std::to_string(rank) + ": "; }

std::vector<std::pair<std::string, std::string>> retry_after(unsigned status) {
  if (status == 503 || status == 429) return {{"Retry-After", "1"}};
  return {};
}

// The answers of one request to several ranks: the last to arrive hands them on.
struct Gather {
  std::mutex mutex;
  std::vector<std::string> answers;
  size_t left = 0;
  std::function<void(std::vector<std::string>&)> done;
};

json point_json(const StoredPoint& p, const PayloadSelector& with_payload, bool with_vector) {
  json j = {{"id", p.uuid.empty() ? json(p.id) : json(p.uuid)}};
  if (with_payload.any()) j["payload"] = json::parse(select_payload(p.payload, with_payload), nullptr, false);
  if (with_vector) j["vector"] = p.vector;
  return j;
}

bool larger_is_better(const Collection& c) { return c.config().distance == "Cosine" || c.config().distance == "Dot"; }

}  // namespace

ShardRouter::ShardRouter(ShardLink& link, int ranks) : link_(link), ranks_(ranks), pool_(2) {}

ShardRouter::~ShardRouter() { pool_.join(); }

void ShardRouter::configure(ApiSettings& settings) {
  settings.collection.run_batch = [this](Collection& c, std::vector<Queued<SearchJob>>& batch) { run_batch(c, batch); };
}

void ShardRouter::attach(Api& api, std::function<void()> drain) {
  api_ = &api;
  api.set_router([this](Call& call) { return route(call); });
  std::lock_guard g(drain_mutex_);
  drain_ = std::move(drain);
  if (drain_asked_) drain_();
}

void ShardRouter::drain() {
  std::lock_guard g(drain_mutex_);  // held while it runs: detach() waits for it
  drain_asked_ = true;
  if (drain_) drain_();
}

void ShardRouter::detach() {
  {
    std::lock_guard g(drain_mutex_);
    drain_ = nullptr;
  }
  pool_.join();  // the answers being combined are sent
}

std::vector<int> ShardRouter::all_ranks() const {
  std::vector<int> all;
  for (int r = 0; r < ranks_; ++r) all.push_back(r);
  return all;
}

ShardRouter::Messages ShardRouter::same(std::string message) const {
  return Messages(static_cast<size_t>(ranks_), std::make_shared<const std::string>(std::move(message)));
}

void ShardRouter::wait_ranks_loaded() {
  std::vector<int> others;
  for (int r = 1; r < ranks_; ++r) others.push_back(r);
  if (others.empty()) return;
  const Answers answers = ask_and_wait(others, encode_loaded(), nullptr);
  for (int r : others) {
    const StatusReply s = decode_status(answers[static_cast<size_t>(r)]);
    if (s.status != 200) throw Error(ErrorCode::io, "rank " + std::to_string(r) + ": " + s.error);
  }
  log_line(LogLevel::info, "ranks 1 to %d have opened their collections", ranks_ - 1);
}

void ShardRouter::ask(const std::vector<int>& to, const Messages& messages, Own own,
                      std::function<void(Answers&)> done) {
  auto g = std::make_shared<Gather>();
  g->answers.resize(static_cast<size_t>(ranks_));
  g->left = to.size();
  g->done = std::move(done);
  auto put = [g](int rank, std::string&& answer) {
    std::unique_lock lock(g->mutex);
    g->answers[static_cast<size_t>(rank)] = std::move(answer);
    if (--g->left > 0) return;
    lock.unlock();
    g->done(g->answers);
  };
  bool mine = false;
  for (int r : to) {
    if (r == 0)
      mine = true;
    else
      link_.send(r, messages[static_cast<size_t>(r)], [put, r](std::string&& a) { put(r, std::move(a)); });
  }
  if (!mine) return;
  try {
    own([put](std::string&& a) { put(0, std::move(a)); });
  } catch (...) {
    put(0, std::string());  // an empty answer reads as a failure where it is decoded
  }
}

ShardRouter::Answers ShardRouter::ask_and_wait(const std::vector<int>& to, std::string message, Own own) {
  auto promise = std::make_shared<std::promise<Answers>>();
  std::future<Answers> answers = promise->get_future();
  ask(to, same(std::move(message)), std::move(own), [promise](Answers& a) { promise->set_value(std::move(a)); });
  return answers.get();
}

bool ShardRouter::route(Call& call) {
  const std::string& r = call.route;
  if (kHere.count(r)) return false;
  const auto reply_with = [this](auto make) {
    return [this, make](Call& c, std::vector<ForwardReply>& replies) {
      api_->reply(c, 200, {{"result", make(c, replies)}});
    };
  };
  if (kEverywhere.count(r)) {
    // A collection is deleted on rank 0 first: closing it runs the searches queued in its batcher
    // (rank 0's) while the other ranks still hold their shares.
    forward(
        call, all_ranks(),
        [this](Call& c, std::vector<ForwardReply>& replies) {
          api_->reply(c, replies[0].status, {{"result", merge_update(replies)}});
        },
        /*rank0_first=*/r == "DELETE /collections/{name}");
  } else if (r == "PUT /collections/{name}/points") {
    upsert(call);
  } else if (r == "POST /collections/{name}/points/scroll") {
    scroll(call);
  } else if (r == "POST /collections/{name}/points/query" || r == "POST /collections/{name}/points/query/batch") {
    query(call, r.ends_with("/batch"));
  } else if (r == "GET /collections/{name}/points/{id}") {
    const int owner = owner_rank(parse_point_id_text(call.params[1]), ranks_);
    forward(call, {owner}, [this, owner](Call& c, std::vector<ForwardReply>& replies) { relay(c, replies[0], owner); });
  } else if (r == "GET /collections/{name}") {
    forward(call, all_ranks(), reply_with([](Call&, auto& replies) { return merge_info(replies); }));
  } else if (r == "POST /collections/{name}/points/count") {
    forward(call, all_ranks(), reply_with([](Call&, auto& replies) { return json{{"count", merge_count(replies)}}; }));
  } else if (r == "POST /collections/{name}/points") {
    forward(call, all_ranks(), reply_with([this](Call& c, auto& replies) {
              json list = merge_retrieve(replies, parse_object(c.request.body, api_->settings().limits)["ids"]);
              const int64_t max = api_->settings().limits.max_response_bytes;
              if (static_cast<int64_t>(list.dump().size()) > max) bad_request(response_too_large(max));
              return list;
            }));
  } else if (r.find("/snapshots") != std::string::npos) {
    api_->find(call.params[0]);  // 404 for a collection that does not exist, as a lone server answers
    throw ApiError(501, kNoSnapshots);
  } else {
    throw ApiError(501, r + " is not served by a sharded server (mpirun -n P simkit serve; docs/API.md)");
  }
  return true;
}

void ShardRouter::forward(Call& call, const std::vector<int>& to, Combine combine, bool rank0_first) {
  auto here = std::make_shared<HttpRequest>(call.request);  // rank 0's share runs the same request
  const Messages messages = same(encode_forward(call.request));
  auto held = std::make_shared<Call>(std::move(call));
  auto finish = [this, held, to, combine = std::move(combine)](Answers& answers) {
    boost::asio::post(pool_, [this, held, to, combine, answers = std::move(answers)] {
      try {
        std::vector<ForwardReply> replies;
        for (int r : to) {
          try {
            replies.push_back(decode_forward_reply(answers[static_cast<size_t>(r)]));
          } catch (...) {
            const StatusReply e = status_of_current_exception();
            replies.push_back({e.status, json{{"status", {{"error", e.error}}}}.dump(), "application/json", {}});
          }
        }
        const int bad = first_failure(replies);
        if (bad >= 0) return relay(*held, replies[static_cast<size_t>(bad)], to[static_cast<size_t>(bad)]);
        combine(*held, replies);
      } catch (...) {
        const StatusReply e = status_of_current_exception();
        api_->reply_error(*held, e.status, e.error, retry_after(e.status));
      }
    });
  };
  const Own own = [this, here](Put put) {
    api_->handle_here(std::move(*here), [put](HttpResponse&& a) {
      put(encode_reply({a.status, std::move(a.body), std::move(a.content_type), std::move(a.headers)}));
    });
  };
  if (!rank0_first || to.size() < 2 || to[0] != 0) return ask(to, messages, own, finish);
  // Rank 0 first, then the others only if it succeeded.
  const std::vector<int> rest(to.begin() + 1, to.end());
  ask({0}, messages, own, [this, rest, messages, finish](Answers& first) {
    std::string mine = std::move(first[0]);
    bool ok = false;
    try {
      const ForwardReply r = decode_forward_reply(mine);
      ok = r.status >= 200 && r.status < 300;
    } catch (...) {
    }
    if (!ok) {
      Answers all(static_cast<size_t>(ranks_));
      all[0] = std::move(mine);
      return finish(all);  // rank 0's error, the first in rank order
    }
    ask(rest, messages, nullptr, [mine = std::move(mine), finish](Answers& others) {
      others[0] = mine;
      finish(others);
    });
  });
}

void ShardRouter::relay(Call& call, const ForwardReply& reply, int rank) {
  if (reply.status >= 200 && reply.status < 300) {
    json body = body_of(reply);
    body.erase("time");
    return api_->reply(call, reply.status, std::move(body));
  }
  api_->reply_error(call, reply.status, from_rank(rank) + error_of(reply), retry_after(reply.status));
}

// Each point to the rank that owns it; acknowledged once every rank has answered, so once every
// point is durable on its owner. Ranks without points answer too: the sum of the ranks' sequence
// numbers is the operation id, which grows with every write.
void ShardRouter::upsert(Call& call) {
  auto collection = api_->find(call.params[0]);
  const bool wait = wait_param(call);
  bool fast = false;
  std::vector<StoredPoint> points =
      parse_upsert_body(call.request.body, collection->dim(), api_->settings().limits, &fast);
  api_->metrics().upsert_body_read(fast);
  auto shares = std::make_shared<std::vector<std::vector<StoredPoint>>>(static_cast<size_t>(ranks_));
  for (StoredPoint& p : points) (*shares)[static_cast<size_t>(owner_rank(p, ranks_))].push_back(std::move(p));
  api_->blocking(std::move(call), [this, collection, shares, wait](Call& c) {
    auto held = std::make_shared<Call>(std::move(c));
    try {
      Messages messages(static_cast<size_t>(ranks_));
      for (int r = 1; r < ranks_; ++r)
        messages[static_cast<size_t>(r)] = std::make_shared<const std::string>(
            encode_upsert({collection->name(), std::move((*shares)[static_cast<size_t>(r)])}));
      ask(
          all_ranks(), messages,
          [collection, shares](Put put) { put(encode_status(upsert_share(*collection, std::move((*shares)[0])))); },
          [this, held, wait](Answers& answers) { finish_upsert(*held, answers, wait); });
    } catch (...) {
      const StatusReply e = status_of_current_exception();
      api_->reply_error(*held, e.status, e.error, retry_after(e.status));
    }
  });
}

void ShardRouter::finish_upsert(Call& call, Answers& answers, bool wait) {
  int64_t operation = 0;
  for (int r = 0; r < ranks_; ++r) {
    StatusReply s;
    try {
      s = decode_status(answers[static_cast<size_t>(r)]);
    } catch (...) {
      s = status_of_current_exception();
    }
    if (s.status != 200) return api_->reply_error(call, s.status, from_rank(r) + s.error, retry_after(s.status));
    operation += s.value;
  }
  api_->reply(call, 200, {{"result", {{"operation_id", operation}, {"status", wait ? "completed" : "acknowledged"}}}});
}

std::optional<int64_t> ShardRouter::resolve_on(int rank, Collection& collection, const PointId& id) {
  if (rank == 0) return collection.resolve(id);
  const Answers answers = ask_and_wait({rank}, encode_resolve({collection.name(), id}), nullptr);
  const StatusReply s = decode_status(answers[static_cast<size_t>(rank)]);
  if (s.status != 200) throw ApiError(s.status, from_rank(rank) + s.error);
  if (s.value < 0) return std::nullopt;
  return s.value;
}

void ShardRouter::scroll(Call& call) {
  auto collection = api_->find(call.params[0]);
  const json body = parse_object(call.request.body, api_->settings().limits, /*empty_is_object=*/true);
  check_fields(body, {"offset", "limit", "with_payload", "with_vector", "filter"}, "body");
  std::optional<PointId> offset;
  if (body.contains("offset") && !body["offset"].is_null()) offset = parse_point_id(body["offset"], "body.offset");
  ShardScroll s;
  s.collection = collection->name();
  const int64_t limit = int_field(body, "limit", 10, 1, kMaxLimit, "body");
  s.limit = limit + 1;
  const PayloadSelector with_payload = body.contains("with_payload")
                                           ? parse_payload_selector(body["with_payload"], "body.with_payload")
                                           : PayloadSelector::all();
  s.with_vector = bool_field(body, "with_vector", false, "body");
  if (body.contains("filter") && !body["filter"].is_null()) {
    parse_filter(body["filter"]);  // refused here, before any rank reads it
    s.filter = body["filter"].dump();
  }
  api_->blocking(std::move(call), [this, collection, offset, s, limit, with_payload](Call& c) mutable {
    if (offset && offset->is_uuid()) {
      // Pages go in (id, rank) order: a UUID's place is its owner's id for it, and its owner.
      s.from_rank = owner_rank(*offset, ranks_);
      const std::optional<int64_t> id = resolve_on(s.from_rank, *collection, *offset);
      if (!id) bad_request("body.offset: point " + offset->json().dump() + " is not in the collection");
      s.from = *id;
    } else if (offset) {
      s.from = offset->number;
    }
    Answers answers = ask_and_wait(all_ranks(), encode_scroll(s),
                                   [&](Put put) { put(encode_scroll_share(scroll_share(*collection, s, 0))); });
    std::vector<ScrollShare> shares;
    for (int r = 0; r < ranks_; ++r) {
      shares.push_back(decode_scroll_share(answers[static_cast<size_t>(r)]));
      if (shares.back().status != 200) throw ApiError(shares.back().status, from_rank(r) + shares.back().error);
    }
    const ScrollPage page = merge_scroll(shares, limit);
    json list = json::array();
    int64_t bytes = 0;
    const int64_t max = api_->settings().limits.max_response_bytes;
    for (const StoredPoint& p : page.points) {
      bytes += 32 + (with_payload.any() ? static_cast<int64_t>(p.payload.size()) : 0) +
               16 * static_cast<int64_t>(p.vector.size());
      if (bytes > max) bad_request(response_too_large(max));
      list.push_back(point_json(p, with_payload, s.with_vector));
    }
    json next = nullptr;
    if (page.next) next = page.next->uuid.empty() ? json(page.next->id) : json(page.next->uuid);
    api_->reply(c, 200, {{"result", {{"points", list}, {"next_page_offset", next}}}});
  });
}

// The Query API as a lone server reads it (api_query.cpp), with the stored points a query names
// read from their owners.
void ShardRouter::query(Call& call, bool batch) {
  auto collection = api_->find(call.params[0]);
  const RequestLimits& limits = api_->settings().limits;
  auto requests = std::make_shared<std::vector<QueryRequest>>();
  if (!batch) {
    requests->push_back(parse_query(parse_object(call.request.body, limits), collection->dim(), kMaxLimit, "body"));
  } else {
    const json body = parse_object(call.request.body, limits);
    check_fields(body, {"searches"}, "body");
    if (!body.contains("searches") || !body["searches"].is_array() || body["searches"].empty())
      bad_request("body.searches must be a non-empty array of query requests");
    for (size_t i = 0; i < body["searches"].size(); ++i)
      requests->push_back(
          parse_query(body["searches"][i], collection->dim(), kMaxLimit, "body.searches[" + std::to_string(i) + "]"));
  }
  const Api::AnswerShape shape = batch ? Api::AnswerShape::query_batch : Api::AnswerShape::query;
  bool names_points = false;
  for (const QueryRequest& q : *requests)
    for (const auto* list : {&q.positive, &q.negative})
      for (const QueryExample& e : *list) names_points = names_points || e.id.has_value();
  const auto run = [this, collection, requests, shape](Call& c) {
    std::vector<SearchQuery> queries;
    for (QueryRequest& q : *requests) queries.push_back(resolve_query(*collection, std::move(q)));
    api_->run_searches(std::move(c), collection, std::move(queries), shape);
  };
  if (!names_points) return run(call);
  api_->blocking(std::move(call), run);  // the owners' answers are waited for there
}

std::vector<float> ShardRouter::fetch_vector(Collection& collection, const PointId& id, const std::string& where) {
  const std::string missing =
      where + ": point " + id.json().dump() + " is not in collection '" + collection.name() + "'";
  const int owner = owner_rank(id, ranks_);
  if (owner == 0) {
    const std::optional<int64_t> own = collection.resolve(id);
    std::optional<StoredPoint> p = own ? collection.get(*own, /*with_vector=*/true) : std::nullopt;
    if (!p) throw ApiError(404, missing);
    return std::move(p->vector);
  }
  HttpRequest get;
  get.method = "GET";
  get.path = "/collections/" + collection.name() + "/points/" + (id.is_uuid() ? id.uuid : std::to_string(id.number));
  const Answers answers = ask_and_wait({owner}, encode_forward(get), nullptr);
  const ForwardReply reply = decode_forward_reply(answers[static_cast<size_t>(owner)]);
  if (reply.status == 404) throw ApiError(404, missing);
  if (reply.status != 200) throw ApiError(reply.status, from_rank(owner) + error_of(reply));
  return body_of(reply)["result"]["vector"].get<std::vector<float>>();
}

SearchQuery ShardRouter::resolve_query(Collection& collection, QueryRequest&& q) {
  for (auto* list : {&q.positive, &q.negative})
    for (QueryExample& e : *list) {
      if (!e.id) continue;
      e.vector = fetch_vector(collection, *e.id, e.where);
      q.search.exclude_points.push_back(*e.id);  // each rank leaves out its own of them
    }
  return finish_query(q, collection);
}

// A batch the batcher formed on rank 0: every rank searches its points for each query's best
// offset + limit hits, and the merge keeps the limit after the offset. Every job is answered.
void ShardRouter::run_batch(Collection& collection, std::vector<Queued<SearchJob>>& batch) {
  std::vector<std::vector<SearchOutcome>> outcomes(static_cast<size_t>(ranks_));
  try {
    ShardSearch s;
    s.collection = collection.name();
    std::vector<Clock::time_point> enqueued;
    for (const Queued<SearchJob>& q : batch) {
      SearchQuery shared = q.job.query;
      shared.limit = shared.offset + shared.limit;
      shared.offset = 0;
      s.queries.push_back(std::move(shared));
      enqueued.push_back(q.enqueued);
    }
    const Answers answers = ask_and_wait(all_ranks(), encode_search(s), [&](Put put) {
      put(encode_outcomes(search_share(collection, s.queries, enqueued)));
    });
    for (size_t r = 0; r < outcomes.size(); ++r) {
      try {
        outcomes[r] = decode_outcomes(answers[r]);
      } catch (...) {
      }
    }
  } catch (const std::exception& e) {
    log_line(LogLevel::error, "collection %s: a sharded search failed: %s", collection.name().c_str(), e.what());
  }
  for (auto& o : outcomes)
    if (o.size() != batch.size()) o.assign(batch.size(), {500, "internal error: a rank gave no answer", {}});
  const bool larger = larger_is_better(collection);
  for (size_t i = 0; i < batch.size(); ++i) {
    SearchJob& job = batch[i].job;
    std::vector<std::string_view> hits;
    int failed = -1;
    for (size_t r = 0; r < outcomes.size() && failed < 0; ++r) {
      if (outcomes[r][i].status != 200)
        failed = static_cast<int>(r);
      else
        hits.push_back(outcomes[r][i].hits);
    }
    if (failed >= 0) {
      const SearchOutcome& f = outcomes[static_cast<size_t>(failed)][i];
      job.done({f.status, from_rank(failed) + f.error, {}});
      continue;
    }
    std::string merged;
    try {
      merged = merge_hits(hits, job.query.offset, job.query.limit, larger);
    } catch (...) {
      const StatusReply e = status_of_current_exception();
      job.done({e.status, e.error, {}});
      continue;
    }
    job.done({200, {}, std::move(merged)});
  }
}

}  // namespace simkit::server
