#pragma once
// Reading request bodies strictly: every error names the field and what was expected, unknown
// fields are refused (a typo such as "limt" must not silently mean the default), and nothing is
// accepted that the engine would have to reject later (wrong dimension, NaN/Inf, ids out of range).

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "request_limits.hpp"

namespace simkit::server {

/// The body as a JSON object; 400 "malformed JSON body: ..." or "the body must be a JSON object",
/// and 400/413 before parsing when it nests or holds more than `limits` allow.
nlohmann::json parse_object(const std::string& body, const RequestLimits& limits, bool empty_is_object = false);

/// A request's value made short and printable for an error message: a scalar quoted (simkit::
/// quoted), a container described by its kind and size, never printed (it may be huge or deep).
std::string value_excerpt(const nlohmann::json& j);

/// 400 naming the first key of `object` that is not in `known` ("where: unknown field 'x'").
void check_fields(const nlohmann::json& object, std::initializer_list<const char*> known, const std::string& where);

/// Whether every score between `v` and another such vector is finite in float32: a squared norm
/// of at most 2^125 keeps |a - b|^2 <= 2|a|^2 + 2|b|^2 and |a . b| below float32's 2^128, so
/// Euclid, Dot and Cosine (whose norms are computed in float32) never reach inf, and ties keep
/// their order. Vectors past it are refused: JSON has no inf, and an overflowed score ranks nothing.
bool scores_stay_finite(const std::vector<float>& v);

/// `dim` finite float32 values whose scores stay finite (scores_stay_finite).
std::vector<float> parse_vector(const nlohmann::json& j, int64_t dim, const std::string& where);

/// A JSON number as a vector coordinate: rounded to float32, with -0 stored as 0. JSON has one
/// zero, but parsers disagree on its sign (nlohmann reads "-0" as the integer 0 and "-0.0" as
/// -0.0; from_chars reads both as -0.0): every path that reads a body stores the same bits.
inline float vector_coordinate(double x) {
  const float f = static_cast<float>(x);
  return f == 0.f ? 0.f : f;
}

/// An optional integer field in [lo, hi], `fallback` when absent.
int64_t int_field(const nlohmann::json& object, const char* key, int64_t fallback, int64_t lo, int64_t hi,
                  const std::string& where);
bool bool_field(const nlohmann::json& object, const char* key, bool fallback, const std::string& where);

/// The value of `key` in a URL query string ("wait=true&timeout=2"), or "" when absent.
std::string query_param(const std::string& query, const std::string& key);

}  // namespace simkit::server
