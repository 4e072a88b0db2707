#pragma once
// `simkit serve`: the process around the API. It listens first (loopback unless told otherwise)
// and prints "listening on http://HOST:PORT" on stdout, then opens the collections in the data
// directory on a thread of its own: meanwhile /livez, /healthz and /metrics answer, /readyz and
// every collection route answer 503, and "ready: N collections loaded in X s" follows on stderr
// when they are open. On SIGTERM or SIGINT, loading or not, it drains: no new connections, idle
// ones closed, in-flight requests answered, queued searches run, indexes saved; then run_server
// returns 0. A collection that cannot be opened stops the server the same way, and run_server
// then throws that error.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <simkit/context.hpp>

#include "batcher.hpp"
#include "log.hpp"
#include "request_limits.hpp"

namespace simkit::server {

class Api;
struct ApiSettings;

/// What `mpirun -n P simkit serve` adds to rank 0's server (shard_router.hpp: requests and
/// search batches routed to every rank); null in ServeOptions: one process, as always.
class ServeShards {
 public:
  virtual ~ServeShards() = default;
  /// Before the Api is built: its settings (the collections' batches go to the ranks).
  virtual void configure(ApiSettings& settings) = 0;
  /// Once the Api is built, before listening: routes its requests from now on. `drain` begins the
  /// server's drain, as SIGTERM does (for a rank that was signalled).
  virtual void attach(Api& api, std::function<void()> drain) = 0;
  /// On the loader thread, before rank 0 opens its own collections: waits for every other rank
  /// to have opened its own (throws its error), so that /readyz means every rank is ready.
  virtual void wait_ranks_loaded() = 0;
  /// After the drain and Api::close(), before the Api is gone: nothing reaches it from now on.
  virtual void detach() = 0;
};

struct ServeOptions {
  std::filesystem::path data_dir;
  std::string host = "127.0.0.1";
  uint16_t port = 6333;
  std::string api_key;
  Device device = Device::automatic;
  int gpu_id = 0;
  std::vector<int> gpu_ids;  // two or more: searches split over these GPUs (Context::gpu_ids)
  int threads = 0;           // compute threads for CPU searches; 0: all
  int io_threads = 0;        // HTTP threads; 0: min(8, hardware threads)
  BatcherLimits limits;
  std::chrono::milliseconds timeout{10000};
  size_t max_body_bytes = 32u << 20;
  RequestLimits requests;  // JSON nesting, arrays and objects per body, payload limits
  int64_t max_connections = 4096;
  std::chrono::seconds drain_timeout{30};  // a drain that takes longer is cut short
  LogLevel log_level = LogLevel::info;     // what goes to stderr (log.hpp)
  std::string access_log;                  // "": none; "-": stdout; else a file (access_log.hpp)
  ServeShards* shards = nullptr;           // rank 0 of a sharded server (above); null: one process
};

/// The Api's settings for `options` as run_server makes them, the device resolved once: what
/// every rank of a sharded server opens its own shard with.
ApiSettings serve_api_settings(const ServeOptions& options);

/// Serves until SIGTERM / SIGINT; returns the exit status (0 after a clean drain).
int run_server(const ServeOptions& options);

}  // namespace simkit::server
