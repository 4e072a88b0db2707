// apps/server/shard_worker.hpp: a rank's share of the sharded server's work.

#include "shard_worker.hpp"

#include <boost/asio/post.hpp>

#include <simkit/error.hpp>

#include "api_error.hpp"

namespace simkit::server {

StatusReply status_of_current_exception() {
  try {
    throw;
  } catch (const ApiError& e) {
    return {e.status(), e.what(), 0};
  } catch (const Error& e) {
    return {e.code() == ErrorCode::invalid_argument ? 400u : 500u, e.what(), 0};
  } catch (const std::exception& e) {
    return {500, std::string("internal error: ") + e.what(), 0};
  }
}

StatusReply upsert_share(Collection& collection, std::vector<StoredPoint> points) {
  try {
    if (!points.empty()) collection.upsert(std::move(points));  // durable and visible when it returns
    return {200, {}, collection.seq()};
  } catch (...) {
    return status_of_current_exception();
  }
}

std::vector<SearchOutcome> search_share(Collection& collection, std::vector<SearchQuery> queries,
                                        const std::vector<Clock::time_point>& enqueued) {
  const Clock::time_point now = Clock::now();
  std::vector<SearchOutcome> outcomes(queries.size());
  std::vector<Queued<SearchJob>> batch(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    SearchQuery& q = queries[i];
    for (const PointId& id : q.exclude_points)
      if (const std::optional<int64_t> own = collection.resolve(id)) q.exclude.push_back(*own);
    batch[i].job.query = std::move(q);
    batch[i].enqueued = i < enqueued.size() ? enqueued[i] : now;
    batch[i].deadline = Clock::time_point::max();
    batch[i].job.done = [&outcomes, i](SearchOutcome&& o) { outcomes[i] = std::move(o); };
  }
  if (!batch.empty()) collection.search_now(batch);  // answers every job before it returns
  return outcomes;
}

ScrollShare scroll_share(Collection& collection, const ShardScroll& s, int rank) {
  ScrollShare share;
  try {
    std::optional<Filter> filter;
    if (!s.filter.empty()) filter = parse_filter(nlohmann::json::parse(s.filter));
    const int64_t from = rank < s.from_rank ? s.from + 1 : s.from;  // the merged order: (id, rank)
    share.points = collection.scroll(from, s.limit, s.with_vector, filter);
  } catch (...) {
    const StatusReply e = status_of_current_exception();
    share.status = e.status;
    share.error = e.error;
  }
  return share;
}

namespace {

// The answer of a message that failed before it ran, shaped as its kind of answer.
std::string failed(ShardOp op, const std::string& message, const StatusReply& e) {
  switch (op) {
    case ShardOp::forward: {
      const nlohmann::json body = {{"status", {{"error", e.error}}}, {"time", 0}};
      return encode_reply(
          {e.status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json", {}});
    }
    case ShardOp::search: {
      size_t n = 1;
      try {
        n = decode_search(message).queries.size();
      } catch (...) {
      }
      return encode_outcomes(std::vector<SearchOutcome>(n, SearchOutcome{e.status, e.error, {}}));
    }
    case ShardOp::scroll: return encode_scroll_share({e.status, e.error, {}});
    default: return encode_status(e);
  }
}

}  // namespace

ShardWorker::ShardWorker(Api& api, int rank) : api_(api), rank_(rank), pool_(4) {}

ShardWorker::~ShardWorker() { join(); }

void ShardWorker::join() { pool_.join(); }

void ShardWorker::set_loaded(std::string error) {
  {
    std::lock_guard g(mutex_);
    loaded_ = true;
    load_error_ = std::move(error);
  }
  loaded_cv_.notify_all();
}

void ShardWorker::execute(std::string message, std::function<void(std::string)> done) {
  ShardOp op = ShardOp::loaded;
  try {
    op = op_of(message);
    if (op == ShardOp::forward) {
      // Api::handle parses and queues; what waits runs on its own pools, then answers.
      return api_.handle(decode_forward(message), [done](HttpResponse&& r) {
        done(encode_reply({r.status, std::move(r.body), std::move(r.content_type), std::move(r.headers)}));
      });
    }
  } catch (...) {
    return done(failed(op, message, status_of_current_exception()));
  }
  boost::asio::post(pool_, [this, message = std::move(message), done = std::move(done)] { run(message, done); });
}

void ShardWorker::run(const std::string& message, const std::function<void(std::string)>& done) {
  const ShardOp op = op_of(message);
  std::string answer;
  try {
    switch (op) {
      case ShardOp::upsert: {
        ShardUpsert u = decode_upsert(message);
        answer = encode_status(upsert_share(*api_.find(u.collection), std::move(u.points)));
        break;
      }
      case ShardOp::search: {
        ShardSearch s = decode_search(message);
        answer = encode_outcomes(search_share(*api_.find(s.collection), std::move(s.queries)));
        break;
      }
      case ShardOp::scroll: {
        const ShardScroll s = decode_scroll(message);
        answer = encode_scroll_share(scroll_share(*api_.find(s.collection), s, rank_));
        break;
      }
      case ShardOp::resolve: {
        const ShardResolve s = decode_resolve(message);
        answer = encode_status({200, {}, api_.find(s.collection)->resolve(s.id).value_or(-1)});
        break;
      }
      case ShardOp::loaded: {
        std::unique_lock lock(mutex_);
        loaded_cv_.wait(lock, [this] { return loaded_; });
        answer = encode_status(load_error_.empty() ? StatusReply{} : StatusReply{500, load_error_, 0});
        break;
      }
      case ShardOp::forward: break;  // answered by execute()
    }
  } catch (...) {
    answer = failed(op, message, status_of_current_exception());
  }
  done(std::move(answer));
}

}  // namespace simkit::server
