#include "upsert_fast.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <simdjson.h>

#include "payload_writer.hpp"
#include "point_id.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// A parser's buffers and a padded copy of the body when its string has no room past its end for
// the SIMDJSON_PADDING bytes simdjson may read (large bodies have it: http_server.hpp).
struct Scratch {
  simdjson::dom::parser parser;
  std::unique_ptr<char[]> text;
  size_t capacity = 0;
};

// Scratches kept between bodies: reused, their pages cost nothing again (a fresh one added
// 3.4 ms to the 10 ms parse of 1,000 x 384 floats). Only after an accepted body no larger than
// kKeepBytes, and at most kKept of them, so that what stays is bounded and follows the bytes
// accepted: a refused body, however large, keeps nothing.
constexpr size_t kKeepBytes = size_t{12} << 20;
constexpr size_t kKept = 2;

class ScratchPool {
 public:
  std::unique_ptr<Scratch> take() {
    std::lock_guard g(mutex_);
    if (kept_.empty()) return std::make_unique<Scratch>();
    std::unique_ptr<Scratch> s = std::move(kept_.back());
    kept_.pop_back();
    return s;
  }
  void give_back(std::unique_ptr<Scratch> s) {
    std::lock_guard g(mutex_);
    if (kept_.size() < kKept) kept_.push_back(std::move(s));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Scratch>> kept_;
};

ScratchPool& scratch_pool() {
  static ScratchPool pool;
  return pool;
}

// The element's number as a double, as nlohmann's get<double>() converts it; false otherwise.
bool number_of(element e, double& x) {
  switch (e.type()) {
    case element_type::DOUBLE: x = e.get_double().value_unsafe(); return true;
    case element_type::INT64: x = static_cast<double>(e.get_int64().value_unsafe()); return true;
    case element_type::UINT64: x = static_cast<double>(e.get_uint64().value_unsafe()); return true;
    default: return false;
  }
}

// Walks the parsed body into points. Every step answers false instead of throwing: the fast
// reader never words a refusal, it leaves the body to the reference reader, which does.
class Reader {
 public:
  Reader(int64_t dim, const PayloadLimits& limits) : dim_(dim), limits_(limits) {}

  bool points(element list, std::vector<StoredPoint>& out) {
    array a;
    if (list.get_array().get(a) || a.size() == 0) return false;
    out.reserve(a.size());
    for (element p : a) {
      object o;
      if (p.get_object().get(o)) return false;
      element id, vector, payload;
      bool has_id = false, has_vector = false, has_payload = false;
      for (auto [key, value] : o) {
        bool* seen = key == "id" ? &has_id : key == "vector" ? &has_vector : key == "payload" ? &has_payload : nullptr;
        if (!seen || *seen) return false;  // unknown or repeated: the reference reader says which
        *seen = true;
        (key == "id" ? id : key == "vector" ? vector : payload) = value;
      }
      if (!has_id || !has_vector) return false;
      if (!point(id, vector, has_payload ? &payload : nullptr, out.emplace_back())) return false;
    }
    return true;
  }

  bool batch(element b, std::vector<StoredPoint>& out) {
    object o;
    if (b.get_object().get(o)) return false;
    element ids, vectors, payloads;
    bool has_ids = false, has_vectors = false, has_payloads = false;
    for (auto [key, value] : o) {
      bool* seen = key == "ids"        ? &has_ids
                   : key == "vectors"  ? &has_vectors
                   : key == "payloads" ? &has_payloads
                                       : nullptr;
      if (!seen || *seen) return false;
      *seen = true;
      (key == "ids" ? ids : key == "vectors" ? vectors : payloads) = value;
    }
    array id_list, vector_list, payload_list;
    if (!has_ids || !has_vectors || ids.get_array().get(id_list) || vectors.get_array().get(vector_list)) return false;
    const size_t n = id_list.size();
    if (n == 0 || vector_list.size() != n) return false;
    const bool with_payloads = has_payloads && !payloads.is_null();
    if (with_payloads && (payloads.get_array().get(payload_list) || payload_list.size() != n)) return false;
    out.reserve(n);
    auto v = vector_list.begin();
    auto p = payload_list.begin();
    for (element id : id_list) {
      element payload;
      if (with_payloads) payload = *p;
      if (!point(id, *v, with_payloads ? &payload : nullptr, out.emplace_back())) return false;
      ++v;
      if (with_payloads) ++p;
    }
    return true;
  }

  /// Whether an id of 0 was read: the text "-0" reads as 0 here, but the reference reader refuses it.
  bool saw_zero_id() const noexcept { return saw_zero_id_; }

 private:
  bool point(element id, element vector, const element* payload, StoredPoint& p) {
    if (!read_id(id, p)) return false;
    if (!read_vector(vector, p.vector)) return false;
    if (payload && !payload->is_null()) {
      if (!payload->is_object()) return false;
      append_compact_json(*payload, p.payload);
      const JsonShape shape = measure_json(p.payload);  // as payload_text measures it
      if (shape.depth > limits_.max_depth || shape.values > limits_.max_values ||
          static_cast<int64_t>(p.payload.size()) > limits_.max_bytes)
        return false;
    }
    return true;
  }

  bool read_id(element e, StoredPoint& p) {
    switch (e.type()) {
      case element_type::INT64: {
        const int64_t v = e.get_int64().value_unsafe();
        if (v < 0 || v >= kFirstUuidId || !numbers_.insert(v).second) return false;
        saw_zero_id_ = saw_zero_id_ || v == 0;
        p.id = v;
        return true;
      }
      case element_type::STRING:
        if (!canonical_uuid(e.get_string().value_unsafe(), p.uuid) || !uuids_.insert(p.uuid).second) return false;
        p.id = -1;  // assigned by the store
        return true;
      default: return false;  // beyond int64 is beyond 2^62 too: the reference reader refuses it
    }
  }

  bool read_vector(element e, std::vector<float>& v) {
    array a;
    if (e.get_array().get(a) || static_cast<int64_t>(a.size()) != dim_) return false;
    v.resize(static_cast<size_t>(dim_));
    size_t i = 0;
    for (element x : a) {
      double d;
      if (!number_of(x, d)) return false;
      v[i] = vector_coordinate(d);
      if (!std::isfinite(v[i++])) return false;
    }
    return scores_stay_finite(v);
  }

  int64_t dim_;
  const PayloadLimits& limits_;
  std::unordered_set<int64_t> numbers_;
  std::unordered_set<std::string> uuids_;
  bool saw_zero_id_ = false;
};

// Whether the text holds the number "-0" as a whole token (not "-0.5", "-0e1" or "1e-05"): the
// one id spelling simdjson and nlohmann read differently (0 here, a negative integer there). The
// same three bytes inside a string count too: such a body merely goes the slow way.
bool has_minus_zero(std::string_view text) {
  constexpr std::string_view before = ":[, \t\n\r", after = ",]} \t\n\r";
  for (size_t i = text.find("-0"); i != std::string_view::npos; i = text.find("-0", i + 2)) {
    const bool starts = i > 0 && before.find(text[i - 1]) != std::string_view::npos;
    const bool ends = i + 2 == text.size() || after.find(text[i + 2]) != std::string_view::npos;
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::optional<std::vector<StoredPoint>> read_upsert_fast(const std::string& body, int64_t dim,
                                                         const PayloadLimits& limits) {
  // nlohmann stops at a NUL byte; its reader refuses such a body with a message of its own.
  if (std::memchr(body.data(), '\0', body.size())) return std::nullopt;
  std::unique_ptr<Scratch> scratch = scratch_pool().take();
  Scratch& s = *scratch;
  const char* text = body.data();
  if (body.capacity() - body.size() < simdjson::SIMDJSON_PADDING) {  // a small body, read by Beast
    const size_t need = body.size() + simdjson::SIMDJSON_PADDING;
    if (s.capacity < need) {
      s.text.reset(new char[need]);
      s.capacity = need;
    }
    text = static_cast<const char*>(std::memcpy(s.text.get(), body.data(), body.size()));
  }
  element root;
  if (s.parser.parse(text, body.size(), false).get(root)) return std::nullopt;
  object o;
  if (root.get_object().get(o) || o.size() != 1) return std::nullopt;
  const auto [key, value] = *o.begin();
  std::vector<StoredPoint> points;
  Reader reader(dim, limits);
  const bool ok = key == "points" ? reader.points(value, points) : key == "batch" && reader.batch(value, points);
  if (!ok || (reader.saw_zero_id() && has_minus_zero(body))) return std::nullopt;
  if (body.size() <= kKeepBytes) scratch_pool().give_back(std::move(scratch));
  return points;
}

}  // namespace simkit::server
