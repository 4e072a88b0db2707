#pragma once
// Payload filters, Qdrant's shape: {"must": [{"key": "lang", "match": {"value": "en"}}, ...]}.
// Every condition is an equality on one payload field with a keyword (string), integer or bool
// value; a point matches when each condition holds (a field holding an array matches when any
// element equals the value). A filter becomes an allow-list of ids that the index's top-k
// respects (SearchParams::allowed), so a selective filter still returns `limit` results.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace simkit::server {

struct FieldMatch {
  std::string key;
  nlohmann::json value;  // a string, an integer or a bool
};

struct Filter {
  std::vector<FieldMatch> must;
  /// A canonical text of the filter: searches with equal keys share one allow-list.
  std::string key() const;
  /// Whether a payload, as its compact JSON object text (payload.hpp; "" for none), matches.
  bool matches(std::string_view payload_text) const;
};

/// Parses a filter object; throws ApiError(400) naming what is wrong ("filter.must[1].match:
/// only 'value' is supported", "filter: unknown clause 'should'").
Filter parse_filter(const nlohmann::json& j);

/// The ids (ascending) of the points whose payloads match.
std::vector<int64_t> allowed_ids(const Filter& f, const std::unordered_map<int64_t, std::string>& payloads);

}  // namespace simkit::server
