#include "loadgen_stats.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"

namespace simkit::cli::loadgen {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool unreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

// A path segment, percent-encoded (RFC 3986).
std::string encode_segment(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (unreserved(c)) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// A number for JSON: finite values with up to 6 decimals, trailing zeros dropped.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// 64-bit finaliser (splitmix64) for the seed's query offset, so that it does not follow the
// schedule's draws.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

// ------------------------------------------------------------------ target

Target parse_url(const std::string& url) {
  const std::string scheme_end = "://";
  const size_t colon = url.find(scheme_end);
  if (colon == std::string::npos) bad("--url " + simkit::quoted(url) + " has no scheme; expected http://HOST:PORT");
  const std::string scheme = lower(url.substr(0, colon));
  if (scheme == "https") bad("--url " + simkit::quoted(url) + ": https is not supported, only plain http://HOST:PORT");
  if (scheme != "http")
    bad("--url " + simkit::quoted(url) + ": scheme " + simkit::quoted(scheme) +
        " is not supported, expected http://HOST:PORT");
  std::string rest = url.substr(colon + scheme_end.size());
  const size_t path_at = rest.find_first_of("/?#");
  std::string authority = rest.substr(0, path_at);
  std::string path = path_at == std::string::npos ? "" : rest.substr(path_at);
  if (path.find_first_of("?#") != std::string::npos)
    bad("--url " + simkit::quoted(url) + ": a query or fragment is not allowed (expected http://HOST:PORT[/PREFIX])");
  if (authority.find('@') != std::string::npos)
    bad("--url " + simkit::quoted(url) + ": user information is not supported");
  if (authority.empty()) bad("--url " + simkit::quoted(url) + " has no host");

  Target t;
  std::string port;
  if (authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) bad("--url " + simkit::quoted(url) + ": unterminated '[' in the host");
    t.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        bad("--url " + simkit::quoted(url) + ": unexpected " + simkit::quoted(after) + " after the host");
      port = after.substr(1);
      if (port.empty()) bad("--url " + simkit::quoted(url) + ": empty port");
    }
  } else {
    const size_t c = authority.rfind(':');
    t.host = authority.substr(0, c);
    if (c != std::string::npos) {
      port = authority.substr(c + 1);
      if (port.empty()) bad("--url " + simkit::quoted(url) + ": empty port");
    }
    if (t.host.find(':') != std::string::npos)
      bad("--url " + simkit::quoted(url) + ": an IPv6 address must be in brackets, as in http://[::1]:8080");
  }
  if (t.host.empty()) bad("--url " + simkit::quoted(url) + " has no host");
  if (!port.empty()) {
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)
      bad("--url " + simkit::quoted(url) + ": port " + simkit::quoted(port) + " is not a number in 1..65535");
    t.port = std::to_string(value);
  } else {
    t.port = "80";
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  t.prefix = path;
  t.host_header = authority;
  return t;
}

// ------------------------------------------------------------------ schedule

Pattern parse_pattern(const std::string& name) {
  if (name == "constant") return Pattern::constant;
  if (name == "poisson") return Pattern::poisson;
  if (name == "random") return Pattern::random;
  bad("unknown --pattern " + simkit::quoted(name) + " (expected constant, poisson or random)");
}

const char* to_string(Pattern p) noexcept {
  switch (p) {
    case Pattern::constant: return "constant";
    case Pattern::poisson: return "poisson";
    case Pattern::random: return "random";
  }
  return "?";
}

double offered_rate(const ScheduleSpec& s) {
  return s.pattern == Pattern::random ? 2.0 / (s.min_gap + s.max_gap) : s.rate;
}

std::vector<int64_t> make_schedule(const ScheduleSpec& s) {
  const double expected = s.span_s * offered_rate(s);
  const auto too_many = [&] {
    bad("the schedule holds more than " + with_commas(max_requests) + " requests (" + number(offered_rate(s)) +
        " req/s for " + number(s.span_s) + " s); lower the rate or the duration");
  };
  if (!(expected <= double(max_requests))) too_many();
  std::vector<int64_t> at;
  at.reserve(size_t(expected * 1.05) + 16);
  std::mt19937_64 rng(s.seed);
  std::exponential_distribution<double> exponential(s.pattern == Pattern::poisson ? s.rate : 1.0);
  std::uniform_real_distribution<double> uniform(s.min_gap, s.max_gap);
  double t = 0;
  for (int64_t i = 0;; ++i) {
    if (s.pattern == Pattern::constant) t = double(i) / s.rate;  // no accumulated rounding
    if (!(t < s.span_s)) break;
    if (int64_t(at.size()) == max_requests) too_many();
    at.push_back(std::llround(t * 1e9));
    if (s.pattern == Pattern::poisson) t += exponential(rng);
    if (s.pattern == Pattern::random) t += uniform(rng);
  }
  return at;
}

int64_t first_query(uint64_t seed, int64_t rows) { return int64_t(mix(seed) % uint64_t(rows)); }

// ------------------------------------------------------------------ requests

std::vector<std::string> build_requests(const Target& target, const std::string& collection, const std::string& api_key,
                                        const Matrix<float>& queries, int64_t limit, int64_t first, int64_t count) {
  std::string head = "POST " + target.prefix + "/collections/" + encode_segment(collection) +
                     "/points/search HTTP/1.1\r\n"
                     "Host: " +
                     target.host_header +
                     "\r\n"
                     "User-Agent: simkit-loadgen\r\n"
                     "Accept: application/json\r\n"
                     "Content-Type: application/json\r\n";
  if (!api_key.empty()) head += "api-key: " + api_key + "\r\n";
  const std::string tail = "],\"limit\":" + std::to_string(limit) + "}";

  std::vector<std::string> out;
  out.reserve(size_t(count));
  std::string body;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t row = (first + j) % queries.rows();
    const float* v = queries.data() + row * queries.cols();
    body = "{\"vector\":[";
    for (int64_t c = 0; c < queries.cols(); ++c) {
      if (!std::isfinite(v[c]))
        bad("--queries: row " + std::to_string(row) + " holds a non-finite value (JSON cannot carry it)");
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v[c]);  // shortest round-trip form
      if (c) body += ',';
      body.append(buf, r.ptr);
    }
    body += tail;
    out.push_back(head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  return out;
}

// ------------------------------------------------------------------ server batches

std::optional<BatchHistogram> parse_batch_histogram(const std::string& text) {
  const std::string name = "simkit_batch_size";
  BatchHistogram h;
  bool have_count = false, have_sum = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.rfind(name, 0) != 0) continue;
    const std::string_view rest = line.substr(name.size());
    const size_t space = rest.rfind(' ');
    if (space == std::string_view::npos) continue;
    const std::string value(rest.substr(space + 1));
    const std::string_view key = rest.substr(0, space);
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    if (stop == value.c_str()) continue;
    if (key == "_count") {
      h.batches = int64_t(std::llround(v)), have_count = true;
    } else if (key == "_sum") {
      h.searches = v, have_sum = true;
    } else if (constexpr std::string_view open = "_bucket{le=\""; key.rfind(open, 0) == 0) {
      const std::string le(key.substr(open.size(), key.find('"', open.size()) - open.size()));
      const double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr);
      h.buckets.emplace_back(bound, int64_t(std::llround(v)));
    }
  }
  if (!have_count || !have_sum) return std::nullopt;
  std::sort(h.buckets.begin(), h.buckets.end());
  return h;
}

std::optional<ServerBatches> batches_between(const std::optional<BatchHistogram>& before,
                                             const std::optional<BatchHistogram>& after) {
  if (!before || !after || after->batches < before->batches || after->buckets.size() != before->buckets.size())
    return std::nullopt;
  ServerBatches b;
  b.batches = after->batches - before->batches;
  b.mean_size = b.batches ? (after->searches - before->searches) / double(b.batches) : 0;
  for (size_t i = 0; i < after->buckets.size(); ++i)
    b.buckets.emplace_back(after->buckets[i].first, after->buckets[i].second - before->buckets[i].second);
  return b;
}

// ------------------------------------------------------------------ summary

Latency latency_of(std::vector<double>& values) {
  Latency l;
  l.count = int64_t(values.size());
  if (values.empty()) return l;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  l.mean = sum / double(values.size());
  // Nearest rank in per-mille, in integers: the ceil(p * n)-th smallest value.
  const auto at = [&](int64_t per_mille) {
    const int64_t n = int64_t(values.size());
    const int64_t rank = (per_mille * n + 999) / 1000;
    return values[size_t(std::clamp<int64_t>(rank, 1, n) - 1)];
  };
  l.p50 = at(500);
  l.p90 = at(900);
  l.p95 = at(950);
  l.p99 = at(990);
  l.p999 = at(999);
  l.max = values.back();
  return l;
}

Summary summarize(const std::vector<Record>& records, const RunInfo& info) {
  Summary s;
  const int64_t warmup_ns = std::llround(info.warmup_s * 1e9);
  std::vector<double> ok_ms, lag_ms;
  for (const Record& r : records) {
    if (r.outcome == Outcome::not_sent) continue;
    if (r.scheduled_ns < warmup_ns) {
      ++s.warmup_requests;
      continue;
    }
    ++s.scheduled;
    if (r.sent_ns >= 0) {
      ++s.sent;
      lag_ms.push_back(double(r.sent_ns - r.scheduled_ns) / 1e6);
    }
    switch (r.outcome) {
      case Outcome::dropped: ++s.dropped; break;
      case Outcome::transport_error: ++s.transport_errors; break;
      case Outcome::timed_out:
      case Outcome::in_flight: ++s.timed_out; break;
      case Outcome::response:
        ++s.completed;
        if (r.status == 200) {
          ++s.ok;
          ok_ms.push_back(r.latency_ms);
        } else if (r.status == 429) {
          ++s.status_429;
        } else if (r.status == 503) {
          ++s.status_503;
        } else if (r.status == 504) {
          ++s.status_504;
        } else {
          ++s.other_status;
          ++s.other[r.status];
        }
        break;
      case Outcome::not_sent: break;
    }
  }
  s.achieved_rate = info.window_s > 0 ? double(s.ok) / info.window_s : 0;
  s.latency = latency_of(ok_ms);
  s.send_lag = latency_of(lag_ms);
  return s;
}

namespace {

// "  label ......... value  note" with the values right-aligned in one column.
struct Lines {
  std::string text;
  void add(const std::string& label, const std::string& value, const std::string& note = "") {
    char buf[512];
    std::snprintf(buf, sizeof buf, "  %-22s %14s%s%s\n", label.c_str(), value.c_str(), note.empty() ? "" : "  ",
                  note.c_str());
    text += buf;
  }
};

std::string percent_of(int64_t part, int64_t whole) {
  if (whole <= 0 || part == 0) return "";
  return "(" + fixed(100.0 * double(part) / double(whole), 2) + "%)";
}

}  // namespace

std::string format_report(const Summary& s, const RunInfo& info) {
  std::string out;
  char head[512];
  const ScheduleSpec& p = info.schedule;
  std::string pattern = p.pattern == Pattern::random
                            ? "random gaps in [" + number(p.min_gap) + ", " + number(p.max_gap) + "] s"
                            : std::string(to_string(p.pattern)) + " " + number(p.rate) + " req/s";
  std::snprintf(head, sizeof head,
                "simkit loadgen: %s, collection '%s', %s for %s s (warmup %s s), %lld connections, at most %lld in "
                "flight, %lld queries, limit %lld\n",
                info.url.c_str(), info.collection.c_str(), pattern.c_str(), number(info.duration_s).c_str(),
                number(info.warmup_s).c_str(), (long long)info.connections, (long long)info.max_in_flight,
                (long long)info.queries, (long long)info.limit);
  out += head;
  if (info.interrupted)
    out += "  interrupted: the measured window (after the warmup) is " + fixed(info.window_s, 3) + " s, not " +
           number(info.duration_s) + "\n";

  Lines l;
  l.add("offered rate", fixed(offered_rate(p), 1) + " req/s");
  l.add("scheduled", with_commas(s.scheduled),
        s.warmup_requests ? "(+" + with_commas(s.warmup_requests) + " in the warmup, not counted)" : "");
  l.add("sent", with_commas(s.sent));
  l.add("dropped", with_commas(s.dropped),
        s.dropped ? percent_of(s.dropped, s.scheduled) + " no free connection or in-flight cap at the scheduled time"
                  : "");
  l.add("completed", with_commas(s.completed), "(HTTP responses)");
  l.add("  200", with_commas(s.ok), percent_of(s.ok, s.scheduled));
  l.add("  429 (queue full)", with_commas(s.status_429), percent_of(s.status_429, s.scheduled));
  l.add("  503 (unavailable)", with_commas(s.status_503), percent_of(s.status_503, s.scheduled));
  l.add("  504 (deadline)", with_commas(s.status_504), percent_of(s.status_504, s.scheduled));
  std::string others;
  for (const auto& [status, n] : s.other)
    others += (others.empty() ? "" : ", ") + std::to_string(status) + ": " + with_commas(n);
  l.add("  other statuses", with_commas(s.other_status), others.empty() ? "" : "(" + others + ")");
  l.add("transport errors", with_commas(s.transport_errors), percent_of(s.transport_errors, s.scheduled));
  l.add("timed out", with_commas(s.timed_out),
        s.timed_out ? "(no answer " + number(info.drain_s) + " s after the end of the schedule)" : "");
  l.add("achieved rate", fixed(s.achieved_rate, 1) + " req/s",
        "(200 responses / " + number(info.window_s) + " s measured)");
  out += l.text;

  if (s.latency.count == 0) {
    out += "latency: no 200 responses\n";
  } else {
    out += "latency of the " + with_commas(s.latency.count) +
           " responses with status 200, ms from the scheduled send time (exact, sorted):\n";
    Lines m;
    m.add("mean", fixed(s.latency.mean, 3));
    m.add("p50", fixed(s.latency.p50, 3));
    m.add("p90", fixed(s.latency.p90, 3));
    m.add("p95", fixed(s.latency.p95, 3));
    m.add("p99", fixed(s.latency.p99, 3));
    m.add("p99.9", fixed(s.latency.p999, 3));
    m.add("max", fixed(s.latency.max, 3));
    out += m.text;
  }
  if (s.send_lag.count > 0) {
    char lag[256];
    std::snprintf(lag, sizeof lag, "send lag (sent - scheduled, the generator's own delay): p99 %.3f ms, max %.3f ms\n",
                  s.send_lag.p99, s.send_lag.max);
    out += lag;
  }
  if (!s.server_batches) {
    out += "server batches: unknown (its /metrics has no simkit_batch_size)\n";
  } else {
    const ServerBatches& b = *s.server_batches;
    out += "server batches during the run (its /metrics, warmup included): " + with_commas(b.batches) +
           " batches, mean " + fixed(b.mean_size, 2) + " searches each\n";
    std::string sizes;
    int64_t below = 0;
    for (const auto& [le, cumulative] : b.buckets) {
      if (cumulative == below) continue;
      const std::string bound = std::isinf(le) ? "more" : "<=" + number(le);
      sizes += (sizes.empty() ? "" : ", ") + bound + ": " + with_commas(cumulative - below);
      below = cumulative;
    }
    if (!sizes.empty()) out += "  batches by size: " + sizes + "\n";
  }
  return out;
}

std::string json_document(const Summary& s, const RunInfo& info) {
  const ScheduleSpec& p = info.schedule;
  std::string j = "{\n";
  const auto field = [&](const std::string& name, const std::string& value, bool last = false) {
    j += "  " + json_string(name) + ": " + value + (last ? "\n" : ",\n");
  };
  const auto count = [](int64_t v) { return std::to_string(v); };
  field("url", json_string(info.url));
  field("collection", json_string(info.collection));
  field("pattern", json_string(to_string(p.pattern)));
  field("rate", p.pattern == Pattern::random ? "null" : json_number(p.rate));
  field("min_gap_s", p.pattern == Pattern::random ? json_number(p.min_gap) : "null");
  field("max_gap_s", p.pattern == Pattern::random ? json_number(p.max_gap) : "null");
  field("seed", std::to_string(p.seed));
  field("duration_s", json_number(info.duration_s));
  field("warmup_s", json_number(info.warmup_s));
  field("drain_s", json_number(info.drain_s));
  field("window_s", json_number(info.window_s));
  field("interrupted", info.interrupted ? "true" : "false");
  field("connections", count(info.connections));
  field("max_in_flight", count(info.max_in_flight));
  field("limit", count(info.limit));
  field("queries", count(info.queries));
  field("offered_rate", json_number(offered_rate(p)));
  field("warmup_requests", count(s.warmup_requests));
  field("scheduled", count(s.scheduled));
  field("sent", count(s.sent));
  field("dropped", count(s.dropped));
  field("completed", count(s.completed));
  field("status_200", count(s.ok));
  field("status_429", count(s.status_429));
  field("status_503", count(s.status_503));
  field("status_504", count(s.status_504));
  std::string others = "{";
  for (const auto& [status, n] : s.other)
    others += (others.size() > 1 ? ", " : "") + json_string(std::to_string(status)) + ": " + count(n);
  field("other_statuses", others + "}");
  field("transport_errors", count(s.transport_errors));
  field("timed_out", count(s.timed_out));
  field("achieved_rate", json_number(s.achieved_rate));
  const auto stats = [&](const Latency& l) {
    if (l.count == 0) return std::string("null");
    return "{\"count\": " + count(l.count) + ", \"mean\": " + json_number(l.mean) + ", \"p50\": " + json_number(l.p50) +
           ", \"p90\": " + json_number(l.p90) + ", \"p95\": " + json_number(l.p95) +
           ", \"p99\": " + json_number(l.p99) + ", \"p99_9\": " + json_number(l.p999) +
           ", \"max\": " + json_number(l.max) + "}";
  };
  field("latency_ms", stats(s.latency));
  field("send_lag_ms", stats(s.send_lag));
  std::string batches = "null";
  if (s.server_batches) {
    batches = "{\"batches\": " + count(s.server_batches->batches) +
              ", \"mean_size\": " + json_number(s.server_batches->mean_size) + ", \"buckets\": [";
    for (size_t i = 0; i < s.server_batches->buckets.size(); ++i) {
      const auto& [le, cumulative] = s.server_batches->buckets[i];
      batches += std::string(i ? ", " : "") + "{\"le\": " + (std::isinf(le) ? "\"+Inf\"" : json_number(le)) +
                 ", \"count\": " + count(cumulative) + "}";
    }
    batches += "]}";
  }
  field("server_batches", batches, true);
  return j + "}\n";
}

void write_csv(const std::string& path, const std::vector<Record>& records) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::io, "cannot open " + quoted_path(tmp) + " for writing");
    std::string chunk = "scheduled_s,sent_s,latency_ms,status\n";
    for (const Record& r : records) {
      if (r.outcome == Outcome::not_sent) continue;
      char row[128];
      int n = std::snprintf(row, sizeof row, "%.6f,", double(r.scheduled_ns) / 1e9);
      if (r.sent_ns >= 0) n += std::snprintf(row + n, sizeof row - n, "%.6f", double(r.sent_ns) / 1e9);
      row[n++] = ',';
      if (r.outcome == Outcome::response || r.outcome == Outcome::transport_error)
        n += std::snprintf(row + n, sizeof row - n, "%.3f", r.latency_ms);
      n += std::snprintf(row + n, sizeof row - n, ",%d\n", r.outcome == Outcome::response ? r.status : 0);
      chunk.append(row, size_t(n));
      if (chunk.size() > (1 << 20)) {
        f.write(chunk.data(), std::streamsize(chunk.size()));
        chunk.clear();
      }
    }
    f.write(chunk.data(), std::streamsize(chunk.size()));
    f.flush();
    if (!f) throw Error(ErrorCode::io, "could not write " + quoted_path(tmp));
  });
}

}  // namespace simkit::cli::loadgen
