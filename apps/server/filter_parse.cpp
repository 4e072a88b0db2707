// parse_filter: Qdrant's filter JSON into a Filter, every refusal a 400 naming the field, and
// the canonical text (Filter::key) built on the way from what was understood, so that filters
// written differently but meaning the same (a clause as one condition or a list of one, any
// lists in another order) share one allow-list.

#include <algorithm>
#include <limits>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "filter.hpp"
#include "point_id.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace {

using nlohmann::json;

[[noreturn]] void unsupported(const std::string& at, const std::string& what) {
  bad_request(at + " is not supported by this server (" + what + "; docs/API.md lists what is)");
}

class Parser {
 public:
  Filter filter(const json& j, const std::string& at, json& canon, bool in_nested);

 private:
  std::vector<Condition> clause(const json& j, const std::string& at, json& canon, bool in_nested);
  Condition condition(const json& j, const std::string& at, json& canon, bool in_nested);
  void field(const json& j, const std::string& at, Condition& c, json& canon);
  void match(const json& j, const std::string& at, Condition& c, json& canon);
  void range(const json& j, const std::string& at, Condition& c, json& canon);
  JsonPath path(const json& j, const std::string& at);
  void key_only(const json& j, const std::string& at, Condition& c, json& canon);
  void has_id(const json& j, const std::string& at, Condition& c, json& canon);
};

JsonPath Parser::path(const json& j, const std::string& at) {
  if (!j.is_string() || j.get_ref<const std::string&>().empty()) bad_request(at + " must be a non-empty string");
  std::optional<JsonPath> p = parse_json_path(j.get_ref<const std::string&>());
  if (!p)
    bad_request(at + ": " + simkit::quoted(j.get_ref<const std::string&>()) +
                " is not a payload path (write a, a.b, a[].b, a[0].b, or \"a.b\" quoted for a key holding dots)");
  return std::move(*p);
}

Filter Parser::filter(const json& j, const std::string& at, json& canon, bool in_nested) {
  if (!j.is_object())
    bad_request(at + " must be an object such as {\"must\": [{\"key\": ..., \"match\": {\"value\": ...}}]}");
  Filter f;
  canon = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const std::string sub = at + "." + name;
    if (it->is_null()) continue;  // Qdrant reads a null clause as an absent one
    if (name == "must") {
      f.must = clause(*it, sub, canon["must"], in_nested);
    } else if (name == "should") {
      f.should = clause(*it, sub, canon["should"], in_nested);
    } else if (name == "must_not") {
      f.must_not = clause(*it, sub, canon["must_not"], in_nested);
    } else if (name == "min_should") {
      if (!it->is_object()) bad_request(sub + " must be an object {\"conditions\": [...], \"min_count\": N}");
      for (auto m = it->begin(); m != it->end(); ++m)
        if (m.key() != "conditions" && m.key() != "min_count")
          bad_request(sub + ": unknown field " + simkit::quoted(m.key()) + " (expected conditions and min_count)");
      if (!it->contains("min_count"))
        bad_request(sub + ".min_count is required (how many of the conditions must hold)");
      const json& n = (*it)["min_count"];
      if (!n.is_number_integer() || (!n.is_number_unsigned() && n.get<int64_t>() < 0) ||
          n.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
        bad_request(sub + ".min_count must be a non-negative integer (got " + value_excerpt(n) + ")");
      if (!it->contains("conditions")) bad_request(sub + ".conditions is required (an array of conditions)");
      json& c = canon["min_should"];
      f.min_should = clause((*it)["conditions"], sub + ".conditions", c["conditions"], in_nested);
      f.min_count = n.get<int64_t>();
      c["min_count"] = f.min_count;
    } else {
      bad_request(at + ": unknown clause " + simkit::quoted(name) + " (expected must, should, must_not or min_should)");
    }
  }
  f.key_ = canon.dump();
  return f;
}

std::vector<Condition> Parser::clause(const json& j, const std::string& at, json& canon, bool in_nested) {
  std::vector<Condition> out;
  canon = json::array();
  if (j.is_object()) {  // one condition instead of a list, as Qdrant allows
    out.push_back(condition(j, at, canon.emplace_back(), in_nested));
    return out;
  }
  if (!j.is_array()) bad_request(at + " must be an array of conditions (or one condition object)");
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(condition(j[i], at + "[" + std::to_string(i) + "]", canon.emplace_back(), in_nested));
  return out;
}

Condition Parser::condition(const json& j, const std::string& at, json& canon, bool in_nested) {
  if (!j.is_object())
    bad_request(at + " must be an object: a condition such as {\"key\": ..., \"match\": {\"value\": ...}} or a filter");
  Condition c;
  canon = json::object();
  if (j.contains("key")) {
    field(j, at, c, canon);
  } else if (j.contains("is_empty") || j.contains("is_null")) {
    const char* name = j.contains("is_empty") ? "is_empty" : "is_null";
    if (j.size() != 1) bad_request(at + ": " + name + " stands alone in its condition object");
    c.kind = j.contains("is_empty") ? Condition::Kind::is_empty : Condition::Kind::is_null;
    key_only(j[name], at + "." + name, c, canon[name]);
  } else if (j.contains("has_id")) {
    if (j.size() != 1) bad_request(at + ": has_id stands alone in its condition object");
    if (in_nested) unsupported(at + ".has_id", "has_id inside a nested filter; put it beside the nested condition");
    has_id(j["has_id"], at + ".has_id", c, canon);
  } else if (j.contains("nested")) {
    if (j.size() != 1) bad_request(at + ": nested stands alone in its condition object");
    const json& n = j["nested"];
    const std::string sub = at + ".nested";
    if (!n.is_object()) bad_request(sub + " must be an object {\"key\": ..., \"filter\": {...}}");
    check_fields(n, {"key", "filter"}, sub);
    if (!n.contains("key") || !n.contains("filter")) bad_request(sub + " needs both key and filter");
    c.kind = Condition::Kind::nested;
    c.path = path(n["key"], sub + ".key");
    // Qdrant's rule: the key names an array of objects, with or without a trailing [].
    if (c.path.steps.back().kind != PathStep::Kind::each) c.path.steps.push_back({PathStep::Kind::each, {}, 0});
    c.key = c.path.text();
    json& nc = canon["nested"];
    nc["key"] = c.key;
    c.filter = std::make_shared<const Filter>(filter(n["filter"], sub + ".filter", nc["filter"], true));
  } else if (j.contains("match") || j.contains("range")) {
    bad_request(at + ".key is required: the payload field the condition tests");
  } else if (j.contains("has_vector")) {
    unsupported(at + ".has_vector", "points here have one unnamed vector");
  } else {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "must" && it.key() != "should" && it.key() != "must_not" && it.key() != "min_should")
        bad_request(at + ": unknown condition " + simkit::quoted(it.key()) +
                    " (expected key with match or range, is_empty, is_null, has_id, nested, or a filter's "
                    "must / should / must_not / min_should)");
    c.kind = Condition::Kind::filter;
    // Its canonical text is the filter's own, so that a key parses back (Filter::key).
    c.filter = std::make_shared<const Filter>(filter(j, at, canon, in_nested));
  }
  return c;
}

void Parser::key_only(const json& j, const std::string& at, Condition& c, json& canon) {
  if (!j.is_object()) bad_request(at + " must be an object {\"key\": ...}");
  check_fields(j, {"key"}, at);
  if (!j.contains("key")) bad_request(at + ".key is required");
  c.path = path(j["key"], at + ".key");
  c.key = c.path.text();
  canon["key"] = c.key;
}

void Parser::has_id(const json& j, const std::string& at, Condition& c, json& canon) {
  if (!j.is_array()) bad_request(at + " must be an array of point ids");
  c.kind = Condition::Kind::has_id;
  for (size_t i = 0; i < j.size(); ++i) {
    // Kept as the API writes it: an integer, or a UUID in its canonical form.
    c.ids.push_back(parse_point_id(j[i], at + "[" + std::to_string(i) + "]").json());
  }
  canon["has_id"] = j;
}

void Parser::field(const json& j, const std::string& at, Condition& c, json& canon) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    if (name == "key" || name == "match" || name == "range") continue;
    if (name == "geo_bounding_box" || name == "geo_radius" || name == "geo_polygon")
      unsupported(at + "." + name, "geo conditions");
    if (name == "values_count") unsupported(at + "." + name, "counting values");
    if (name == "datetime_range") unsupported(at + "." + name, "datetime ranges");
    bad_request(at + ": unknown field " + simkit::quoted(name) + " (a field condition has key and match or range)");
  }
  c.path = path(j["key"], at + ".key");
  c.key = c.path.text();
  canon["key"] = c.key;
  const bool has_match = j.contains("match"), has_range = j.contains("range");
  if (has_match == has_range)
    bad_request(at + (has_match ? ": give match or range, not both (two conditions in must say both)"
                                : ": a field condition needs match or range"));
  if (has_match)
    match(j["match"], at + ".match", c, canon["match"]);
  else
    range(j["range"], at + ".range", c, canon["range"]);
}

// A list of strings or of integers (int64), sorted and without repeats.
void read_list(const json& j, const std::string& at, Condition& c, json& canon) {
  if (!j.is_array()) bad_request(at + " must be an array of strings or of integers");
  const bool ints = !j.empty() && j[0].is_number_integer();
  for (size_t i = 0; i < j.size(); ++i) {
    const json& v = j[i];
    const std::string where = at + "[" + std::to_string(i) + "]";
    if (ints ? !v.is_number_integer() : !v.is_string())
      bad_request(where + " must be " + (ints ? "an integer" : "a string") + " like the list's first value (got " +
                  value_excerpt(v) + "); a list holds strings or integers");
    if (ints && v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad_request(where + " is out of range: integers in filters are int64");
    if (ints)
      c.integers.push_back(v.get<int64_t>());
    else
      c.words.push_back(v.get<std::string>());
  }
  std::sort(c.integers.begin(), c.integers.end());
  c.integers.erase(std::unique(c.integers.begin(), c.integers.end()), c.integers.end());
  std::sort(c.words.begin(), c.words.end());
  c.words.erase(std::unique(c.words.begin(), c.words.end()), c.words.end());
  c.of_integers = ints;
  canon = ints ? json(c.integers) : json(c.words);
}

void Parser::match(const json& j, const std::string& at, Condition& c, json& canon) {
  if (!j.is_object()) bad_request(at + " must be an object such as {\"value\": ...}, {\"any\": [...]}");
  std::string kind;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    if (name == "phrase" || name == "text_any" || name == "prefix")
      unsupported(at + "." + name, "match value, any, except and text are");
    if (name != "value" && name != "any" && name != "except" && name != "text")
      bad_request(at + ": unknown field " + simkit::quoted(name) + " (expected one of value, any, except or text)");
    if (!kind.empty())
      bad_request(at + ": give one of value, any, except or text, not both " + simkit::quoted(kind) + " and " +
                  simkit::quoted(name));
    kind = name;
  }
  if (kind.empty()) bad_request(at + " must hold one of value, any, except or text");
  const json& v = j[kind];
  const std::string sub = at + "." + kind;
  if (kind == "value") {
    if (!v.is_string() && !v.is_boolean() && !v.is_number_integer())
      bad_request(sub + " must be a string, an integer or a bool (got " + std::string(v.type_name()) + ")");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad_request(sub + " is out of range: integers in filters are int64");
    c.kind = Condition::Kind::match_value;
    c.value = v.is_number_integer() ? json(v.get<int64_t>()) : v;
    canon["value"] = c.value;
  } else if (kind == "text") {
    if (!v.is_string()) bad_request(sub + " must be a string (got " + std::string(v.type_name()) + ")");
    c.kind = Condition::Kind::match_text;
    c.words = {v.get<std::string>()};
    canon["text"] = v;
  } else {
    c.kind = kind == "any" ? Condition::Kind::match_any : Condition::Kind::match_except;
    read_list(v, sub, c, canon[kind]);
  }
}

void Parser::range(const json& j, const std::string& at, Condition& c, json& canon) {
  if (!j.is_object()) bad_request(at + " must be an object such as {\"gte\": 1, \"lt\": 5}");
  c.kind = Condition::Kind::range;
  canon = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    double* bound = name == "gt"    ? &c.range.gt
                    : name == "gte" ? &c.range.gte
                    : name == "lt"  ? &c.range.lt
                    : name == "lte" ? &c.range.lte
                                    : nullptr;
    if (!bound) bad_request(at + ": unknown field " + simkit::quoted(name) + " (expected gt, gte, lt or lte)");
    if (it->is_null()) continue;
    if (it->is_string()) bad_request(at + "." + name + " must be a number (datetime ranges are not supported)");
    if (!it->is_number()) bad_request(at + "." + name + " must be a number (got " + std::string(it->type_name()) + ")");
    *bound = it->get<double>();
    canon[name] = *bound;
  }
}

}  // namespace

Filter parse_filter(const nlohmann::json& j, const std::string& where) {
  json canon;
  return Parser().filter(j, where, canon, false);
}

}  // namespace simkit::server
