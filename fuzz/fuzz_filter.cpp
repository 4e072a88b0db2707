// Fuzzes payload filters (apps/server/filter.hpp): parse_filter, Filter::key, matches() -- which
// reads the fields it tests straight out of a payload's text (json_path.hpp, payload.hpp)
// without building a tree -- and evaluate() (filter_eval.hpp), the set evaluation, with and
// without payload indexes (payload_index.hpp).
//
// Input: the filter's JSON, a NUL byte, then the payload's text (no NUL: the filter alone, and
// an empty payload, which is "no payload").
//
// What must hold: parse_filter refuses with ApiError 400 and nothing else; matches() runs on any
// text without reading past it; and on a payload that is a JSON object, given in the compact
// form the server stores (nlohmann's dump), matches() agrees with the plain evaluation on the
// parsed tree below (Qdrant's rules, restated in filter.cpp), and so does evaluate() over a
// collection of that one point (id 7), with no index and with one on every key the filter names.

#include <cstdint>
#include <string>
#include <string_view>

#include "api_error.hpp"
#include "filter.hpp"
#include "filter_eval.hpp"
#include "payload_index.hpp"
#include "request_limits.hpp"
#include "server_fuzz_support.hpp"

namespace {

using nlohmann::json;
using simkit::fuzz::check;
using simkit::server::Condition;
using simkit::server::Filter;
using simkit::server::PathStep;

constexpr int64_t kId = 7;

/// Parses JSON text the server would have let through (check_body_shape first: no deep trees);
/// a discarded value when it is not JSON or too deep.
json parse_bounded(std::string_view text) {
  try {
    simkit::server::check_body_shape(text, simkit::server::RequestLimits{});
  } catch (const simkit::server::ApiError&) {
    return json(json::value_t::discarded);
  }
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

void values_at(const json& v, const std::vector<PathStep>& steps, size_t s, std::vector<const json*>& out) {
  if (s == steps.size()) return out.push_back(&v);
  const PathStep& step = steps[s];
  if (step.kind == PathStep::Kind::key && v.is_object() && v.contains(step.key))
    values_at(v[step.key], steps, s + 1, out);
  if (step.kind == PathStep::Kind::each && v.is_array())
    for (const json& e : v) values_at(e, steps, s + 1, out);
  if (step.kind == PathStep::Kind::index && v.is_array() && step.position < v.size())
    values_at(v[step.position], steps, s + 1, out);
}

bool is_int64(const json& v) {
  return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX});
}

bool scalar(const Condition& c, const json& v) {
  using K = Condition::Kind;
  const auto in = [](const auto& list, const auto& x) { return std::find(list.begin(), list.end(), x) != list.end(); };
  switch (c.kind) {
    case K::match_value:
      if (c.value.is_boolean()) return v.is_boolean() && v == c.value;
      if (c.value.is_string()) return v.is_string() && v == c.value;
      return is_int64(v) && v.get<int64_t>() == c.value.get<int64_t>();
    case K::match_text: return v.is_string() && v.get<std::string>().find(c.words[0]) != std::string::npos;
    case K::match_any:
      return c.of_integers ? is_int64(v) && in(c.integers, v.get<int64_t>())
                           : v.is_string() && in(c.words, v.get<std::string>());
    case K::match_except:
      if (v.is_null()) return false;
      if (c.of_integers && v.is_number()) return !is_int64(v) || !in(c.integers, v.get<int64_t>());
      if (!c.of_integers && v.is_string()) return !in(c.words, v.get<std::string>());
      return true;
    case K::range: return v.is_number() && c.range.contains(v.get<double>());
    default: return false;
  }
}

bool oracle(const Filter& f, const json& payload, bool has_point);

bool holds(const Condition& c, const json& payload, bool has_point) {
  using K = Condition::Kind;
  if (c.kind == K::filter) return oracle(*c.filter, payload, has_point);
  if (c.kind == K::has_id) {
    for (const json& id : c.ids)
      if (has_point && id.is_number_integer() && id.get<int64_t>() == kId) return true;
    return false;
  }
  std::vector<const json*> values;
  values_at(payload, c.path.steps, 0, values);
  bool any = false, all_empty = true;
  for (const json* v : values) {
    if (c.kind == K::nested) any = any || (v->is_object() && oracle(*c.filter, *v, false));
    if (c.kind == K::is_null) any = any || v->is_null();
    all_empty = all_empty && (v->is_null() || (v->is_array() && v->empty()));
    if (v->is_array())
      for (const json& e : *v) any = any || scalar(c, e);
    else
      any = any || scalar(c, *v);
  }
  return c.kind == K::is_empty ? all_empty : any;
}

bool oracle(const Filter& f, const json& payload, bool has_point) {
  const auto h = [&](const Condition& c) { return holds(c, payload, has_point); };
  if (!std::all_of(f.must.begin(), f.must.end(), h)) return false;
  if (!f.should.empty() && !std::any_of(f.should.begin(), f.should.end(), h)) return false;
  if (std::count_if(f.min_should.begin(), f.min_should.end(), h) < f.min_count) return false;
  return std::none_of(f.must_not.begin(), f.must_not.end(), h);
}

void field_keys(const Filter& f, std::vector<const Condition*>& out) {
  for (const auto* list : {&f.must, &f.should, &f.must_not, &f.min_should})
    for (const Condition& c : *list) {
      if (c.kind == Condition::Kind::filter) field_keys(*c.filter, out);
      if (c.kind != Condition::Kind::filter && c.kind != Condition::Kind::has_id && c.kind != Condition::Kind::nested)
        out.push_back(&c);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view filter_text = input.substr(0, nul);
  const std::string_view payload = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  const json filter_json = parse_bounded(filter_text);
  if (filter_json.is_discarded()) return 0;
  Filter filter;
  try {
    filter = simkit::server::parse_filter(filter_json);
  } catch (const simkit::server::ApiError& e) {
    simkit::fuzz::check_message(e);
    check(e.status() == 400, "a filter refused with status " + std::to_string(e.status()) + ": " + e.what());
    return 0;
  }
  check(!filter.key().empty(), "a parsed filter has an empty key");
  // The key is a filter that reads back to itself: what the sharded server sends to its ranks.
  try {
    const std::string again = simkit::server::parse_filter(json::parse(filter.key())).key();
    check(again == filter.key(), "the key " + filter.key() + " reads back as " + again);
  } catch (const std::exception& e) {
    check(false, "the key " + filter.key() + " does not read back: " + e.what());
  }
  const simkit::server::IdResolver resolve = [](const json& id) -> std::optional<int64_t> {
    if (id.is_number_integer()) return id.get<int64_t>();
    return std::nullopt;
  };

  // Any text: must not crash nor read past it (the payload ends where libFuzzer's buffer does,
  // so ASan sees a read beyond it).
  (void)simkit::server::matches(filter, kId, payload, resolve);

  const json tree = parse_bounded(payload);
  if (!tree.is_object()) return 0;
  const std::string compact = tree.dump();
  const bool got = simkit::server::matches(filter, kId, compact, resolve);
  const bool want = oracle(filter, tree, true);
  check(got == want, std::string("matches() says ") + (got ? "true" : "false") + " where the tree says " +
                         (want ? "true" : "false") + "; filter " + filter_json.dump() + ", payload " + compact);

  // The set evaluation of a one-point collection, without indexes and then with one on each key.
  simkit::server::PayloadIndexes indexes;
  indexes.reset({kId});
  const simkit::server::PayloadMap payloads = {{kId, compact}};
  const auto text_of = [&](int64_t) { return std::string_view(compact); };
  for (int round = 0; round < 2; ++round) {
    const bool in = !simkit::server::evaluate(filter, indexes, payloads, resolve).empty();
    check(in == want, std::string("evaluate() ") + (round ? "with indexes" : "without indexes") + " says " +
                          (in ? "in" : "out") + "; filter " + filter_json.dump() + ", payload " + compact);
    std::vector<const Condition*> conditions;
    field_keys(filter, conditions);
    static const char* kTypes[] = {"keyword", "integer", "float", "bool"};
    for (const Condition* c : conditions)
      if (!indexes.find(c->key))
        indexes.install(simkit::server::PayloadIndexes::build(
            c->path, simkit::server::parse_field_schema(kTypes[c->key.size() % 4], "schema"), indexes.live(), text_of));
  }
  return 0;
}
