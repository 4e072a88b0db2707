#include "server.hpp"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <simkit/error.hpp>

#include "api.hpp"
#include "http_server.hpp"
#include "io_pool.hpp"
#include "metrics.hpp"

namespace simkit::server {

namespace asio = boost::asio;

int run_server(const ServeOptions& o) {
  Context ctx;
  ctx.device = o.device;
  ctx.threads = o.threads;
  const Device device = resolve_device(ctx);
  ctx.device = device;  // decided once: every search and build of this process runs there
  BatcherLimits batching = o.limits;
  if (batching.workers <= 0) batching.workers = 1;

  Metrics metrics;
  ApiSettings settings;
  settings.data_dir = o.data_dir;
  settings.api_key = o.api_key;
  settings.limits = o.requests;
  settings.collection.ctx = ctx;
  settings.collection.limits = batching;
  settings.collection.max_response_bytes = o.requests.max_response_bytes;
  settings.timeout = o.timeout;
  settings.max_pending_writes = o.limits.max_queue;
  Api api(settings, metrics);

  const int io_threads = o.io_threads > 0
                             ? o.io_threads
                             : static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  IoPool pool(io_threads);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(o.host, ec);
  if (ec) throw Error(ErrorCode::invalid_argument, "--host " + simkit::quoted(o.host) + " is not an IP address");
  HttpLimits limits;
  limits.max_body_bytes = o.max_body_bytes;
  limits.max_connections = o.max_connections;
  limits.refused = [&metrics](unsigned status) {
    if (status == 503) metrics.rejected("connections");
    metrics.request("refused before routing", status, 0);
  };
  std::unique_ptr<HttpServer> http;
  try {
    http = std::make_unique<HttpServer>(
        pool, asio::ip::tcp::endpoint(address, o.port), limits,
        [&api](HttpRequest&& r, Responder respond) { api.handle(std::move(r), std::move(respond)); });
  } catch (const boost::system::system_error& e) {
    throw Error(ErrorCode::io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + e.code().message());
  }
  http->start();

  // Drain on the first SIGTERM / SIGINT; a watchdog ends a drain that outlives drain_timeout.
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog;
  asio::signal_set signals(pool.main(), SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& e, int signal) {
    if (e) return;
    std::fprintf(stderr, "simkit serve: signal %d: draining (in-flight requests finish, then exit)\n", signal);
    api.set_draining();
    http->drain();
    pool.release();
    watchdog = std::thread([&] {
      std::unique_lock lock(done_mutex);
      if (!done_cv.wait_for(lock, o.drain_timeout, [&] { return done; })) {
        std::fprintf(stderr, "simkit serve: drain took over %lld s; stopping\n",
                     static_cast<long long>(o.drain_timeout.count()));
        pool.stop();
      }
    });
  });

  std::printf("listening on http://%s:%u\n", o.host.c_str(), static_cast<unsigned>(http->port()));
  std::fflush(stdout);
  std::fprintf(
      stderr, "simkit serve: device %s, batches of up to %lld searches within %lld us, %d at once, queue %lld\n",
      to_string(device), static_cast<long long>(batching.max_batch), static_cast<long long>(batching.max_delay.count()),
      batching.workers, static_cast<long long>(batching.max_queue));

  pool.run();
  {
    std::lock_guard g(done_mutex);
    done = true;
  }
  done_cv.notify_all();
  if (watchdog.joinable()) watchdog.join();
  // Sessions a cut-short drain left in the io_context still point at the server: keep it.
  (void)http.release();
  api.close();  // queued searches run, writes in the pool finish, indexes are saved
  std::fprintf(stderr, "simkit serve: stopped\n");
  return 0;
}

}  // namespace simkit::server
