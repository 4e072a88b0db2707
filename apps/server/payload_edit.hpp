#pragma once
// What the API does to payloads beyond storing them: the `with_payload` selector of reads
// (everything, nothing, some keys, all but some keys) and the payload operations (set: merge
// keys in; overwrite: replace; delete: remove keys). Both work on the compact JSON text a
// collection keeps (payload.hpp), through one parsed tree per point they touch; reads that take
// the whole payload never parse it.
//
// Keys are top-level names or dotted paths into nested objects ("a.b"), as Qdrant writes them.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "request_limits.hpp"

namespace simkit::server {

struct PayloadSelector {
  enum class Kind { none, all, include, exclude };
  Kind kind = Kind::none;
  std::vector<std::string> keys;  // for include and exclude
  bool any() const noexcept { return kind != Kind::none; }
  static PayloadSelector all() { return {Kind::all, {}}; }
  bool operator==(const PayloadSelector&) const = default;
};

/// Reads `with_payload`: true / false, a list of keys (include), {"include": [...]} or
/// {"exclude": [...]}; 400 naming `where` otherwise.
PayloadSelector parse_payload_selector(const nlohmann::json& j, const std::string& where);

/// The part of a payload (compact text, "" for none) that `selector` asks for, as compact text:
/// "{}" when nothing is left. Call only when selector.any().
std::string select_payload(std::string_view text, const PayloadSelector& selector);

/// The payload operations, each on one point's payload text ("" for none), returning the new
/// text ("" when it ends empty), checked against `limits` (400 naming `where`).
std::string merge_payload(std::string_view text, const nlohmann::json& keys, const PayloadLimits& limits,
                          const std::string& where);
std::string delete_payload_keys(std::string_view text, const std::vector<std::string>& keys);

}  // namespace simkit::server
