#pragma once
// The body of an upsert, read strictly, in either of Qdrant's forms:
//   {"points": [{"id": 1, "vector": [...], "payload": {...}}, ...]}
//   {"batch": {"ids": [1, ...], "vectors": [[...], ...], "payloads": [{...}, ...]}}
// each point's id, vector (the collection's dimension, finite, scores in float32's range; named
// vectors are refused) and payload (an object within PayloadLimits, kept as compact text), or 400
// naming the point's field and what is wrong. Nothing is stored unless every point is good.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "point_store.hpp"
#include "request_limits.hpp"

namespace simkit::server {

/// The reference reader, over a parsed tree: every refusal's message comes from here.
std::vector<StoredPoint> parse_upsert(const nlohmann::json& body, int64_t dim, const PayloadLimits& limits);

/// The body as text, within `limits`: the same points parse_object + parse_upsert give, or the
/// same error. Read by the fast reader (upsert_fast.hpp) when it can; anything it cannot vouch
/// for goes to the reference reader.
/// `fast` (when given) says which reader read it.
std::vector<StoredPoint> parse_upsert_body(const std::string& body, int64_t dim, const RequestLimits& limits,
                                           bool* fast = nullptr);

}  // namespace simkit::server
