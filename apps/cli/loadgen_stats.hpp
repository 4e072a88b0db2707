#pragma once
// The parts of `simkit loadgen` that need no network (loadgen_command.cpp holds the HTTP client):
// the target URL, the send schedule, the pre-serialised requests, one record per scheduled
// request, and the summary of a run with its report on stdout and its --json and --csv files.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit::cli::loadgen {

// ------------------------------------------------------------------ target

/// `http://host[:port][/prefix]`; host may be a name, an IPv4 address or a bracketed IPv6 one.
struct Target {
  std::string host;         // as given, brackets removed (for the resolver)
  std::string port;         // "80" when the URL has none
  std::string prefix;       // path before /collections, no trailing '/' ("" for none)
  std::string host_header;  // the Host header: host[:port] as written in the URL
};

/// Parses --url; anything else than plain http with a host is Error(invalid_argument).
Target parse_url(const std::string& url);

// ------------------------------------------------------------------ schedule

enum class Pattern { constant, poisson, random };

/// "constant", "poisson" or "random"; another name is Error(invalid_argument).
Pattern parse_pattern(const std::string& name);
const char* to_string(Pattern p) noexcept;

struct ScheduleSpec {
  Pattern pattern = Pattern::constant;
  double rate = 0;     // req/s (constant, poisson)
  double min_gap = 0;  // s (random)
  double max_gap = 0;  // s (random)
  double span_s = 0;   // warmup + duration
  uint64_t seed = 0;
};

/// The most requests one run schedules (records, CSV and latencies stay within a few GiB).
inline constexpr int64_t max_requests = 20'000'000;

/// The rate the pattern offers on average, req/s.
double offered_rate(const ScheduleSpec& s);

/// Send times in nanoseconds from the start, ascending, all in [0, span_s): the first at 0, then
/// gaps of 1/rate (constant), exponential with mean 1/rate (poisson) or uniform in
/// [min_gap, max_gap] (random). Refuses a schedule of more than max_requests.
std::vector<int64_t> make_schedule(const ScheduleSpec& s);

/// The query row the seed starts the round-robin at.
int64_t first_query(uint64_t seed, int64_t rows);

// ------------------------------------------------------------------ requests

/// One complete HTTP/1.1 request (`POST {prefix}/collections/{collection}/points/search`, JSON
/// body {"vector":[...],"limit":K}) for each of `count` query rows taken round-robin from
/// `first`; request i of the run is element i % count. A non-finite value is
/// Error(invalid_argument) naming its row.
std::vector<std::string> build_requests(const Target& target, const std::string& collection, const std::string& api_key,
                                        const Matrix<float>& queries, int64_t limit, int64_t first, int64_t count);

// ------------------------------------------------------------------ records

enum class Outcome : uint8_t {
  not_sent,         // never reached its scheduled time (the run was interrupted first)
  dropped,          // no free connection, or --max-in-flight reached, at its scheduled time
  in_flight,        // sent, no answer yet
  response,         // an HTTP response (any status)
  transport_error,  // connect, write or read failed
  timed_out,        // still in flight when the drain timeout ended the run
};

struct Record {
  int64_t scheduled_ns = 0;  // from the start of the run (warmup included)
  int64_t sent_ns = -1;      // when it was handed to a connection; -1 if never
  double latency_ms = 0;     // response (or failure) time minus scheduled time
  int32_t status = 0;        // HTTP status of a response, else 0
  Outcome outcome = Outcome::not_sent;
};

// ------------------------------------------------------------------ server batches

/// A simkit server's simkit_batch_size histogram (Prometheus text format): how many searches
/// each library call ran.
struct BatchHistogram {
  int64_t batches = 0;                              // _count
  double searches = 0;                              // _sum
  std::vector<std::pair<double, int64_t>> buckets;  // (le, cumulative count), ascending; +inf last
};

/// The histogram in a /metrics text; nullopt when it holds none.
std::optional<BatchHistogram> parse_batch_histogram(const std::string& metrics_text);

/// What the server did between two readings: the batches run, their mean size and, per bucket,
/// how many batches had at most `le` searches (cumulative, as Prometheus counts them).
struct ServerBatches {
  int64_t batches = 0;
  double mean_size = 0;
  std::vector<std::pair<double, int64_t>> buckets;
};

/// after - before; nullopt when either is missing or the server restarted between them.
std::optional<ServerBatches> batches_between(const std::optional<BatchHistogram>& before,
                                             const std::optional<BatchHistogram>& after);

// ------------------------------------------------------------------ summary

struct RunInfo {
  std::string url, collection;
  ScheduleSpec schedule;
  double duration_s = 0, warmup_s = 0, drain_s = 0;
  int64_t limit = 0, connections = 0, max_in_flight = 0, queries = 0;
  bool interrupted = false;
  double window_s = 0;  // the measured window: duration_s, or less when interrupted
};

struct Latency {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;  // ms
};

/// Exact statistics of `values` (ms): nearest-rank percentiles of the sorted values (the
/// smallest value with at least p% of the values at or below it). Sorts `values`.
Latency latency_of(std::vector<double>& values);

struct Summary {
  int64_t warmup_requests = 0;  // scheduled in the warmup, not counted below
  int64_t scheduled = 0, sent = 0, dropped = 0, completed = 0, ok = 0, status_429 = 0, status_503 = 0, status_504 = 0,
          other_status = 0, transport_errors = 0, timed_out = 0;
  std::map<int, int64_t> other;                 // status -> count, for statuses other than 200, 503, 504
  double achieved_rate = 0;                     // ok / window_s
  Latency latency;                              // of the 200 responses, from their scheduled time
  Latency send_lag;                             // sent - scheduled, of the sent requests: the generator's own delay
  std::optional<ServerBatches> server_batches;  // from the server's /metrics, when it could be read
};

/// Counts the requests scheduled at or after the warmup.
Summary summarize(const std::vector<Record>& records, const RunInfo& info);

/// The human-readable report (stdout).
std::string format_report(const Summary& s, const RunInfo& info);

/// The summary as one JSON object (--json).
std::string json_document(const Summary& s, const RunInfo& info);

/// Writes one row per record, warmup included, atomically: scheduled_s,sent_s,latency_ms,status.
void write_csv(const std::string& path, const std::vector<Record>& records);

}  // namespace simkit::cli::loadgen
