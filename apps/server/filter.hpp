#pragma once
// Payload filters, Qdrant's language (docs/API.md, "Filters"):
//
//   {"must": [C...], "should": [C...], "must_not": [C...],
//    "min_should": {"conditions": [C...], "min_count": N}}
//
// must: every condition holds; should: at least one does (an empty list is no constraint);
// must_not: none does; min_should: at least N do. A clause may be one condition instead of a list.
// A condition C is a field condition {"key": K, "match": {"value"|"any"|"except"|"text": ...}} or
// {"key": K, "range": {"gt"|"gte"|"lt"|"lte": x}}, {"is_empty": {"key": K}}, {"is_null":
// {"key": K}}, {"has_id": [ids]}, {"nested": {"key": K, "filter": F}}, or a filter itself.
// Keys are paths (json_path.hpp). A field holding an array matches a match or range condition
// when one of its elements does.
//
// A filter becomes a sorted list of ids (filter_eval.hpp) that the index's top-k respects
// (SearchParams::allowed), so a selective filter still returns `limit` results. This file holds
// the parsed form and the evaluation of one point on its payload's text.

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_path.hpp"

namespace simkit::server {

struct Filter;

/// Bounds of a range condition; NaN for an absent one. Payload numbers compare as doubles.
struct Range {
  double gt = NAN, gte = NAN, lt = NAN, lte = NAN;
  bool contains(double x) const {
    return !(x <= gt) && !(x < gte) && !(x >= lt) && !(x > lte);  // false against NaN: no bound
  }
};

struct Condition {
  enum class Kind {
    match_value,
    match_any,
    match_except,
    match_text,
    range,
    is_empty,
    is_null,
    has_id,
    filter,
    nested
  };
  Kind kind = Kind::filter;
  JsonPath path;                   // field conditions, is_empty, is_null, nested
  std::string key;                 // path.text(): the name of the payload index that may answer it
  nlohmann::json value;            // match_value: a string, an integer (int64) or a bool
  std::vector<std::string> words;  // match_any / match_except of strings (sorted); match_text: the text
  std::vector<int64_t> integers;   // match_any / match_except of integers (sorted)
  bool of_integers = false;        // match_any / match_except: the list's type ([] is of strings)
  Range range;
  std::vector<nlohmann::json> ids;       // has_id: the point ids as written (a Collection resolves them)
  std::shared_ptr<const Filter> filter;  // filter; nested: the filter each element is tested with

  /// Whether one value at the path (an element of an array field, for match and range) satisfies
  /// a match or range condition: Qdrant's rules (docs/API.md).
  bool value_matches(std::string_view value_text) const;
};

struct Filter {
  std::vector<Condition> must, should, must_not;
  std::vector<Condition> min_should;  // with min_count
  int64_t min_count = 0;

  /// A canonical text of the filter: searches with equal keys share one allow-list. It is itself
  /// a filter's JSON, which parse_filter reads back into this filter (the same key): the sharded
  /// server sends a search's filter to the other ranks so (shard_router.hpp).
  const std::string& key() const { return key_; }
  /// True when no condition constrains anything (every point matches).
  bool empty() const { return must.empty() && should.empty() && must_not.empty() && min_count == 0; }

  std::string key_;  // set by parse_filter
};

/// Resolves a point id as written in has_id (an integer; UUID strings later) to the collection's
/// id, or nullopt when no point can have it.
using IdResolver = std::function<std::optional<int64_t>(const nlohmann::json&)>;

/// Parses a filter object; throws ApiError(400) naming the field that is wrong
/// ("filter.must[1].range.gt must be a number", "filter.should[0].match: give one of ...").
/// `where` names the filter itself ("filter").
Filter parse_filter(const nlohmann::json& j, const std::string& where = "filter");

/// Whether a condition other than has_id and filter holds for a payload given as its compact
/// JSON object text (payload.hpp; "" for none).
bool condition_holds(const Condition& c, std::string_view payload_text);

/// Whether point `id`, with this payload text, matches the whole filter, one condition at a time
/// (the reference the set evaluation of filter_eval.hpp agrees with; the fuzz harness checks it).
bool matches(const Filter& f, int64_t id, std::string_view payload_text, const IdResolver& resolve);

}  // namespace simkit::server
