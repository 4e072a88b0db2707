// One point against a filter, on its payload's text: the reference semantics. Each rule is
// Qdrant's (its payload_storage/condition_checker.rs, read 2026-11-27), restated:
//   - a condition reads the values its path reaches (json_path.hpp); none: match and range fail;
//   - a value that is an array matches when one of its elements does (one level: an array
//     inside it is an element that matches nothing, except `except`, which it satisfies);
//   - match.value: a string equals a string, a bool a bool, an integer an integer (by value; a
//     float such as 1.0 is no integer, nor is an integer past int64);
//   - match.any / except: a string in (not in) a list of strings, an integer in (not in) a list
//     of integers; except also holds for any other non-null value (a float, a bool, an object,
//     a string against integers), never for null;
//   - match.text: the string holds the text as a substring (no full-text index here);
//   - range: a number, read as a double, within every bound given;
//   - is_empty: every value reached is null or [] (none reached: true);
//   - is_null: a value reached is null ([null] is not null: it is an array).

#include <algorithm>

#include "filter.hpp"
#include "payload.hpp"

namespace simkit::server {

namespace {

// The decoded string value of `text` (a JSON string), in a buffer reused by this thread.
const std::string* as_string(std::string_view text) {
  thread_local std::string decoded;
  return decode_json_string(text, decoded) ? &decoded : nullptr;
}

bool in_words(const std::vector<std::string>& words, const std::string& s) {
  return std::binary_search(words.begin(), words.end(), s);
}

bool in_integers(const std::vector<int64_t>& list, int64_t v) {
  return std::binary_search(list.begin(), list.end(), v);
}

// Qdrant's check_match: one value that is not the array a field holds (an element of one may be).
bool scalar_matches(const Condition& c, std::string_view v) {
  const JsonKind kind = kind_of(v);
  switch (c.kind) {
    case Condition::Kind::match_value: {
      if (c.value.is_boolean()) return kind == JsonKind::boolean && (v == "true") == c.value.get<bool>();
      if (c.value.is_string()) {
        const std::string* s = kind == JsonKind::string ? as_string(v) : nullptr;
        return s && *s == c.value.get_ref<const std::string&>();
      }
      const std::optional<int64_t> i = kind == JsonKind::number ? json_integer(v) : std::nullopt;
      return i && *i == c.value.get<int64_t>();
    }
    case Condition::Kind::match_text: {
      const std::string* s = kind == JsonKind::string ? as_string(v) : nullptr;
      return s && s->find(c.words[0]) != std::string::npos;
    }
    case Condition::Kind::match_any: {
      if (c.of_integers) {
        const std::optional<int64_t> i = kind == JsonKind::number ? json_integer(v) : std::nullopt;
        return i && in_integers(c.integers, *i);
      }
      const std::string* s = kind == JsonKind::string ? as_string(v) : nullptr;
      return s && in_words(c.words, *s);
    }
    case Condition::Kind::match_except: {
      if (kind == JsonKind::null || kind == JsonKind::none) return false;
      if (c.of_integers && kind == JsonKind::number) {
        const std::optional<int64_t> i = json_integer(v);
        return !i || !in_integers(c.integers, *i);
      }
      if (!c.of_integers && kind == JsonKind::string) {
        const std::string* s = as_string(v);
        return s && !in_words(c.words, *s);
      }
      return true;
    }
    case Condition::Kind::range: {
      const std::optional<double> x = kind == JsonKind::number ? json_number(v) : std::nullopt;
      return x && c.range.contains(*x);
    }
    default: return false;
  }
}

bool is_empty_array(std::string_view v) {
  return !any_element(v, [](std::string_view) { return true; });
}

}  // namespace

bool Condition::value_matches(std::string_view v) const {
  if (kind_of(v) != JsonKind::array) return scalar_matches(*this, v);
  return any_element(v, [this](std::string_view e) { return scalar_matches(*this, e); });
}

bool condition_holds(const Condition& c, std::string_view payload_text) {
  if (c.kind == Condition::Kind::has_id || c.kind == Condition::Kind::filter) return false;  // not on text alone
  std::vector<std::string_view> values;
  values_at(payload_text, c.path, values);
  switch (c.kind) {
    case Condition::Kind::is_empty:
      return std::all_of(values.begin(), values.end(), [](std::string_view v) {
        return kind_of(v) == JsonKind::null || (kind_of(v) == JsonKind::array && is_empty_array(v));
      });
    case Condition::Kind::is_null:
      return std::any_of(values.begin(), values.end(), [](std::string_view v) { return kind_of(v) == JsonKind::null; });
    case Condition::Kind::nested:
      // Each element of the array is a payload of its own: the filter must hold within one.
      return std::any_of(values.begin(), values.end(), [&c](std::string_view v) {
        return kind_of(v) == JsonKind::object && matches(*c.filter, -1, v, {});
      });
    default: return std::any_of(values.begin(), values.end(), [&c](std::string_view v) { return c.value_matches(v); });
  }
}

bool matches(const Filter& f, int64_t id, std::string_view payload_text, const IdResolver& resolve) {
  const auto holds = [&](const Condition& c) {
    if (c.kind == Condition::Kind::filter) return matches(*c.filter, id, payload_text, resolve);
    if (c.kind != Condition::Kind::has_id) return condition_holds(c, payload_text);
    for (const nlohmann::json& written : c.ids) {
      const std::optional<int64_t> r = resolve ? resolve(written) : std::nullopt;
      if (r && *r == id) return true;
    }
    return false;
  };
  if (!std::all_of(f.must.begin(), f.must.end(), holds)) return false;
  if (!f.should.empty() && !std::any_of(f.should.begin(), f.should.end(), holds)) return false;
  if (f.min_count > 0 && std::count_if(f.min_should.begin(), f.min_should.end(), holds) < f.min_count) return false;
  return std::none_of(f.must_not.begin(), f.must_not.end(), holds);
}

}  // namespace simkit::server
