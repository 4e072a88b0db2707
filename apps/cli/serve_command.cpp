// `simkit serve`: the HTTP search server (apps/server/, docs/API.md). This file only turns
// options into ServeOptions; the server owns everything else.

#include <cstdlib>
#include <string>

#include <simkit/error.hpp>

#include "../server/server.hpp"
#include "cli_support.hpp"
#include "commands.hpp"

namespace simkit::cli {

void add_serve_command(CLI::App& app) {
  struct Options {
    std::string data_dir, host = "127.0.0.1", api_key;
    int port = 6333, io_threads = 0, batch_workers = 0;
    int64_t max_batch = 64, max_delay_us = 2000, max_queue = 4096, timeout_ms = 10000, max_connections = 4096;
    double max_body_mb = 32;
    int64_t max_payload_depth = 32, max_payload_values = 65536, max_payload_kb = 1024, max_response_mb = 64;
    RunOptions run;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve collections over HTTP: a Qdrant-shaped REST API (docs/API.md) with durable writes (SQLite WAL), a "
      "dynamic batcher that runs queued searches as one matrix-shaped search, snapshots, Prometheus metrics at "
      "/metrics, API-key auth and load shedding (503 when the queue is full, 504 past a request's deadline).");
  sub->add_option("--data-dir", o->data_dir, "Folder holding the collections and snapshots (created if missing)")
      ->required();
  sub->add_option("--host", o->host, "Address to listen on; loopback unless you mean to expose it")
      ->capture_default_str();
  sub->add_option("--port", o->port, "TCP port; 0 picks a free one (the 'listening on' line says which)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--api-key", o->api_key,
                  "Require 'api-key: KEY' or 'Authorization: Bearer KEY' on every route but /healthz "
                  "(default: $SIMKIT_API_KEY; none: no auth)");
  add_run_options(sub, o->run);
  sub->add_option("--io-threads", o->io_threads, "HTTP threads (0: min(8, hardware threads))")
      ->check(CLI::Range(0, 256));
  sub->add_option("--max-batch", o->max_batch, "Most searches run as one call (1 turns batching off)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  sub->add_option("--max-delay-us", o->max_delay_us, "Longest a search waits for its batch to fill, microseconds")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}))
      ->capture_default_str();
  sub->add_option(
         "--batch-workers", o->batch_workers,
         "Batches run at once per collection (0: 1; on the H100 with WordNet, 4 ran 16,931 searches/s against 19,678 "
         "for 1, whose batches were larger)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--max-queue", o->max_queue,
                  "Searches (and writes) queued per collection before 429s (with Retry-After)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}))
      ->capture_default_str();
  sub->add_option("--timeout-ms", o->timeout_ms,
                  "A search still queued after this long gets 504 and is never run; ?timeout=SECONDS lowers it")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  sub->add_option("--max-body-mb", o->max_body_mb, "Larger request bodies get 413 before they are read")
      ->check(CLI::Range(0.001, 4096.0))
      ->capture_default_str();
  sub->add_option("--max-payload-depth", o->max_payload_depth,
                  "Deepest nesting of one point's payload (the object itself is 1); request bodies may nest 8 more. "
                  "Deeper ones get 400 before they are parsed")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  sub->add_option("--max-payload-values", o->max_payload_values,
                  "Most values (objects, arrays, strings, numbers, ...) in one point's payload")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  sub->add_option("--max-payload-kb", o->max_payload_kb,
                  "Largest payload of one point, as compact JSON; payloads are held as that text, so memory follows it")
      ->check(CLI::Range(int64_t{1}, int64_t{4194304}))
      ->capture_default_str();
  sub->add_option("--max-response-mb", o->max_response_mb,
                  "Largest answer a read builds (searches with payloads, scroll, retrieve); larger ones get 400")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->capture_default_str();
  sub->add_option("--max-connections", o->max_connections, "Open connections beyond this get 503 at once")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->capture_default_str();
  sub->footer(
      "Examples:\n"
      "  simkit serve --data-dir /var/lib/simkit --port 6333 --device gpu\n"
      "  curl -X PUT localhost:6333/collections/docs -H 'Content-Type: application/json' \\\n"
      "       -d '{\"vectors\": {\"size\": 4, \"distance\": \"Cosine\"}}'\n"
      "  curl -X PUT 'localhost:6333/collections/docs/points?wait=true' \\\n"
      "       -d '{\"points\": [{\"id\": 1, \"vector\": [0.1, 0.2, 0.3, 0.4], \"payload\": {\"lang\": \"en\"}}]}'\n"
      "  curl -X POST localhost:6333/collections/docs/points/search -d '{\"vector\": [0.1, 0.2, 0.3, 0.4], \"limit\": "
      "3}'\n"
      "SIGTERM or Ctrl-C drains: in-flight requests are answered, indexes saved, exit status 0.");
  sub->callback([o] {
    server::ServeOptions s;
    s.data_dir = o->data_dir;
    s.host = o->host;
    s.port = static_cast<uint16_t>(o->port);
    s.api_key = o->api_key;
    if (s.api_key.empty())
      if (const char* env = std::getenv("SIMKIT_API_KEY")) s.api_key = env;
    s.device = parse_device(o->run.device);
    s.threads = o->run.threads;
    s.io_threads = o->io_threads;
    s.limits.max_batch = o->max_batch;
    s.limits.max_delay = std::chrono::microseconds(o->max_delay_us);
    s.limits.max_queue = o->max_queue;
    s.limits.workers = o->batch_workers;
    s.timeout = std::chrono::milliseconds(o->timeout_ms);
    s.max_body_bytes = static_cast<size_t>(o->max_body_mb * 1024 * 1024);
    s.max_connections = o->max_connections;
    s.requests.payload.max_depth = o->max_payload_depth;
    s.requests.payload.max_values = o->max_payload_values;
    s.requests.payload.max_bytes = o->max_payload_kb * 1024;
    s.requests.max_response_bytes = o->max_response_mb << 20;
    const int status = server::run_server(s);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace simkit::cli
