#pragma once
// The REST API (docs/API.md), shaped like Qdrant's: routes, authentication, error bodies,
// per-route metrics, and which work runs where. Searches are parsed on the I/O thread and go
// to their collection's batcher; everything that touches the disk (writes, snapshots,
// collection changes) runs on a small pool so that an fsync never stalls a connection.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "collection.hpp"
#include "data_dir_lock.hpp"
#include "http_server.hpp"
#include "metrics.hpp"
#include "request_limits.hpp"

namespace simkit::server {

/// The Qdrant REST API version whose client (qdrant-client, pinned in tests/server) this server
/// is tested with: GET / answers it as `version`, which the client compares with its own.
constexpr const char* kQdrantApiVersion = "1.20.0";

/// The most results a read or a search returns (limit), and the most it skips (offset).
constexpr int64_t kMaxLimit = 10000;

struct ApiSettings {
  std::filesystem::path data_dir;
  RequestLimits limits;  // JSON nesting, arrays and objects per body, payload size (request_limits.hpp)
  std::string api_key;   // empty: no authentication
  CollectionSettings collection;
  std::chrono::milliseconds timeout{10000};  // a search's longest wait; ?timeout= may lower it
  int64_t max_pending_writes = 4096;         // writes queued for the pool beyond this get a 503
  int blocking_threads = 4;
  /// Test-only (SIMKIT_TEST_LOAD_DELAY_MS): each collection's load waits this long first, so
  /// that tests can watch /readyz and send SIGTERM while collections are loading.
  std::chrono::milliseconds load_delay{0};
};

/// A matched request: the route's template, its path parameters, and how to answer.
struct Call {
  HttpRequest request;
  Responder respond;
  std::string route;
  std::vector<std::string> params;
  /// Api::handle_here's: this process's share of a request the sharded server routes, answered
  /// here (never handed to the router again) and left out of the metrics (the front counts it).
  bool here = false;
};

/// Sees each collection route once it is matched, authorized, loaded and its alias resolved,
/// before its handler: true when it has taken the call (and answers it). The sharded server's
/// rank 0 routes requests to the ranks with one (shard_router.hpp); a lone server has none.
using Router = std::function<bool(Call&)>;

class Api {
 public:
  /// Locks data_dir (data_dir_lock.hpp; Error(io) when another process holds it) and opens
  /// nothing yet: until load_collections() returns, every route but the probes and /metrics
  /// answers 503 "loading collections" with Retry-After.
  Api(ApiSettings settings, Metrics& metrics);
  ~Api();
  /// Opens every collection under data_dir/collections (creating the folders if needed) and
  /// returns how many; meant for a thread of its own while the server already listens. Stops
  /// early, between collections, once draining; then the server stays "loading" until it exits.
  int64_t load_collections();
  bool loading() const noexcept { return loading_; }
  void handle(HttpRequest&& request, Responder respond);
  /// As handle(), bypassing the router (Call::here).
  void handle_here(HttpRequest&& request, Responder respond);
  /// Installs the router (before the server listens).
  void set_router(Router router) { router_ = std::move(router); }
  /// Closes every collection (runs queued searches, saves indexes). Called once, at shutdown.
  void close();
  bool draining() const noexcept { return draining_; }
  void set_draining() noexcept { draining_ = true; }
  /// Every route the router serves, "METHOD /pattern" (`simkit serve --print-routes`; the
  /// router reads the same table, and tests/server/test_openapi.py holds docs/openapi.yaml to it).
  static std::vector<std::string> route_list();

  // --- used by the route files (api_collections.cpp, api_points.cpp) ---
  void reply(Call& call, unsigned status, nlohmann::json body);
  /// 200 with `result_json` (already JSON text) as the result: the searches' fast path.
  void reply_result_text(Call& call, const std::string& result_json);
  void reply_error(Call& call, unsigned status, const std::string& message,
                   std::vector<std::pair<std::string, std::string>> headers = {});
  std::shared_ptr<Collection> find(const std::string& name);
  /// The collection a route's name means: the alias's collection for an alias, else the name.
  std::string collection_name(const std::string& name);
  /// Runs `work` on the blocking pool; it replies itself (errors thrown are answered).
  void blocking(Call&& call, std::function<void(Call&)> work);
  /// How run_searches answers: search: [hits]; search_batch: [[hits], ...]; query: {"points":
  /// hits}; query_batch: [{"points": hits}, ...].
  enum class AnswerShape { search, search_batch, query, query_batch };
  /// Queues the searches (all or none: 429 when the queue is full) and answers once all are done.
  void run_searches(Call&& call, const std::shared_ptr<Collection>& collection, std::vector<SearchQuery> queries,
                    AnswerShape shape);
  const ApiSettings& settings() const noexcept { return settings_; }
  Metrics& metrics() noexcept { return metrics_; }

  // Routes: the probes, unauthenticated, and /metrics (api.cpp).
  void healthz(Call& call);
  void livez(Call& call);
  void readyz(Call& call);
  void scrape_metrics(Call& call);
  // Routes: collections and snapshots (api_collections.cpp).
  void service_info(Call& call);
  void list_collections(Call& call);
  void create_collection(Call& call);
  void get_collection(Call& call);
  void collection_exists(Call& call);
  void delete_collection(Call& call);
  void build_index(Call& call);  // PUT .../vector_index: the vector index from a description
  void create_payload_index(Call& call);
  void delete_payload_index(Call& call);
  void create_snapshot(Call& call);
  void list_snapshots(Call& call);
  void recover_snapshot(Call& call);
  void download_snapshot(Call& call);
  void delete_snapshot(Call& call);
  // Routes: aliases (api_aliases.cpp).
  void update_aliases(Call& call);
  void list_aliases(Call& call);
  void list_collection_aliases(Call& call);
  // Routes: points and their payloads (api_points.cpp).
  void upsert_points(Call& call);
  void delete_points(Call& call);
  void get_point(Call& call);
  void retrieve_points(Call& call);
  void scroll_points(Call& call);
  void count_points(Call& call);
  void set_payload(Call& call);     // POST merges keys in, PUT overwrites
  void delete_payload(Call& call);  // .../payload/delete removes keys, .../payload/clear all of them
  // Routes: searches (api_query.cpp).
  void search_one(Call& call);
  void search_batch(Call& call);
  void query_points(Call& call);
  void query_batch(Call& call);

 private:
  void route(Call& call);
  /// Answers the exception being handled: ApiError's status, 400 for simkit's invalid_argument,
  /// 500 for anything else.
  void reply_exception(Call& call);
  bool authorized(const HttpRequest& request) const;
  void answer(Call& call, unsigned status, std::string body, std::vector<std::pair<std::string, std::string>> headers);
  std::filesystem::path collection_dir(const std::string& name) const;
  void load_aliases();  // at construction, after the collections
  /// Replaces data-dir/aliases.json atomically (under admin_mutex_).
  void save_aliases(const std::map<std::string, std::string>& aliases);
  std::filesystem::path snapshot_dir(const std::string& name) const;

  ApiSettings settings_;
  DataDirLock data_dir_lock_;  // before the collections are opened: one process per data directory
  Metrics& metrics_;
  std::mutex collections_mutex_;
  std::map<std::string, std::shared_ptr<Collection>> collections_;
  std::map<std::string, std::string> aliases_;  // alias -> collection (collections_mutex_)
  std::set<std::string> recovering_;            // names whose snapshot is being swapped in (collections_mutex_)
  std::mutex admin_mutex_;                      // create, delete and recover, one at a time
  boost::asio::thread_pool pool_;
  std::atomic<int64_t> pending_writes_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> loading_{true};  // until load_collections() has opened every collection
  Router router_;                    // set before serving, then only read
};

/// ?wait=true|false of a write (absent: true); 400 for anything else.
bool wait_param(const Call& call);

/// Collection names: 1-64 of [A-Za-z0-9_-], starting with a letter or digit, so that a name is
/// always one plain folder inside the data directory. 400 otherwise.
void check_collection_name(const std::string& name);

}  // namespace simkit::server
