#include "api.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <span>
#include <thread>

#include <boost/asio/post.hpp>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "log.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // a trailing slash
  return parts;
}

// Constant time in the key's content: the comparison does not stop at the first differing byte.
bool same_secret(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : ~key[i]));
  return diff == 0;
}

struct Route {
  const char* method;
  const char* pattern;  // segments; "{...}" matches one parameter
  void (Api::*run)(Call&);
  std::vector<std::string> segments = split_path(std::string("/") + pattern);
  std::string label = std::string(method) + " /" + pattern;  // the metrics' route label
};

// The router's table: what route() matches (in this order) and what route_list() prints for
// --print-routes, so docs/openapi.yaml is checked against what is actually served.
std::span<const Route> collection_routes() {
  static const Route routes[] = {
      {"GET", "collections", &Api::list_collections},
      {"POST", "collections/aliases", &Api::update_aliases},
      {"GET", "aliases", &Api::list_aliases},
      {"GET", "collections/{name}/aliases", &Api::list_collection_aliases},
      {"PUT", "collections/{name}", &Api::create_collection},
      {"GET", "collections/{name}", &Api::get_collection},
      {"GET", "collections/{name}/exists", &Api::collection_exists},
      {"DELETE", "collections/{name}", &Api::delete_collection},
      {"PUT", "collections/{name}/points", &Api::upsert_points},
      {"POST", "collections/{name}/points", &Api::retrieve_points},
      {"POST", "collections/{name}/points/delete", &Api::delete_points},
      {"POST", "collections/{name}/points/scroll", &Api::scroll_points},
      {"GET", "collections/{name}/points/{id}", &Api::get_point},
      {"POST", "collections/{name}/points/count", &Api::count_points},
      {"POST", "collections/{name}/points/payload", &Api::set_payload},
      {"PUT", "collections/{name}/points/payload", &Api::set_payload},
      {"POST", "collections/{name}/points/payload/delete", &Api::delete_payload},
      {"POST", "collections/{name}/points/payload/clear", &Api::delete_payload},
      {"POST", "collections/{name}/points/search", &Api::search_one},
      {"POST", "collections/{name}/points/search/batch", &Api::search_batch},
      {"POST", "collections/{name}/points/query", &Api::query_points},
      {"POST", "collections/{name}/points/query/batch", &Api::query_batch},
      {"PUT", "collections/{name}/vector_index", &Api::build_index},
      {"PUT", "collections/{name}/index", &Api::create_payload_index},
      {"DELETE", "collections/{name}/index/{field_name}", &Api::delete_payload_index},
      {"POST", "collections/{name}/snapshots", &Api::create_snapshot},
      {"GET", "collections/{name}/snapshots", &Api::list_snapshots},
      {"PUT", "collections/{name}/snapshots/recover", &Api::recover_snapshot},
      {"GET", "collections/{name}/snapshots/{snapshot}", &Api::download_snapshot},
      {"DELETE", "collections/{name}/snapshots/{snapshot}", &Api::delete_snapshot},
  };
  return routes;
}

// Routes outside the collections: one exact path each, GET only, answered whether or not the
// collections have loaded. `open`: no API key needed, for the probes that load balancers and
// Kubernetes call without credentials. Their metrics label is the bare path ("/healthz").
struct FixedRoute {
  const char* path;
  bool open;
  void (Api::*run)(Call&);
};
constexpr FixedRoute fixed_routes[] = {
    {"/", false, &Api::service_info}, {"/healthz", true, &Api::healthz},         {"/livez", true, &Api::livez},
    {"/readyz", true, &Api::readyz},  {"/metrics", false, &Api::scrape_metrics},
};

// Seconds since the request's headers were read: the "time" of every answer and its metric.
double elapsed(const Call& call) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - call.request.received).count();
}

}  // namespace

void check_collection_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!ok)
    bad_request("invalid collection name " + simkit::quoted(name) +
                ": use 1-64 letters, digits, '_' or '-', starting with a letter or digit");
}

bool wait_param(const Call& call) {
  const std::string w = query_param(call.request.query, "wait");
  if (w.empty() || w == "true") return true;
  if (w == "false") return false;
  bad_request("wait must be true or false (got " + simkit::quoted(w) + ")");
}

Api::Api(ApiSettings settings, Metrics& metrics)
    : settings_(std::move(settings)),
      data_dir_lock_(settings_.data_dir, "simkit serve", "stop it or serve another --data-dir"),
      metrics_(metrics),
      pool_(static_cast<size_t>(settings_.blocking_threads)) {}

int64_t Api::load_collections() {
  fs::create_directories(settings_.data_dir / "collections");
  fs::create_directories(settings_.data_dir / "snapshots");
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(settings_.data_dir / "collections")) {
    const std::string name = entry.path().filename().string();
    // Leftovers of a create or delete that a crash interrupted.
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".deleted-", 0) == 0) {
      fs::remove_all(entry.path());
      continue;
    }
    if (entry.is_directory()) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());  // the same order at every start: logs compare
  int64_t loaded = 0;
  for (const fs::path& dir : found) {
    // A drain stops the load between collections; one being opened is opened whole (and closed,
    // saved, at exit like any other).
    for (auto waited = std::chrono::milliseconds(0); waited < settings_.load_delay && !draining_;
         waited += std::chrono::milliseconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (draining_) return loaded;
    const std::string name = dir.filename().string();
    log_line(LogLevel::debug, "collection %s: loading (%lld of %zu)", name.c_str(), static_cast<long long>(loaded + 1),
             found.size());
    auto collection = Collection::open(name, dir, settings_.collection, metrics_);
    {
      std::lock_guard g(collections_mutex_);
      collections_[name] = std::move(collection);
    }
    ++loaded;
  }
  load_aliases();
  loading_ = false;
  return loaded;
}

std::vector<std::string> Api::route_list() {
  std::vector<std::string> list;
  for (const FixedRoute& f : fixed_routes) list.push_back(std::string("GET ") + f.path);
  for (const Route& r : collection_routes()) list.push_back(r.label);
  return list;
}

Api::~Api() { close(); }

void Api::close() {
  pool_.join();
  std::map<std::string, std::shared_ptr<Collection>> all;
  {
    std::lock_guard g(collections_mutex_);
    all = collections_;
  }
  for (auto& [name, c] : all) c->close();
}

fs::path Api::collection_dir(const std::string& name) const { return settings_.data_dir / "collections" / name; }
fs::path Api::snapshot_dir(const std::string& name) const { return settings_.data_dir / "snapshots" / name; }

bool Api::authorized(const HttpRequest& r) const {
  if (settings_.api_key.empty()) return true;
  if (!r.api_key.empty()) return same_secret(r.api_key, settings_.api_key);
  const std::string bearer = "Bearer ";
  if (r.authorization.rfind(bearer, 0) == 0)
    return same_secret(r.authorization.substr(bearer.size()), settings_.api_key);
  return false;
}

void Api::handle(HttpRequest&& request, Responder respond) {
  Call call{std::move(request), std::move(respond), "", {}, /*here=*/false};
  try {
    route(call);
  } catch (...) {
    reply_exception(call);
  }
}

void Api::handle_here(HttpRequest&& request, Responder respond) {
  Call call{std::move(request), std::move(respond), "", {}, /*here=*/true};
  try {
    route(call);
  } catch (...) {
    reply_exception(call);
  }
}

void Api::reply_exception(Call& call) {
  try {
    throw;
  } catch (const ApiError& e) {
    // A 503 is always temporary here (a queue, a recovery, a shutdown): say when to retry.
    if (e.status() == 503) return reply_error(call, 503, e.what(), {{"Retry-After", "1"}});
    reply_error(call, e.status(), e.what());
  } catch (const Error& e) {
    reply_error(call, e.code() == ErrorCode::invalid_argument ? 400 : 500, e.what());
  } catch (const std::exception& e) {
    reply_error(call, 500, std::string("internal error: ") + e.what());
  }
}

void Api::route(Call& call) {
  const HttpRequest& r = call.request;
  const FixedRoute* fixed = nullptr;
  for (const FixedRoute& f : fixed_routes)
    if (r.path == f.path) fixed = &f;
  const auto run_fixed = [&](const FixedRoute& f) {
    call.route = f.path;
    if (r.method != "GET") return reply_error(call, 405, std::string("use GET ") + f.path);
    (this->*f.run)(call);
  };
  if (fixed && fixed->open) return run_fixed(*fixed);
  if (!authorized(r)) {
    call.route = "unauthorized";
    return reply_error(call, 401,
                       "missing or wrong API key (send the header 'api-key: KEY' or 'Authorization: Bearer KEY')");
  }
  if (fixed) return run_fixed(*fixed);
  const std::vector<std::string> parts = split_path(r.path);
  bool path_known = false;
  for (const Route& route : collection_routes()) {
    const std::vector<std::string>& pattern = route.segments;
    if (pattern.size() != parts.size()) continue;
    std::vector<std::string> params;
    bool match = true;
    for (size_t i = 0; i < parts.size() && match; ++i) {
      if (pattern[i].front() == '{')
        params.push_back(parts[i]);
      else
        match = pattern[i] == parts[i];
    }
    if (!match) continue;
    path_known = true;
    if (r.method != route.method) continue;
    call.route = route.label;
    call.params = std::move(params);
    // Listening starts before the collections are open (server.cpp): until they are, every
    // collection route would answer from a partial list, so none answers.
    if (loading_)
      return reply_error(call, 503,
                         "the server is loading its collections (GET /readyz answers 200 once it has); retry shortly",
                         {{"Retry-After", "1"}});
    if (!call.params.empty()) {
      check_collection_name(call.params[0]);
      // An alias names its collection on every route, for every handler alike.
      call.params[0] = collection_name(call.params[0]);
    }
    if (router_ && !call.here && router_(call)) return;
    return (this->*route.run)(call);
  }
  call.route = path_known ? "method not allowed" : "not found";
  if (path_known) return reply_error(call, 405, r.method + " is not allowed on " + simkit::quoted(r.path, 200));
  reply_error(call, 404, "no route for " + r.method + " " + simkit::quoted(r.path, 200) + " (see docs/API.md)");
}

// The probes. /healthz is the original one (200 until a drain begins); /livez and /readyz are
// Kubernetes' pair: alive whenever the process answers at all, ready only while it can serve
// every collection.
void Api::healthz(Call& call) { reply(call, draining_ ? 503 : 200, {{"result", draining_ ? "draining" : "ok"}}); }

void Api::livez(Call& call) { reply(call, 200, {{"result", "ok"}}); }

void Api::readyz(Call& call) {
  if (draining_) return reply_error(call, 503, "draining");
  if (loading_) return reply_error(call, 503, "loading collections", {{"Retry-After", "1"}});
  reply(call, 200, {{"result", "ok"}});
}

void Api::scrape_metrics(Call& call) {
  answer(call, 200, metrics_.scrape(), {{"Content-Type", "text/plain; version=0.0.4"}});
}

void Api::answer(Call& call, unsigned status, std::string body,
                 std::vector<std::pair<std::string, std::string>> headers) {
  const double seconds = elapsed(call);
  if (!call.here) metrics_.request(call.route.empty() ? "unknown" : call.route, status, seconds);
  HttpResponse response{status, std::move(body), "application/json", std::move(headers), call.route};
  for (auto it = response.headers.begin(); it != response.headers.end();)
    if (it->first == "Content-Type") {
      response.content_type = it->second;
      it = response.headers.erase(it);
    } else {
      ++it;
    }
  if (call.respond) {
    Responder respond = std::move(call.respond);
    call.respond = nullptr;
    respond(std::move(response));
  }
}

void Api::reply(Call& call, unsigned status, nlohmann::json body) {
  body["status"] = body.contains("status") ? body["status"] : nlohmann::json("ok");
  body["time"] = elapsed(call);
  answer(call, status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {});
}

void Api::reply_result_text(Call& call, const std::string& result_json) {
  const double t = elapsed(call);
  char number[32];
  char* end = std::to_chars(number, number + sizeof number, t).ptr;
  std::string body;
  body.reserve(result_json.size() + 48);
  body += "{\"result\":";
  body += result_json;
  body += ",\"status\":\"ok\",\"time\":";
  body.append(number, static_cast<size_t>(end - number));
  body += '}';
  answer(call, 200, std::move(body), {});
}

void Api::reply_error(Call& call, unsigned status, const std::string& message,
                      std::vector<std::pair<std::string, std::string>> headers) {
  nlohmann::json body = {{"status", {{"error", message}}}};
  body["time"] = elapsed(call);
  answer(call, status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), std::move(headers));
}

std::string Api::collection_name(const std::string& name) {
  std::lock_guard g(collections_mutex_);
  if (collections_.count(name)) return name;
  auto alias = aliases_.find(name);
  return alias == aliases_.end() ? name : alias->second;
}

std::shared_ptr<Collection> Api::find(const std::string& name) {
  std::lock_guard g(collections_mutex_);
  auto it = collections_.find(name);
  if (it == collections_.end()) {
    if (recovering_.count(name))
      throw ApiError(503, "collection '" + name + "' is being recovered from a snapshot; retry shortly");
    throw ApiError(404, "collection '" + name + "' does not exist");
  }
  return it->second;
}

void Api::blocking(Call&& call, std::function<void(Call&)> work) {
  if (pending_writes_.fetch_add(1) >= settings_.max_pending_writes) {
    pending_writes_.fetch_sub(1);
    metrics_.rejected("queue_full");
    return reply_error(call, 429, "too many requests are waiting for the disk pool (--max-queue); retry later",
                       {{"Retry-After", "1"}});
  }
  auto shared = std::make_shared<Call>(std::move(call));
  boost::asio::post(pool_, [this, shared, work = std::move(work)] {
    pending_writes_.fetch_sub(1);
    Call& c = *shared;
    try {
      work(c);
    } catch (...) {
      reply_exception(c);
    }
  });
}

}  // namespace simkit::server
