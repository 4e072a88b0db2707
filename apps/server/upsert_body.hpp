#pragma once
// The body of an upsert, {"points": [{"id": 1, "vector": [...], "payload": {...}}, ...]}, read
// strictly: each point's id, vector (the collection's dimension, finite, scores in float32's
// range) and payload (an object within PayloadLimits, kept as compact text), or 400 naming the
// point and what is wrong. Nothing is stored unless every point is good.

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "point_store.hpp"
#include "request_limits.hpp"

namespace simkit::server {

std::vector<StoredPoint> parse_upsert(const nlohmann::json& body, int64_t dim, const PayloadLimits& limits);

}  // namespace simkit::server
