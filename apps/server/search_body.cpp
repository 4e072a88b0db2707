#include "search_body.hpp"

#include <charconv>
#include <cmath>

#include "api_error.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool take(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  /// A key without escapes.
  bool key(std::string_view& out) {
    if (!take('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      if (*p_ == '\\' || static_cast<unsigned char>(*p_) < 0x20) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }
  /// A number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(double& out, bool integer_only) {
    skip_space();
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q == end_ || *q < '0' || *q > '9') return false;
    if (*q == '0') {
      ++q;
    } else {
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    bool plain = true;
    if (q < end_ && *q == '.') {
      plain = false;
      ++q;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      plain = false;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (integer_only && !plain) return false;
    const auto r = std::from_chars(p_, q, out);
    if (r.ec != std::errc() || r.ptr != q) return false;  // out of double's range: the general path says so
    p_ = q;
    return true;
  }
  bool literal(bool& out) {
    skip_space();
    if (end_ - p_ >= 4 && std::string_view(p_, 4) == "true") {
      out = true;
      p_ += 4;
      return true;
    }
    if (end_ - p_ >= 5 && std::string_view(p_, 5) == "false") {
      out = false;
      p_ += 5;
      return true;
    }
    return false;
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

bool parse_simple_search(std::string_view body, int64_t dim, int64_t max_limit, SearchQuery& query) {
  Reader r(body);
  if (!r.take('{')) return false;
  bool seen_vector = false, seen_limit = false, seen_offset = false, seen_payload = false, seen_with_vector = false;
  query = SearchQuery{};
  query.vector.reserve(static_cast<size_t>(dim));
  if (r.take('}')) return false;  // no vector: the general path names what is missing
  for (;;) {
    std::string_view key;
    if (!r.key(key) || !r.take(':')) return false;
    double v = 0;
    if (key == "vector" && !seen_vector) {
      seen_vector = true;
      if (!r.take('[')) return false;
      if (!r.take(']')) {
        do {
          if (!r.number(v, false)) return false;
          const float f = vector_coordinate(v);
          if (!std::isfinite(f) || static_cast<int64_t>(query.vector.size()) == dim) return false;
          query.vector.push_back(f);
        } while (r.take(','));
        if (!r.take(']')) return false;
      }
      if (static_cast<int64_t>(query.vector.size()) != dim || !scores_stay_finite(query.vector)) return false;
    } else if ((key == "limit" && !seen_limit) || (key == "offset" && !seen_offset)) {
      (key == "limit" ? seen_limit : seen_offset) = true;
      if (!r.number(v, true) || v < (key == "limit" ? 1 : 0) || v > static_cast<double>(max_limit)) return false;
      (key == "limit" ? query.limit : query.offset) = static_cast<int64_t>(v);
    } else if (key == "with_payload" && !seen_payload) {
      seen_payload = true;
      bool with_payload = false;
      if (!r.literal(with_payload)) return false;
      if (with_payload) query.with_payload = PayloadSelector::all();
    } else if (key == "with_vector" && !seen_with_vector) {
      seen_with_vector = true;
      bool with_vector = false;
      if (!r.literal(with_vector) || with_vector) return false;
    } else {
      return false;  // filter, an unknown field, a repeated key
    }
    if (r.take(',')) continue;
    if (!r.take('}')) return false;
    break;
  }
  return seen_vector && r.at_end();
}

std::optional<float> score_threshold(const nlohmann::json& body, const std::string& where) {
  if (!body.contains("score_threshold") || body["score_threshold"].is_null()) return std::nullopt;
  const nlohmann::json& t = body["score_threshold"];
  if (!t.is_number() || !std::isfinite(t.get<double>()))
    bad_request(where + ".score_threshold must be a number (got " + value_excerpt(t) + ")");
  return static_cast<float>(t.get<double>());
}

SearchQuery parse_search(const nlohmann::json& body, int64_t dim, int64_t max_limit, const std::string& where) {
  if (!body.is_object()) bad_request(where + " must be an object");
  check_fields(
      body, {"vector", "limit", "offset", "with_payload", "with_vector", "filter", "params", "score_threshold"}, where);
  if (!body.contains("vector")) bad_request(where + ".vector is required");
  SearchQuery q;
  q.vector = parse_vector(body["vector"], dim, where + ".vector");
  q.limit = int_field(body, "limit", 10, 1, max_limit, where);
  q.offset = int_field(body, "offset", 0, 0, max_limit, where);
  if (body.contains("with_payload"))
    q.with_payload = parse_payload_selector(body["with_payload"], where + ".with_payload");
  q.with_vector = bool_field(body, "with_vector", false, where);
  q.score_threshold = score_threshold(body, where);
  if (body.contains("filter") && !body["filter"].is_null()) {
    q.filter = parse_filter(body["filter"], where + ".filter");
    if (q.filter->empty()) q.filter.reset();  // no condition: every point
  }
  if (body.contains("params") && !body["params"].is_null()) {
    const nlohmann::json& params = body["params"];
    if (!params.is_object()) bad_request(where + ".params must be an object");
    check_fields(params, {"hnsw_ef"}, where + ".params");
    q.hnsw_ef = int_field(params, "hnsw_ef", 0, 1, 1 << 20, where + ".params");
  }
  return q;
}

}  // namespace simkit::server
