// `simkit serve`: the HTTP search server (apps/server/, docs/API.md). This file only gathers
// the options (command line, environment, config file: serve_config.hpp) into ServeOptions; the
// server owns everything else.

#include <cstdio>
#include <string>

#include <simkit/error.hpp>

#include "../server/api.hpp"
#include "../server/server.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "serve_config.hpp"
#if defined(SIMKIT_CLI_MPI)  // built with MPI (cmake/SimkitMPI.cmake): `mpirun -n P simkit serve`
#include "mpi_launch.hpp"
#include "mpi_serve.hpp"
#endif

namespace simkit::cli {

namespace {

struct Flags {
  std::string data_dir, host = "127.0.0.1", api_key;
  int port = 6333, io_threads = 0, batch_workers = 0;
  int64_t max_batch = 64, max_delay_us = 2000, max_queue = 4096, timeout_ms = 10000, max_connections = 4096;
  double max_body_mb = 32;
  int64_t max_payload_depth = 32, max_payload_values = 65536, max_payload_kb = 1024, max_response_mb = 64;
  std::string config, log_level = "info", access_log;
  bool print_routes = false;
  RunOptions run;
};

// Where the data lives, where to listen, who may ask, what computes.
void add_place_options(CLI::App* sub, Flags& f) {
  // Required, but checked after the config file is read (it may hold data-dir), not by CLI11.
  sub->add_option("--data-dir", f.data_dir,
                  "Required: the folder holding the collections and snapshots (created if missing)");
  sub->add_option("--config", f.config,
                  "YAML file of settings: each key an option's name without dashes (data-dir: ./data, port: 6333); "
                  "the command line and the environment win over it");
  sub->add_option("--host", f.host, "Address to listen on; loopback unless you mean to expose it")
      ->capture_default_str();
  sub->add_option("--port", f.port, "TCP port; 0 picks a free one (the 'listening on' line says which)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--api-key", f.api_key,
                  "Require 'api-key: KEY' or 'Authorization: Bearer KEY' on every route but the probes "
                  "(/healthz, /livez, /readyz); none: no auth. Prefer the environment to the command line, which "
                  "other users can read in ps");
  add_run_options(sub, f.run);
}

// How searches are batched and queued.
void add_batching_options(CLI::App* sub, Flags& f) {
  sub->add_option("--io-threads", f.io_threads, "HTTP threads (0: min(8, hardware threads))")
      ->check(CLI::Range(0, 256));
  sub->add_option("--max-batch", f.max_batch, "Most searches run as one call (1 turns batching off)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  sub->add_option("--max-delay-us", f.max_delay_us, "Longest a search waits for its batch to fill, microseconds")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}))
      ->capture_default_str();
  sub->add_option(
         "--batch-workers", f.batch_workers,
         "Batches run at once per collection (0: 1; on the H100 with WordNet, 4 ran 16,931 searches/s against 19,678 "
         "for 1, whose batches were larger)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--max-queue", f.max_queue,
                  "Searches queued per collection, and requests waiting for the disk pool (writes, reads, snapshots) "
                  "server-wide, before 429s with Retry-After")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}))
      ->capture_default_str();
  sub->add_option("--timeout-ms", f.timeout_ms,
                  "A search still queued after this long gets 504 and is never run; ?timeout=SECONDS lowers it")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
}

// What one request, or all of them together, may cost.
void add_limit_options(CLI::App* sub, Flags& f) {
  sub->add_option("--max-body-mb", f.max_body_mb, "Larger request bodies get 413 before they are read")
      ->check(CLI::Range(0.001, 4096.0))
      ->capture_default_str();
  sub->add_option("--max-payload-depth", f.max_payload_depth,
                  "Deepest nesting of one point's payload (the object itself is 1); request bodies may nest 8 more. "
                  "Deeper ones get 400 before they are parsed")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  sub->add_option("--max-payload-values", f.max_payload_values,
                  "Most values (objects, arrays, strings, numbers, ...) in one point's payload")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  sub->add_option("--max-payload-kb", f.max_payload_kb,
                  "Largest payload of one point, as compact JSON; payloads are held as that text, so memory follows it")
      ->check(CLI::Range(int64_t{1}, int64_t{4194304}))
      ->capture_default_str();
  sub->add_option("--max-response-mb", f.max_response_mb,
                  "Largest answer a read builds (searches with payloads, scroll, retrieve); larger ones get 400")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->capture_default_str();
  sub->add_option("--max-connections", f.max_connections, "Open connections beyond this get 503 at once")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->capture_default_str();
}

// Running it: logs, the access log, and the route list.
void add_operation_options(CLI::App* sub, Flags& f) {
  sub->add_option("--log-level", f.log_level,
                  "What goes to stderr: error, warn, info (start-up, each collection loaded, ready, drain) or debug")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}))
      ->capture_default_str();
  sub->add_option("--access-log", f.access_log,
                  "One JSON line per answered request (time, client, method, target, status, bytes, ms, route) to "
                  "this file, appended, or to stdout with '-' (default: none; docs/API.md shows a line)");
  sub->add_flag("--print-routes", f.print_routes,
                "Print every route served, one 'METHOD /pattern' a line, and exit (docs/openapi.yaml describes each)");
}

void add_environment_variables(CLI::App* sub) {
  // Every setting also from the environment: SIMKIT_ + its name (--max-queue: SIMKIT_MAX_QUEUE);
  // CLI11 shows each in --help. The actions (--help, --print-routes) have none.
  for (CLI::Option* opt : sub->get_options())
    if (!opt->get_lnames().empty() && opt->get_lnames().front() != "help" &&
        opt->get_lnames().front() != "print-routes")
      opt->envname(env_name_for(opt->get_lnames().front()));
}

const char* const kFooter =
    "Examples:\n"
    "  simkit serve --data-dir /var/lib/simkit --port 6333 --device gpu\n"
    "  curl -X PUT localhost:6333/collections/docs -H 'Content-Type: application/json' \\\n"
    "       -d '{\"vectors\": {\"size\": 4, \"distance\": \"Cosine\"}}'\n"
    "  curl -X PUT 'localhost:6333/collections/docs/points?wait=true' \\\n"
    "       -d '{\"points\": [{\"id\": 1, \"vector\": [0.1, 0.2, 0.3, 0.4], \"payload\": {\"lang\": \"en\"}}]}'\n"
    "  curl -X POST localhost:6333/collections/docs/points/search -d '{\"vector\": [0.1, 0.2, 0.3, 0.4], \"limit\": "
    "3}'\n"
    "  SIMKIT_API_KEY=secret simkit serve --config /etc/simkit.yaml --access-log /var/log/simkit/access.log\n"
    "Settings come from the command line, else the environment (SIMKIT_ + the option's name in capitals,\n"
    "'-' as '_': SIMKIT_PORT, SIMKIT_DATA_DIR), else the --config file, else the default. The file is YAML,\n"
    "keyed by the options' names as written here without the dashes; an unknown key or a bad value stops\n"
    "the start with the file, line and key named (exit status 2). For example:\n"
    "  data-dir: /var/lib/simkit\n"
    "  host: 0.0.0.0\n"
    "  port: 6333\n"
    "  max-queue: 1024\n"
    "The server listens at once and then opens its collections: GET /livez is 200 while the process\n"
    "answers, GET /readyz 200 once every collection is open and until a drain begins (503 before and\n"
    "after; collection routes answer 503 with Retry-After while loading).\n"
    "SIGTERM or Ctrl-C drains: in-flight requests are answered, indexes saved, exit status 0.\n"
    "Under mpirun (a build with MPI) one server spreads over the ranks, each holding a share of the points:\n"
    "  mpirun -n 3 simkit serve --data-dir ./sharded   (docs/API.md, \"Sharded over MPI ranks\")";

server::ServeOptions serve_options(const Flags& f) {
  server::ServeOptions s;
  s.data_dir = f.data_dir;
  s.host = f.host;
  s.port = static_cast<uint16_t>(f.port);
  s.api_key = f.api_key;
  // gpu:1, gpu:0,1 and gpu:all as every command takes them; under mpirun a GPU per local rank.
#if defined(SIMKIT_CLI_MPI)
  const Context ctx = launched_by_mpi() ? rank_context(f.run) : make_context(f.run);
#else
  const Context ctx = make_context(f.run);
#endif
  s.device = ctx.device;
  s.gpu_id = ctx.gpu_id;
  s.gpu_ids = ctx.gpu_ids;
  s.threads = f.run.threads;
  s.io_threads = f.io_threads;
  s.limits.max_batch = f.max_batch;
  s.limits.max_delay = std::chrono::microseconds(f.max_delay_us);
  s.limits.max_queue = f.max_queue;
  s.limits.workers = f.batch_workers;
  s.timeout = std::chrono::milliseconds(f.timeout_ms);
  s.max_body_bytes = static_cast<size_t>(f.max_body_mb * 1024 * 1024);
  s.max_connections = f.max_connections;
  s.requests.payload.max_depth = f.max_payload_depth;
  s.requests.payload.max_values = f.max_payload_values;
  s.requests.payload.max_bytes = f.max_payload_kb * 1024;
  s.requests.max_response_bytes = f.max_response_mb << 20;
  s.log_level = server::parse_log_level(f.log_level);
  s.access_log = f.access_log;
  return s;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve collections over HTTP: a Qdrant-shaped REST API (docs/API.md) with durable writes (SQLite WAL), a "
      "dynamic batcher that runs queued searches as one matrix-shaped search, snapshots, Prometheus metrics at "
      "/metrics, API-key auth and load shedding (429 when the queue is full, 504 past a request's deadline).");
  add_place_options(sub, *flags);
  add_batching_options(sub, *flags);
  add_limit_options(sub, *flags);
  add_operation_options(sub, *flags);
  add_environment_variables(sub);
  sub->footer(kFooter);
  // Runs as soon as serve's own arguments and environment are read, before the final callback:
  // the file fills in what neither set. (Setting it also keeps CLI11 from reading SIMKIT_* for
  // serve when another command runs: a stray SIMKIT_PORT must not break `simkit info`.)
  sub->parse_complete_callback([flags, sub] {
    if (!flags->config.empty()) apply_config_file(*sub, flags->config, {"config", "print-routes"});
  });
  sub->callback([flags] {
    if (flags->print_routes) {
      for (const std::string& route : server::Api::route_list()) std::printf("%s\n", route.c_str());
      return;
    }
    if (flags->data_dir.empty())
      throw CLI::RequiredError(
          "--data-dir is required: the folder holding the collections (or SIMKIT_DATA_DIR, or data-dir: in the "
          "--config file)",
          CLI::ExitCodes::RequiredError);
#if defined(SIMKIT_CLI_MPI)
    const int status =
        launched_by_mpi() ? run_serve_mpi(serve_options(*flags)) : server::run_server(serve_options(*flags));
#else
    const int status = server::run_server(serve_options(*flags));
#endif
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace simkit::cli
