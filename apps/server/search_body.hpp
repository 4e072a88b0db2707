#pragma once
// The fast path for the body of a search, the server's hottest request: {"vector": [...],
// "limit": K, "offset": N, "with_payload": B}. A general JSON parse builds a tree of 384 values
// and reads each number with strtod: 117 us for a 384-float body, against 7.7 us here (numbers
// read by std::from_chars straight into the query; measured on the 2-core CI machine). That was
// most of the HTTP threads' time at 20,000 searches/s.
//
// It accepts only what it fully understands: a flat object with those keys, plain keys, JSON
// numbers, the right dimension, finite float32 values and limits in range. Anything else (a
// filter, an unknown field, malformed or out-of-range input) returns false, and the caller
// parses the body the general way, which accepts it or explains what is wrong. So both paths
// accept the same bodies and read the same values (the number as a double, then to float, as
// the general parser does).

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "collection.hpp"

namespace simkit::server {

/// True when `body` was a simple search whose values are now in `query`.
bool parse_simple_search(std::string_view body, int64_t dim, int64_t max_limit, SearchQuery& query);

/// `score_threshold` of a search or query body, when it has one; 400 naming `where` if it is not a number.
std::optional<float> score_threshold(const nlohmann::json& body, const std::string& where);

/// The general path: any search object (with a filter too), or 400 naming what is wrong, each
/// field located by `where` ("body", "body.searches[3]").
SearchQuery parse_search(const nlohmann::json& body, int64_t dim, int64_t max_limit, const std::string& where);

}  // namespace simkit::server
