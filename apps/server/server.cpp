#include "server.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <simkit/error.hpp>

#include "access_log.hpp"
#include "api.hpp"
#include "data_dir_layout.hpp"
#include "http_server.hpp"
#include "io_pool.hpp"
#include "metrics.hpp"

namespace simkit::server {

namespace asio = boost::asio;

namespace {

using Seconds = std::chrono::duration<double>;

// SIMKIT_TEST_LOAD_DELAY_MS, for tests only (tests/server/test_ops.py): each collection's load
// starts this much later, so that a test can see /readyz answer 503 and send SIGTERM mid-load
// without building a collection large enough to take that long. Not an option, on purpose.
std::chrono::milliseconds test_load_delay() {
  const char* text = std::getenv("SIMKIT_TEST_LOAD_DELAY_MS");
  int64_t ms = 0;
  if (text && *text) {
    const auto [end, ec] = std::from_chars(text, text + std::char_traits<char>::length(text), ms);
    if (ec != std::errc() || *end != '\0' || ms < 0 || ms > 600000)
      throw Error(ErrorCode::invalid_argument,
                  "SIMKIT_TEST_LOAD_DELAY_MS " + simkit::quoted(text) + " must be milliseconds from 0 to 600000");
  }
  return std::chrono::milliseconds(ms);
}

ApiSettings api_settings(const ServeOptions& o, const Context& ctx, const BatcherLimits& batching) {
  ApiSettings settings;
  settings.data_dir = o.data_dir;
  settings.api_key = o.api_key;
  settings.limits = o.requests;
  settings.collection.ctx = ctx;
  settings.collection.limits = batching;
  settings.collection.max_response_bytes = o.requests.max_response_bytes;
  settings.timeout = o.timeout;
  settings.max_pending_writes = o.limits.max_queue;
  settings.load_delay = test_load_delay();
  return settings;
}

std::unique_ptr<HttpServer> listen(const ServeOptions& o, IoPool& pool, Api& api, Metrics& metrics,
                                   AccessLog* access_log) {
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
  if (access_log) limits.answered = [access_log](const Exchange& e) { access_log->record(e); };
  try {
    return std::make_unique<HttpServer>(
        pool, asio::ip::tcp::endpoint(address, o.port), limits,
        [&api](HttpRequest&& r, Responder respond) { api.handle(std::move(r), std::move(respond)); });
  } catch (const boost::system::system_error& e) {
    throw Error(ErrorCode::io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + e.code().message());
  }
}

// The end of the process's life, begun once by the first SIGTERM / SIGINT or by a load that
// failed: the API and the transport drain, the I/O threads return once their connections are
// done, and a watchdog stops them if that outlives drain_timeout.
class Shutdown {
 public:
  Shutdown(IoPool& pool, Api& api, HttpServer& http, std::chrono::seconds timeout)
      : pool_(pool), api_(api), http_(http), timeout_(timeout), signals_(pool.main(), SIGTERM, SIGINT) {
    signals_.async_wait([this](const boost::system::error_code& e, int signal) {
      if (e) return;
      log_line(LogLevel::info, "signal %d: draining (in-flight requests finish, then exit)", signal);
      begin();
    });
  }

  /// From any thread: drains as a signal would (runs on the main I/O thread).
  void request() {
    asio::post(pool_.main(), [this] {
      log_line(LogLevel::info, "draining (in-flight requests finish, then exit)");
      begin();
    });
  }

  /// After IoPool::run() has returned.
  void finish() {
    {
      std::lock_guard g(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

 private:
  void begin() {  // on the main I/O thread
    if (begun_) return;
    begun_ = true;
    signals_.cancel();  // its wait would keep the main context running after the drain
    api_.set_draining();
    http_.drain();
    pool_.release();
    watchdog_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      if (!done_cv_.wait_for(lock, timeout_, [this] { return done_; })) {
        log_line(LogLevel::warn, "drain took over %lld s; stopping", static_cast<long long>(timeout_.count()));
        pool_.stop();
      }
    });
  }

  IoPool& pool_;
  Api& api_;
  HttpServer& http_;
  std::chrono::seconds timeout_;
  asio::signal_set signals_;
  bool begun_ = false;  // main I/O thread only
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread watchdog_;
};

}  // namespace

ApiSettings serve_api_settings(const ServeOptions& o) {
  Context ctx;
  ctx.device = o.device;
  ctx.gpu_id = o.gpu_id;
  ctx.gpu_ids = o.gpu_ids;
  ctx.threads = o.threads;
  ctx.device = resolve_device(ctx);  // decided once: every search and build of this process runs there
  BatcherLimits batching = o.limits;
  if (batching.workers <= 0) batching.workers = 1;
  return api_settings(o, ctx, batching);
}

int run_server(const ServeOptions& o) {
  set_log_level(o.log_level);
  if (!o.shards) check_data_dir_layout(o.data_dir, 1);  // not a sharded server's directory
  ApiSettings settings = serve_api_settings(o);
  const Device device = settings.collection.ctx.device;
  const BatcherLimits batching = settings.collection.limits;

  Metrics metrics;
  if (o.shards) o.shards->configure(settings);
  Api api(std::move(settings), metrics);
  std::unique_ptr<AccessLog> access_log;
  if (!o.access_log.empty()) access_log = std::make_unique<AccessLog>(o.access_log);
  const int io_threads = o.io_threads > 0
                             ? o.io_threads
                             : static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  IoPool pool(io_threads);
  std::unique_ptr<HttpServer> http = listen(o, pool, api, metrics, access_log.get());
  Shutdown shutdown(pool, api, *http, o.drain_timeout);  // SIGTERM drains from here on
  if (o.shards) o.shards->attach(api, [&shutdown] { shutdown.request(); });
  http->start();

  std::printf("listening on http://%s:%u\n", o.host.c_str(), static_cast<unsigned>(http->port()));
  std::fflush(stdout);
  log_line(LogLevel::info, "device %s, batches of up to %lld searches within %lld us, %d at once, queue %lld",
           to_string(device), static_cast<long long>(batching.max_batch),
           static_cast<long long>(batching.max_delay.count()), batching.workers,
           static_cast<long long>(batching.max_queue));
  log_line(LogLevel::debug, "%d I/O threads, up to %lld connections, bodies up to %zu bytes, access log %s", io_threads,
           static_cast<long long>(o.max_connections), o.max_body_bytes,
           o.access_log.empty() ? "off" : o.access_log.c_str());

  // The collections open while the server already answers its probes (api.hpp).
  std::exception_ptr load_error;
  std::thread loader([&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (o.shards) o.shards->wait_ranks_loaded();
      const int64_t n = api.load_collections();
      if (!api.loading())
        log_line(LogLevel::info, "ready: %lld collections loaded in %.2f s", static_cast<long long>(n),
                 Seconds(std::chrono::steady_clock::now() - t0).count());
      else
        log_line(LogLevel::info, "loading stopped by the drain after %lld collections", static_cast<long long>(n));
    } catch (const std::exception& e) {
      log_line(LogLevel::error, "loading the collections failed: %s; stopping", e.what());
      load_error = std::current_exception();
      shutdown.request();
    }
  });

  pool.run();
  shutdown.finish();
  loader.join();  // a collection being opened is opened whole, then closed below
  // Sessions a cut-short drain left in the io_context still point at the server: keep it.
  (void)http.release();
  api.close();  // queued searches run, writes in the pool finish, indexes are saved
  if (o.shards) o.shards->detach();
  access_log.reset();  // every line written
  if (load_error) std::rethrow_exception(load_error);
  log_line(LogLevel::info, "stopped");
  return 0;
}

}  // namespace simkit::server
