// Fuzzes payload filters (apps/server/filter.hpp): parse_filter, Filter::key and
// Filter::matches, which reads the fields it tests straight out of a payload's text
// (payload_field, decode_json_string and skip_json_value in payload.hpp) without building a tree.
//
// Input: the filter's JSON, a NUL byte, then the payload's text (no NUL: the filter alone, and
// an empty payload, which is "no payload").
//
// What must hold: parse_filter refuses with ApiError 400 and nothing else; matches() runs on any
// text without reading past it; and on a payload that is a JSON object, given in the compact
// form the server stores (nlohmann's dump), matches() agrees with a plain evaluation on the
// parsed tree: each condition's top-level field equals the value -- a string, an integer (by
// value, signed or not; a float such as 1.0 is no integer) or a bool -- or, when the field is an
// array, one of its elements does.

#include <cstdint>
#include <string>
#include <string_view>

#include "api_error.hpp"
#include "filter.hpp"
#include "request_limits.hpp"
#include "server_fuzz_support.hpp"

namespace {

using simkit::fuzz::check;

/// Parses JSON text the server would have let through (check_body_shape first: no deep trees);
/// a discarded value when it is not JSON or too deep.
nlohmann::json parse_bounded(std::string_view text) {
  try {
    simkit::server::check_body_shape(text, simkit::server::RequestLimits{});
  } catch (const simkit::server::ApiError&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

bool equal(const nlohmann::json& field, const nlohmann::json& value) {
  if (value.is_string())
    return field.is_string() && field.get_ref<const std::string&>() == value.get_ref<const std::string&>();
  if (value.is_boolean()) return field.is_boolean() && field.get<bool>() == value.get<bool>();
  // Integers: JSON's integer values compare by value whether nlohmann stored them signed or not.
  if (!field.is_number_integer()) return false;
  const bool field_neg = !field.is_number_unsigned() && field.get<int64_t>() < 0;
  const bool value_neg = !value.is_number_unsigned() && value.get<int64_t>() < 0;
  if (field_neg != value_neg) return false;
  if (field_neg) return field.get<int64_t>() == value.get<int64_t>();
  return field.get<uint64_t>() == value.get<uint64_t>();
}

bool expected_match(const simkit::server::Filter& f, const nlohmann::json& payload) {
  for (const auto& m : f.must) {
    const auto it = payload.find(m.key);
    if (it == payload.end()) return false;
    bool any = false;
    if (it->is_array()) {
      for (const auto& e : *it) any = any || equal(e, m.value);
    } else {
      any = equal(*it, m.value);
    }
    if (!any) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view filter_text = input.substr(0, nul);
  const std::string_view payload = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  const nlohmann::json filter_json = parse_bounded(filter_text);
  if (filter_json.is_discarded()) return 0;
  simkit::server::Filter filter;
  try {
    filter = simkit::server::parse_filter(filter_json);
  } catch (const simkit::server::ApiError& e) {
    simkit::fuzz::check_message(e);
    check(e.status() == 400, "a filter refused with status " + std::to_string(e.status()) + ": " + e.what());
    return 0;
  }
  for (const auto& m : filter.must) {
    check(!m.key.empty(), "parse_filter accepted an empty key");
    check(m.value.is_string() || m.value.is_boolean() || m.value.is_number_integer(),
          "parse_filter accepted a value that is not a string, an integer or a bool");
  }
  (void)filter.key();

  // Any text: must not crash nor read past it (the payload ends where libFuzzer's buffer does,
  // so ASan sees a read beyond it).
  (void)filter.matches(payload);

  const nlohmann::json tree = parse_bounded(payload);
  if (!tree.is_object()) return 0;
  const std::string compact = tree.dump();
  const bool got = filter.matches(compact);
  const bool want = expected_match(filter, tree);
  check(got == want, std::string("matches() says ") + (got ? "true" : "false") + " where the tree says " +
                         (want ? "true" : "false") + "; filter " + filter_json.dump() + ", payload " + compact);
  return 0;
}
