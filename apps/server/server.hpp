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
#include <string>

#include <simkit/context.hpp>

#include "batcher.hpp"
#include "log.hpp"
#include "request_limits.hpp"

namespace simkit::server {

struct ServeOptions {
  std::filesystem::path data_dir;
  std::string host = "127.0.0.1";
  uint16_t port = 6333;
  std::string api_key;
  Device device = Device::automatic;
  int threads = 0;     // compute threads for CPU searches; 0: all
  int io_threads = 0;  // HTTP threads; 0: min(8, hardware threads)
  BatcherLimits limits;
  std::chrono::milliseconds timeout{10000};
  size_t max_body_bytes = 32u << 20;
  RequestLimits requests;  // JSON nesting, arrays and objects per body, payload limits
  int64_t max_connections = 4096;
  std::chrono::seconds drain_timeout{30};  // a drain that takes longer is cut short
  LogLevel log_level = LogLevel::info;     // what goes to stderr (log.hpp)
  std::string access_log;                  // "": none; "-": stdout; else a file (access_log.hpp)
};

/// Serves until SIGTERM / SIGINT; returns the exit status (0 after a clean drain).
int run_server(const ServeOptions& options);

}  // namespace simkit::server
