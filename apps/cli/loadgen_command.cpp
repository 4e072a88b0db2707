// `simkit loadgen --url http://HOST:PORT --collection NAME --queries Q --rate R --duration S`: an
// open-loop HTTP load generator for a server's search route (Qdrant-shaped REST:
// POST /collections/NAME/points/search). The send times are fixed before the run from the
// pattern; a request whose time comes while every connection is busy (or the in-flight cap is
// reached) is dropped and counted, never sent late; and each latency runs from the request's
// scheduled time, so queueing in the server (or in the generator) is not hidden (coordinated
// omission). One thread runs one Boost.Asio io_context: a pool of HTTP/1.1 keep-alive
// connections, each with at most one request at a time, the request bytes prepared up front.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"
#include "commands.hpp"
#include "embedded_python.hpp"
#include "loadgen_plot.hpp"
#include "loadgen_server.hpp"
#include "loadgen_stats.hpp"

namespace simkit::cli {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
using namespace loadgen;

struct LoadgenOptions {
  std::string url, collection, api_key, queries, pattern = "constant", csv, json, plot;
  int64_t limit = 10;
  double rate = std::numeric_limits<double>::quiet_NaN(), duration = 0, warmup = 0, drain = 10, min_gap = -1,
         max_gap = -1;
  int64_t connections = 64, max_in_flight = 0;
  uint64_t seed = 0;
};

constexpr std::chrono::seconds setup_timeout{10};      // connecting the pool
constexpr std::chrono::milliseconds retry_delay{100};  // between failed background reconnects
constexpr uint64_t body_limit = 64ull << 20;

Clock::duration ns(int64_t v) { return std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(v)); }

std::string describe(const error_code& ec) { return ec.message(); }

// One keep-alive connection. While connected it always has a response read pending (on the
// parser of the next response): a response completes the request in flight, and a close by the
// server while the connection is idle is seen at once and the connection reconnected in the
// background, rather than failing the next request sent on it.
struct Connection {
  explicit Connection(asio::io_context& ioc, int index) : socket(ioc), retry(ioc), index(index) {}
  tcp::socket socket;
  asio::steady_timer retry;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::string_body>> parser;
  int index;
  uint64_t generation = 0;  // bumped on every close: handlers of older operations do nothing
  bool open = false;        // connected
  bool connecting = false;
  bool down = false;     // the last background connect failed; a retry is timed
  bool writing = false;  // a request write not yet completed
  int64_t request = -1;  // the request in flight on it
};

class LoadRun {
 public:
  LoadRun(asio::io_context& ioc, tcp::resolver::results_type endpoints, const std::vector<std::string>& requests,
          std::vector<Record>& records, const LoadgenOptions& o)
      : ioc_(ioc),
        endpoints_(std::move(endpoints)),
        requests_(requests),
        records_(records),
        n_(int64_t(records.size())),
        max_in_flight_(o.max_in_flight),
        span_ns_(std::llround((o.warmup + o.duration) * 1e9)),
        drain_(ns(std::llround(o.drain * 1e9))),
        schedule_timer_(ioc),
        drain_timer_(ioc),
        progress_timer_(ioc),
        signals_(ioc) {
    connections_.reserve(size_t(o.connections));
    for (int i = 0; i < int(o.connections); ++i) connections_.push_back(std::make_unique<Connection>(ioc, i));
  }

  // Connects the whole pool before the clock starts; refuses to go on when none connects.
  void connect_pool(const std::string& where) {
    int pending = int(connections_.size()), connected = 0;
    error_code last;
    for (auto& cp : connections_) {
      Connection& c = *cp;
      asio::async_connect(c.socket, endpoints_, [&, &c = c](error_code ec, const tcp::endpoint&) {
        --pending;
        if (ec) {
          last = ec;
          close(c);
          set_down(c, true);  // used on demand (connect, then send) if the run needs it
        } else {
          opened(c);
          ++connected;
        }
      });
    }
    ioc_.restart();
    ioc_.run_for(setup_timeout);
    if (pending > 0) {
      for (auto& c : connections_)
        if (!c->open) close(*c);
      ioc_.restart();
      ioc_.poll();
      if (connected == 0) throw Error(ErrorCode::io, "cannot connect to " + where + ": timed out");
    }
    if (connected == 0) throw Error(ErrorCode::io, "cannot connect to " + where + ": " + describe(last));
    if (connected < int(connections_.size()))
      std::fprintf(stderr, "simkit loadgen: %d of %d connections failed to open (%s); they retry when needed\n",
                   int(connections_.size()) - connected, int(connections_.size()), describe(last).c_str());
    for (auto& c : connections_)
      if (c->open) start_read(*c);
  }

  // Runs the schedule to its end (plus the drain). Returns whether it was interrupted.
  bool run(ProgressBar& bar) {
    bar_ = &bar;
    for (auto it = connections_.rbegin(); it != connections_.rend(); ++it)
      if ((*it)->open) idle_.push_back((*it)->index);
    error_code ignored;
    signals_.add(SIGINT, ignored);
    signals_.add(SIGTERM, ignored);
    signals_.async_wait([this](error_code ec, int) { on_signal(ec); });
    t0_ = Clock::now();
    end_of_schedule_ = t0_ + ns(span_ns_);
    arm_schedule();
    arm_progress();
    ioc_.restart();
    ioc_.run();
    return interrupted_;
  }

  // The window the counted requests were scheduled in ends here (seconds from the start).
  double stopped_at_s() const { return std::chrono::duration<double>(stop_ - t0_).count(); }

 private:
  // ---------------------------------------------------------------- schedule

  void arm_schedule() {
    if (next_ < n_) {
      schedule_timer_.expires_at(t0_ + ns(records_[size_t(next_)].scheduled_ns));
      schedule_timer_.async_wait([this](error_code ec) {
        if (ec || finished_) return;
        const Clock::time_point now = Clock::now();
        const int64_t now_ns = since_start(now);
        while (next_ < n_ && records_[size_t(next_)].scheduled_ns <= now_ns) dispatch(next_++, now_ns);
        arm_schedule();
      });
      return;
    }
    // Everything is sent (or dropped): wait for the answers until the drain timeout.
    if (!draining_) {
      draining_ = true;
      if (!interrupted_) stop_ = end_of_schedule_;
      drain_timer_.expires_at(std::max(stop_, Clock::now()) + drain_);
      drain_timer_.async_wait([this](error_code ec) {
        if (!ec) finish();
      });
    }
    check_done();
  }

  int64_t since_start(Clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0_).count();
  }

  void dispatch(int64_t i, int64_t now_ns) {
    Record& r = records_[size_t(i)];
    Connection* c = in_flight_ < max_in_flight_ ? take_connection() : nullptr;
    if (!c) {
      r.outcome = Outcome::dropped;
      ++dropped_;
      return;
    }
    r.sent_ns = now_ns;
    r.outcome = Outcome::in_flight;
    ++in_flight_;
    c->request = i;
    if (c->open) {
      start_write(*c);
    } else {  // a connection whose background reconnect failed: connect for this request
      set_down(*c, false);
      ++c->generation;  // its retry timer does nothing now
      c->retry.cancel();
      start_connect(*c);
    }
  }

  // An idle connection, else one that is down (it connects for the request), else none.
  Connection* take_connection() {
    while (!idle_.empty()) {
      Connection& c = *connections_[size_t(idle_.back())];
      idle_.pop_back();
      if (c.open && c.request < 0 && !c.writing) return &c;  // else a stale entry
    }
    if (down_ > 0)
      for (auto& c : connections_)
        if (c->down) return c.get();
    return nullptr;
  }

  // ---------------------------------------------------------------- connections

  void set_down(Connection& c, bool down) {
    down_ += int64_t(down) - int64_t(c.down);
    c.down = down;
  }

  void close(Connection& c) {
    error_code ignored;
    c.socket.shutdown(tcp::socket::shutdown_both, ignored);
    c.socket.close(ignored);
    ++c.generation;
    c.open = c.connecting = c.writing = false;
    c.buffer.clear();
    c.parser.reset();
  }

  void opened(Connection& c) {
    error_code ignored;
    c.socket.set_option(tcp::no_delay(true), ignored);
    c.open = true;
    c.connecting = false;
    set_down(c, false);
  }

  void start_connect(Connection& c) {
    c.connecting = true;
    asio::async_connect(c.socket, endpoints_, [this, &c, gen = c.generation](error_code ec, const tcp::endpoint&) {
      on_connect(c, gen, ec);
    });
  }

  void on_connect(Connection& c, uint64_t gen, error_code ec) {
    if (finished_ || gen != c.generation) return;
    c.connecting = false;
    if (ec) {
      close(c);
      if (c.request >= 0) fail(c, Outcome::transport_error);
      set_down(c, true);
      c.retry.expires_after(retry_delay);
      c.retry.async_wait([this, &c, gen = c.generation](error_code e) {
        if (e || finished_ || gen != c.generation || !c.down) return;
        set_down(c, false);
        start_connect(c);
      });
      check_done();
      return;
    }
    opened(c);
    start_read(c);
    if (c.request >= 0)
      start_write(c);
    else
      idle_.push_back(c.index);
  }

  void start_read(Connection& c) {
    c.parser.emplace();
    c.parser->body_limit(body_limit);
    http::async_read(c.socket, c.buffer, *c.parser,
                     [this, &c, gen = c.generation](error_code ec, size_t) { on_read(c, gen, ec); });
  }

  void start_write(Connection& c) {
    c.writing = true;
    const std::string& bytes = requests_[size_t(c.request % int64_t(requests_.size()))];
    asio::async_write(c.socket, asio::buffer(bytes),
                      [this, &c, gen = c.generation](error_code ec, size_t) { on_write(c, gen, ec); });
  }

  void on_write(Connection& c, uint64_t gen, error_code ec) {
    if (finished_ || gen != c.generation) return;
    c.writing = false;
    if (ec) return failed(c);
    if (c.request < 0) idle_.push_back(c.index);  // the response came first
  }

  void on_read(Connection& c, uint64_t gen, error_code ec) {
    if (finished_ || gen != c.generation) return;
    if (ec) return failed(c);
    const auto& res = c.parser->get();
    const bool keep_alive = c.parser->keep_alive();
    if (c.request >= 0) {
      Record& r = records_[size_t(c.request)];
      r.outcome = Outcome::response;
      r.status = int32_t(res.result_int());
      r.latency_ms = double(since_start(Clock::now()) - r.scheduled_ns) / 1e6;
      c.request = -1;
      --in_flight_;
    }  // else an unsolicited response (a 408 before a close, say): nothing to count
    if (!keep_alive) {
      close(c);
      start_connect(c);
    } else {
      start_read(c);
      if (!c.writing) idle_.push_back(c.index);
    }
    check_done();
  }

  // A connect, write or read failed: the request in flight (if any) is a transport error (not
  // sent again: a server that closes a connection on a request shows as such), and the connection
  // reconnects in the background.
  void failed(Connection& c) {
    close(c);
    if (c.request >= 0) fail(c, Outcome::transport_error);
    start_connect(c);
    check_done();
  }

  void fail(Connection& c, Outcome why) {
    Record& r = records_[size_t(c.request)];
    r.outcome = why;
    r.latency_ms = double(since_start(Clock::now()) - r.scheduled_ns) / 1e6;
    c.request = -1;
    --in_flight_;
  }

  // ---------------------------------------------------------------- end

  void check_done() {
    if (draining_ && next_ >= n_ && in_flight_ == 0) finish();
  }

  // Stops everything: what is still in flight timed out; every pending operation is cancelled
  // and its handler returns at once, so io_context::run() returns.
  void finish() {
    if (finished_) return;
    finished_ = true;
    for (auto& c : connections_) {
      if (c->request >= 0) records_[size_t(c->request)].outcome = Outcome::timed_out;
      close(*c);
      c->retry.cancel();
    }
    schedule_timer_.cancel();
    drain_timer_.cancel();
    progress_timer_.cancel();
    error_code ignored;
    signals_.cancel(ignored);
    signals_.clear(ignored);
    if (bar_) bar_->finish();
  }

  // The first Ctrl-C (or SIGTERM) ends the schedule now and drains; a second one stops at once.
  void on_signal(error_code ec) {
    if (ec || finished_) return;
    if (interrupted_) return finish();
    interrupted_ = true;
    stop_ = std::min(Clock::now(), end_of_schedule_);
    if (bar_) bar_->finish();
    std::fprintf(stderr, "simkit loadgen: interrupted; draining %lld in flight (again to stop now)\n",
                 (long long)in_flight_);
    n_ = next_;  // the rest stays not_sent
    schedule_timer_.cancel();
    signals_.async_wait([this](error_code e, int) { on_signal(e); });
    arm_schedule();
  }

  void arm_progress() {
    if (!bar_ || !bar_->enabled()) return;
    progress_timer_.expires_after(std::chrono::milliseconds(200));
    progress_timer_.async_wait([this](error_code ec) {
      if (ec || finished_) return;
      const double elapsed = double(since_start(Clock::now()));
      const std::string note = with_commas(next_) + " scheduled, " + with_commas(dropped_) + " dropped, " +
                               with_commas(in_flight_) + " in flight";
      bar_->update(std::min(1.0, elapsed / double(std::max<int64_t>(span_ns_, 1))), note);
      arm_progress();
    });
  }

  asio::io_context& ioc_;
  tcp::resolver::results_type endpoints_;
  const std::vector<std::string>& requests_;
  std::vector<Record>& records_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<int> idle_;  // indices of idle connections (stale entries are skipped)
  int64_t n_;              // requests to schedule
  int64_t next_ = 0;       // the next one to dispatch
  int64_t in_flight_ = 0;
  int64_t dropped_ = 0;
  int64_t down_ = 0;  // connections down
  int64_t max_in_flight_;
  int64_t span_ns_;
  Clock::duration drain_;
  Clock::time_point t0_, end_of_schedule_, stop_;
  bool draining_ = false, finished_ = false, interrupted_ = false;
  asio::steady_timer schedule_timer_, drain_timer_, progress_timer_;
  asio::signal_set signals_;
  ProgressBar* bar_ = nullptr;
};

// Each connection holds a descriptor: raise the soft limit when the pool needs more.
void ensure_descriptors(int64_t connections) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  const rlim_t need = rlim_t(connections) + 64;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need)
      bad("--connections " + std::to_string(connections) + " needs " + std::to_string(need) +
          " file descriptors; the limit is " + std::to_string(lim.rlim_max) + " (ulimit -n)");
    lim.rlim_cur = need;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

void write_text(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::io, "cannot open " + quoted_path(tmp) + " for writing");
    f << text;
    f.flush();
    if (!f) throw Error(ErrorCode::io, "could not write " + quoted_path(tmp));
  });
}

void run_loadgen(LoadgenOptions o) {
  // Everything that needs neither a file nor the network first.
  const Target target = parse_url(o.url);
  if (o.api_key.find_first_of("\r\n") != std::string::npos) bad("--api-key must not hold a line break");
  if (o.limit < 1) bad("--limit must be at least 1, got " + std::to_string(o.limit));
  if (!(std::isfinite(o.duration) && o.duration > 0)) bad("--duration must be > 0 seconds, got " + number(o.duration));
  if (!(std::isfinite(o.warmup) && o.warmup >= 0)) bad("--warmup must be >= 0 seconds, got " + number(o.warmup));
  if (!(std::isfinite(o.drain) && o.drain >= 0)) bad("--drain must be >= 0 seconds, got " + number(o.drain));
  if (o.connections < 1 || o.connections > 100000)
    bad("--connections must be in 1..100000, got " + std::to_string(o.connections));
  if (o.max_in_flight == 0) o.max_in_flight = o.connections;
  if (o.max_in_flight < 1) bad("--max-in-flight must be at least 1, got " + std::to_string(o.max_in_flight));
  if (o.max_in_flight > o.connections)
    bad("--max-in-flight " + std::to_string(o.max_in_flight) + " exceeds --connections " +
        std::to_string(o.connections) + " (one request per connection at a time)");

  ScheduleSpec spec;
  spec.pattern = parse_pattern(o.pattern);
  spec.span_s = o.warmup + o.duration;
  spec.seed = o.seed;
  const bool gaps_given = o.min_gap >= 0 || o.max_gap >= 0;
  if (spec.pattern == Pattern::random) {
    if (!std::isnan(o.rate)) bad("--rate does not apply to --pattern random (it takes --min-gap and --max-gap)");
    if (o.min_gap < 0 || o.max_gap < 0) bad("--pattern random needs --min-gap and --max-gap (seconds, >= 0)");
    if (!(std::isfinite(o.max_gap) && o.max_gap > 0 && o.min_gap <= o.max_gap))
      bad("--min-gap " + number(o.min_gap) + " and --max-gap " + number(o.max_gap) +
          " must satisfy 0 <= min <= max, max > 0");
    spec.min_gap = o.min_gap;
    spec.max_gap = o.max_gap;
  } else {
    if (gaps_given) bad("--min-gap and --max-gap apply only to --pattern random");
    if (std::isnan(o.rate)) bad("--pattern " + o.pattern + " needs --rate (requests per second)");
    if (!(std::isfinite(o.rate) && o.rate > 0)) bad("--rate must be > 0 requests per second, got " + number(o.rate));
    spec.rate = o.rate;
  }
  if (!o.csv.empty()) check_output_path(o.csv, "--csv", {});
  if (!o.json.empty()) check_output_path(o.json, "--json", {});
  if (!o.plot.empty()) {
    check_output_path(o.plot, "--plot", {});
    check_plotting();
  }
  check_distinct_outputs({{"--csv", o.csv}, {"--json", o.json}, {"--plot", o.plot}});
  ensure_descriptors(o.connections);

  const std::vector<int64_t> at = make_schedule(spec);
  if (at.empty()) bad("the schedule holds no request");
  const Matrix<float> Q = read_points(o.queries, "--queries");
  const int64_t first = first_query(o.seed, Q.rows());
  const int64_t distinct = std::min<int64_t>(Q.rows(), int64_t(at.size()));

  const std::string where = target.host_header;
  asio::io_context ioc(1);
  tcp::resolver::results_type endpoints;
  {
    tcp::resolver resolver(ioc);
    error_code ec;
    endpoints = resolver.resolve(target.host, target.port, ec);
    if (ec) throw Error(ErrorCode::io, "cannot resolve " + simkit::quoted(target.host) + ": " + describe(ec));
  }
  if (o.collection.empty()) o.collection = only_collection(ioc, endpoints, target, o.api_key);
  const std::vector<std::string> requests =
      build_requests(target, o.collection, o.api_key, Q, o.limit, first, distinct);
  std::vector<Record> records(at.size());
  for (size_t i = 0; i < at.size(); ++i) records[i].scheduled_ns = at[i];
  probe(ioc, endpoints, requests.front(), where);
  const std::optional<BatchHistogram> batches_before = read_batch_histogram(ioc, endpoints, target, o.api_key);

  RunInfo info;
  info.url = o.url;
  info.collection = o.collection;
  info.schedule = spec;
  info.duration_s = o.duration;
  info.warmup_s = o.warmup;
  info.drain_s = o.drain;
  info.limit = o.limit;
  info.connections = o.connections;
  info.max_in_flight = o.max_in_flight;
  info.queries = Q.rows();
  info.window_s = o.duration;
  {
    ProgressBar bar("loadgen");
    LoadRun run(ioc, endpoints, requests, records, o);
    run.connect_pool(where);
    info.interrupted = run.run(bar);
    if (info.interrupted) info.window_s = std::max(0.0, std::min(o.duration, run.stopped_at_s() - o.warmup));
  }

  Summary s = summarize(records, info);
  s.server_batches = batches_between(batches_before, read_batch_histogram(ioc, endpoints, target, o.api_key));
  std::fputs(format_report(s, info).c_str(), stdout);
  if (!o.csv.empty()) {
    write_csv(o.csv, records);
    std::printf("wrote %s (one row per request, the warmup's included)\n", o.csv.c_str());
  }
  if (!o.json.empty()) {
    write_text(o.json, json_document(s, info));
    std::printf("wrote %s\n", o.json.c_str());
  }
  if (!o.plot.empty()) {
    // The plot reads the per-request CSV: --csv's, or a temporary one beside the image.
    const std::string csv = o.csv.empty() ? o.plot + ".requests.csv" : o.csv;
    if (o.csv.empty()) write_csv(csv, records);
    const std::string title = std::string(to_string(spec.pattern)) + " arrivals, " + number(offered_rate(spec)) +
                              " req/s offered, " + target.host_header;
    try {
      plot_latency(csv, o.plot, o.warmup, title);
    } catch (...) {
      if (o.csv.empty()) std::remove(csv.c_str());
      throw;
    }
    if (o.csv.empty()) std::remove(csv.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void add_loadgen_command(CLI::App& app) {
  auto o = std::make_shared<LoadgenOptions>();
  auto* sub = app.add_subcommand(
      "loadgen",
      "Open-loop HTTP load on a server's search route (POST /collections/NAME/points/search): requests at "
      "scheduled times, latency from the scheduled time, late requests dropped and counted");
  sub->add_option("--url", o->url, "the server, http://HOST:PORT (plain http; an optional path prefix)")->required();
  sub->add_option("--collection", o->collection, "the collection to search (default: the server's only one)");
  sub->add_option("--api-key", o->api_key, "sent as the api-key header")->envname("SIMKIT_API_KEY");
  sub->add_option("--queries", o->queries,
                  "query vectors (m x d): .npy (float32, float16), .fvecs, ...; used round-robin")
      ->required();
  sub->add_option("--limit", o->limit, "results per search (the body's \"limit\")")->capture_default_str();
  sub->add_option("--pattern", o->pattern,
                  "send times: constant (every 1/rate s), poisson (exponential gaps, mean 1/rate) or random "
                  "(uniform gaps in [--min-gap, --max-gap])")
      ->capture_default_str();
  sub->add_option("--rate", o->rate, "requests per second (constant, poisson)");
  sub->add_option("--min-gap", o->min_gap, "smallest gap between sends, seconds (random)");
  sub->add_option("--max-gap", o->max_gap, "largest gap between sends, seconds (random)");
  sub->add_option("--duration", o->duration, "measured seconds of sending, after the warmup")->required();
  sub->add_option("--warmup", o->warmup, "seconds of sending first, not counted")->capture_default_str();
  sub->add_option("--drain", o->drain,
                  "seconds to wait for answers after the end of the schedule; what is still open then timed out")
      ->capture_default_str();
  sub->add_option("--connections", o->connections, "keep-alive connections in the pool, one request each at a time")
      ->capture_default_str();
  sub->add_option("--max-in-flight", o->max_in_flight, "cap on requests in flight (default: --connections)");
  sub->add_option("--seed", o->seed, "seed of the poisson / random gaps and of the first query")->capture_default_str();
  sub->add_option("--csv", o->csv,
                  "one row per request: scheduled_s,sent_s,latency_ms,status (seconds from the start, warmup "
                  "included; status 0: dropped, transport error or timed out; empty: not applicable)");
  sub->add_option("--json", o->json, "the summary as JSON");
  sub->add_option("--plot", o->plot,
                  "a histogram of the run's latencies (.png, .svg or .pdf) with p50 and p99 marked; needs python3 "
                  "with matplotlib");
  sub->footer(
      "Example:\n"
      "  simkit loadgen --url http://127.0.0.1:6333 --collection docs --queries q.npy --limit 10 \\\n"
      "                 --pattern poisson --rate 2000 --duration 30 --warmup 5 --json run.json --csv run.csv\n"
      "Each request is due at its scheduled time; one due while every connection is busy (or --max-in-flight\n"
      "are in flight) is dropped, not sent late. Latency runs from the scheduled time, so a stalled server\n"
      "shows in every request due during the stall. Percentiles are exact, over the 200 responses.\n"
      "When the server's /metrics is readable (a simkit server), the report adds the batch sizes it ran.\n"
      "Ctrl-C ends the schedule early and drains; a second Ctrl-C stops at once.");
  sub->callback([o] { run_loadgen(*o); });
}

}  // namespace simkit::cli
