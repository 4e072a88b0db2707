#pragma once
// `simkit serve`: the process around the API. It opens the collections in the data directory,
// listens (loopback unless told otherwise), prints "listening on http://HOST:PORT" once ready,
// and on SIGTERM or SIGINT drains: no new connections, idle ones closed, in-flight requests
// answered, queued searches run, indexes saved; then run_server returns 0.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include <simkit/context.hpp>

#include "batcher.hpp"
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
};

/// Serves until SIGTERM / SIGINT; returns the exit status (0 after a clean drain).
int run_server(const ServeOptions& options);

}  // namespace simkit::server
