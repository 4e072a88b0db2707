// How a collection writes a search's answer: the hits of one query row as JSON text, straight
// from the index's ids and scores (no JSON tree per hit on the hot path), in Qdrant's
// ScoredPoint shape: {"id", "version", "score", "payload"?, "vector"?}.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>

#include "collection.hpp"

namespace simkit::server {

namespace {

void append_float(std::string& out, float v) {
  char number[32];
  out.append(number, std::to_chars(number, number + sizeof number, v).ptr);
}

}  // namespace

void Collection::append_id(std::string& out, int64_t id) const {
  if (id >= kFirstUuidId) {
    auto it = uuids_.find(id);
    if (it != uuids_.end()) {
      out += '"';
      out += it->second;  // canonical: hex digits and hyphens, nothing to escape
      out += '"';
      return;
    }
  }
  char number[24];
  out.append(number, std::to_chars(number, number + sizeof number, id).ptr);
}

std::string Collection::write_hits(const SearchQuery& q, const int64_t* ids, const float* values, int64_t k) const {
  const bool larger_is_better = metric_ == Metric::cosine || metric_ == Metric::dot;
  std::string hits = "[";
  int64_t skipped = 0, written = 0;
  for (int64_t c = 0; c < k && ids[c] >= 0 && written < q.limit; ++c) {
    if (static_cast<int64_t>(hits.size()) > settings_.max_response_bytes) break;
    if (std::find(q.exclude.begin(), q.exclude.end(), ids[c]) != q.exclude.end()) continue;
    // Best first: the first hit past the threshold ends the list.
    if (q.score_threshold && std::isfinite(values[c]) &&
        (larger_is_better ? values[c] < *q.score_threshold : values[c] > *q.score_threshold))
      break;
    if (skipped++ < q.offset) continue;
    hits += written++ == 0 ? "{\"id\":" : ",{\"id\":";
    append_id(hits, ids[c]);
    // simkit does not number each point's writes: every point reports version 0.
    hits += ",\"version\":0,\"score\":";
    // A metric can overflow float32 on finite vectors (Dot of two 3e38 vectors): JSON has no
    // inf or nan, so such a score is null, not an invalid body.
    if (std::isfinite(values[c]))
      append_float(hits, values[c]);
    else
      hits += "null";
    if (q.with_payload.any()) {
      auto it = payloads_.find(ids[c]);
      const std::string_view text = it == payloads_.end() ? std::string_view() : std::string_view(it->second);
      hits += ",\"payload\":";
      if (q.with_payload.kind == PayloadSelector::Kind::all)
        hits += text.empty() ? std::string_view("{}") : text;
      else
        hits += select_payload(text, q.with_payload);
    }
    if (q.with_vector) {
      hits += ",\"vector\":";
      const std::optional<StoredPoint> p = store_->get(ids[c], /*with_vector=*/true);
      if (!p) {
        hits += "null";
      } else {
        hits += '[';
        for (size_t i = 0; i < p->vector.size(); ++i) {
          if (i > 0) hits += ',';
          append_float(hits, p->vector[i]);
        }
        hits += ']';
      }
    }
    hits += '}';
  }
  hits += ']';
  return hits;
}

}  // namespace simkit::server
