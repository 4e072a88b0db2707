#include "payload_index.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "payload.hpp"

namespace simkit::server {

namespace {

std::optional<FieldType> type_named(const std::string& name) {
  if (name == "keyword") return FieldType::keyword;
  if (name == "integer") return FieldType::integer;
  if (name == "float") return FieldType::floating;
  if (name == "bool") return FieldType::boolean;
  return std::nullopt;
}

FieldType read_type(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string()) bad_request(where + " must be a type name: keyword, integer, float or bool");
  const std::string& name = j.get_ref<const std::string&>();
  if (const std::optional<FieldType> t = type_named(name)) return *t;
  if (name == "geo" || name == "text" || name == "datetime" || name == "uuid")
    bad_request(where + ": " + simkit::quoted(name) +
                " indexes are not supported by this server (keyword, integer, float and bool are)");
  bad_request(where + ": unknown type " + simkit::quoted(name) + " (expected keyword, integer, float or bool)");
}

// Every index's options, and the ones each type adds (Qdrant's *IndexParams).
bool known_option(FieldType type, const std::string& name) {
  if (name == "type" || name == "on_disk" || name == "enable_hnsw") return true;
  switch (type) {
    case FieldType::keyword: return name == "is_tenant";
    case FieldType::integer: return name == "lookup" || name == "range" || name == "is_principal";
    case FieldType::floating: return name == "is_principal";
    case FieldType::boolean: return false;
  }
  return false;
}

// A key's value is past the range's upper bounds (keys come in ascending order).
bool past(const Range& r, double x) { return x >= r.lt || x > r.lte; }

// The smallest key a range scan must start from: below the range's lower bounds, by a margin
// that covers the rounding of an int64 key to the double the bounds compare it as.
double scan_start(const Range& r) {
  double low = -INFINITY;
  if (!std::isnan(r.gt)) low = std::max(low, r.gt);
  if (!std::isnan(r.gte)) low = std::max(low, r.gte);
  return low;
}

template <class Key>
using Entries = std::vector<std::pair<Key, int64_t>>;

// map[key] = (map[key] - removed ids) + added ids, for every key either names; one merge per key.
template <class Map, class Key>
void apply_entries(Map& map, Entries<Key>& removed, Entries<Key>& added) {
  std::sort(removed.begin(), removed.end());
  std::sort(added.begin(), added.end());
  size_t i = 0, j = 0;
  Ids r, a;
  while (i < removed.size() || j < added.size()) {
    const Key key = j == added.size() || (i < removed.size() && removed[i].first < added[j].first) ? removed[i].first
                                                                                                   : added[j].first;
    r.clear();
    a.clear();
    while (i < removed.size() && !(key < removed[i].first)) r.push_back(removed[i++].second);
    while (j < added.size() && !(key < added[j].first)) a.push_back(added[j++].second);
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(key, Ids()).first;
    update(it->second, r, a);
    if (it->second.empty()) map.erase(it);
  }
}

}  // namespace

FieldSchema parse_field_schema(const nlohmann::json& j, const std::string& where) {
  FieldSchema s;
  s.written = j;
  if (j.is_string()) {
    s.type = read_type(j, where);
    return s;
  }
  if (!j.is_object())
    bad_request(where + " must be a type name (keyword, integer, float or bool) or an object {\"type\": ...}");
  if (!j.contains("type")) bad_request(where + ".type is required (keyword, integer, float or bool)");
  s.type = read_type(j["type"], where + ".type");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!known_option(s.type, it.key()))
      bad_request(where + ": unknown field " + simkit::quoted(it.key()) + " for a " + s.type_name() + " index");
    if (it.key() != "type" && !it->is_boolean() && !it->is_null())
      bad_request(where + "." + it.key() + " must be true or false");
  }
  s.lookup = !(j.contains("lookup") && j["lookup"].is_boolean() && !j["lookup"].get<bool>());
  s.range = !(j.contains("range") && j["range"].is_boolean() && !j["range"].get<bool>());
  return s;
}

nlohmann::json FieldSchema::params() const { return written.is_object() ? written : nlohmann::json(); }

const char* FieldSchema::type_name() const {
  switch (type) {
    case FieldType::keyword: return "keyword";
    case FieldType::integer: return "integer";
    case FieldType::floating: return "float";
    case FieldType::boolean: return "bool";
  }
  return "keyword";
}

struct FieldIndex::Extracted {
  std::vector<std::string> words;
  std::vector<int64_t> integers;
  std::vector<double> numbers;
  bool kept = false, other = false, nonempty = false, null = false;
};

void FieldIndex::extract(std::string_view text, Extracted& out) const {
  thread_local std::vector<std::string_view> values;
  values.clear();
  values_at(text, path_, values);
  std::string decoded;
  const auto keep = [&](std::string_view e) {
    const JsonKind kind = kind_of(e);
    bool kept = false;
    if (kind == JsonKind::null) return false;  // satisfies no match or range condition
    if (schema_.type == FieldType::keyword && kind == JsonKind::string && decode_json_string(e, decoded)) {
      out.words.push_back(decoded);
      kept = true;
    } else if (schema_.type == FieldType::integer && kind == JsonKind::number) {
      const std::optional<int64_t> i = json_integer(e);
      if (i) out.integers.push_back(*i);
      kept = i.has_value();
    } else if (schema_.type == FieldType::floating && kind == JsonKind::number) {
      const std::optional<double> x = json_number(e);
      if (x) out.numbers.push_back(*x);
      kept = x.has_value();
    } else if (schema_.type == FieldType::boolean && kind == JsonKind::boolean) {
      out.integers.push_back(e == "true" ? 1 : 0);
      kept = true;
    }
    (kept ? out.kept : out.other) = true;
    return false;
  };
  for (std::string_view v : values) {
    const JsonKind kind = kind_of(v);
    if (kind == JsonKind::null) out.null = true;
    if (kind == JsonKind::array) {
      out.nonempty = any_element(v, [](std::string_view) { return true; }) || out.nonempty;
      any_element(v, keep);
    } else {
      out.nonempty = out.nonempty || kind != JsonKind::null;
      keep(v);
    }
  }
  normalize(out.integers);
  std::sort(out.words.begin(), out.words.end());
  out.words.erase(std::unique(out.words.begin(), out.words.end()), out.words.end());
  std::sort(out.numbers.begin(), out.numbers.end());
  out.numbers.erase(std::unique(out.numbers.begin(), out.numbers.end()), out.numbers.end());
}

void FieldIndex::append(int64_t id, std::string_view text) {
  Extracted e;
  extract(text, e);
  for (std::string& w : e.words) words_[std::move(w)].push_back(id);
  for (int64_t i : e.integers) integers_[i].push_back(id);
  for (double x : e.numbers) numbers_[x].push_back(id);
  if (e.kept) kept_.push_back(id);
  if (e.other) others_.push_back(id);
  if (e.nonempty) nonempty_.push_back(id);
  if (e.null) nulls_.push_back(id);
}

void FieldIndex::apply(const std::vector<PayloadChange>& changes) {
  Entries<std::string> words_out, words_in;
  Entries<int64_t> integers_out, integers_in;
  Entries<double> numbers_out, numbers_in;
  Ids flags_out[4], flags_in[4];  // kept, other, nonempty, null
  Extracted e;
  const auto gather = [&](int64_t id, std::string_view text, Entries<std::string>& words, Entries<int64_t>& integers,
                          Entries<double>& numbers, Ids* flags) {
    e = Extracted();
    extract(text, e);
    for (std::string& w : e.words) words.emplace_back(std::move(w), id);
    for (int64_t i : e.integers) integers.emplace_back(i, id);
    for (double x : e.numbers) numbers.emplace_back(x, id);
    const bool set[4] = {e.kept, e.other, e.nonempty, e.null};
    for (int f = 0; f < 4; ++f)
      if (set[f]) flags[f].push_back(id);
  };
  for (const PayloadChange& c : changes) {
    gather(c.id, c.before, words_out, integers_out, numbers_out, flags_out);
    if (c.live) gather(c.id, c.after, words_in, integers_in, numbers_in, flags_in);
  }
  apply_entries(words_, words_out, words_in);
  apply_entries(integers_, integers_out, integers_in);
  apply_entries(numbers_, numbers_out, numbers_in);
  Ids* sets[4] = {&kept_, &others_, &nonempty_, &nulls_};
  for (int f = 0; f < 4; ++f) {
    normalize(flags_out[f]);
    normalize(flags_in[f]);
    update(*sets[f], flags_out[f], flags_in[f]);
  }
}

template <class Map>
void FieldIndex::add_where(IdGather& out, const Map& map,
                           const std::function<bool(const typename Map::key_type&)>& keep) const {
  for (const auto& [key, ids] : map)
    if (keep(key)) out.add(ids);
}

void FieldIndex::add_range(IdGather& out, const Range& r) const {
  const double low = scan_start(r);
  const auto scan = [&](const auto& map, auto start) {
    for (auto it = start; it != map.end(); ++it) {
      const double x = static_cast<double>(it->first);
      if (past(r, x)) break;
      if (r.contains(x)) out.add(it->second);
    }
  };
  if (schema_.type == FieldType::floating) {
    scan(numbers_, low == -INFINITY ? numbers_.begin() : numbers_.lower_bound(low));
  } else {
    // Below -2^63 every key qualifies; the margin of 4096 covers the rounding of keys near 2^63
    // to doubles (spacing 2048 there), and contains() skips what it lets in.
    const double start = std::max(std::floor(low) - 4096.0, -9.2e18);
    scan(integers_, low < -9.2e18 ? integers_.begin()
                                  : integers_.lower_bound(start >= 9.2e18 ? std::numeric_limits<int64_t>::max()
                                                                          : static_cast<int64_t>(start)));
  }
}

bool FieldIndex::answers(const Condition& c) const {
  using K = Condition::Kind;
  const FieldType t = schema_.type;
  if (c.kind == K::range) return t != FieldType::integer || schema_.range;
  if (c.kind != K::match_value && c.kind != K::match_any && c.kind != K::match_except && c.kind != K::match_text)
    return false;
  if (t == FieldType::integer) return schema_.lookup;
  // A double cannot tell the integer 1 from 1.0, which integer equality must.
  if (t == FieldType::floating) return c.kind == K::match_value ? !c.value.is_number_integer() : !c.of_integers;
  return true;
}

std::optional<Ids> FieldIndex::kept_matches(const Condition& c, const Ids* within) const {
  using K = Condition::Kind;
  const FieldType t = schema_.type;
  if (!answers(c)) return std::nullopt;
  IdGather out(within);
  const auto posting = [&out](const auto& map, const auto& key) {
    if (const auto it = map.find(key); it != map.end()) out.add(it->second);
  };
  const auto listed = [&c](const auto& key) {
    if constexpr (std::is_same_v<std::decay_t<decltype(key)>, std::string>)
      return std::binary_search(c.words.begin(), c.words.end(), key);
    else
      return std::binary_search(c.integers.begin(), c.integers.end(), key);
  };
  const bool words = t == FieldType::keyword && !c.of_integers, integers = t == FieldType::integer && c.of_integers;
  switch (c.kind) {
    case K::range:
      if (t == FieldType::floating || t == FieldType::integer) add_range(out, c.range);
      break;  // strings and bools are in no range
    case K::match_value:
      if (t == FieldType::keyword && c.value.is_string()) posting(words_, c.value.get_ref<const std::string&>());
      if (t == FieldType::integer && c.value.is_number_integer()) posting(integers_, c.value.get<int64_t>());
      if (t == FieldType::boolean && c.value.is_boolean()) posting(integers_, int64_t{c.value.get<bool>() ? 1 : 0});
      break;  // otherwise: a kept value is of another type than the value, never equal
    case K::match_any:
      if (words) add_where(out, words_, [&](const std::string& w) { return listed(w); });
      if (integers) add_where(out, integers_, [&](int64_t i) { return listed(i); });
      break;
    case K::match_except:
      if (words) add_where(out, words_, [&](const std::string& w) { return !listed(w); });
      if (integers) add_where(out, integers_, [&](int64_t i) { return !listed(i); });
      if (!words && !integers) out.add(kept_);  // every kept value is of another type than the list's
      break;
    case K::match_text:
      if (t == FieldType::keyword)
        add_where(out, words_, [&](const std::string& w) { return w.find(c.words[0]) != std::string::npos; });
      break;
    default: return std::nullopt;
  }
  return out.done();
}

size_t FieldIndex::estimate(const Condition& c) const {
  size_t n = kept_.size();
  if (c.kind == Condition::Kind::match_value) {
    if (schema_.type == FieldType::keyword && c.value.is_string()) {
      const auto it = words_.find(c.value.get_ref<const std::string&>());
      n = it == words_.end() ? 0 : it->second.size();
    } else if (schema_.type == FieldType::integer && c.value.is_number_integer()) {
      const auto it = integers_.find(c.value.get<int64_t>());
      n = it == integers_.end() ? 0 : it->second.size();
    }
  } else if (c.kind == Condition::Kind::match_any && schema_.type == FieldType::keyword && !c.of_integers) {
    n = 0;
    for (const std::string& w : c.words)
      if (const auto it = words_.find(w); it != words_.end()) n += it->second.size();
  }
  return n + others_.size();
}

void PayloadIndexes::apply(const std::vector<PayloadChange>& changes) {
  Ids gone, added;
  for (const PayloadChange& c : changes) (c.live ? added : gone).push_back(c.id);
  normalize(gone);
  normalize(added);
  update(live_, gone, added);
  for (auto& [key, index] : fields_) index->apply(changes);
}

const FieldIndex* PayloadIndexes::find(const std::string& key) const {
  const auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : it->second.get();
}

std::unique_ptr<FieldIndex> PayloadIndexes::build(const JsonPath& path, const FieldSchema& schema, const Ids& live,
                                                  const std::function<std::string_view(int64_t)>& text_of) {
  auto index = std::make_unique<FieldIndex>(path, schema);
  for (int64_t id : live) index->append(id, text_of(id));
  return index;
}

void PayloadIndexes::install(std::unique_ptr<FieldIndex> index) {
  const std::string key = index->path().text();
  fields_[key] = std::move(index);
}

nlohmann::json PayloadIndexes::schema() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, index] : fields_) {
    nlohmann::json& info = out[key];
    info["data_type"] = index->schema().type_name();
    if (const nlohmann::json params = index->schema().params(); !params.is_null()) info["params"] = params;
    info["points"] = index->points();
  }
  return out;
}

nlohmann::json PayloadIndexes::definitions() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, index] : fields_) out[key] = index->schema().written;
  return out;
}

}  // namespace simkit::server
