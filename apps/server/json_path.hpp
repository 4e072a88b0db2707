#pragma once
// Payload paths, Qdrant's syntax, and the values they reach in a payload's compact JSON text
// (payload.hpp), read without building a tree.
//
//   lang                   the member "lang" of the payload object
//   country.name           a member of a member (the step needs an object: it does not look
//                          through an array, as in Qdrant; write country[].name for that)
//   cities[].name          each element of the array "cities", then its member "name"
//   cities[0].name         one element
//   "a.b"                  a key holding dots or brackets, quoted (it cannot hold a quote)
//
// A plain key is any run of characters other than '.', '[' and ']' that does not start with a
// quote, so every path Qdrant accepts means the same here, and a key Qdrant would want quoted
// (spaces, non-ASCII punctuation) is also taken as it is.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simkit::server {

struct PathStep {
  enum class Kind { key, each, index };
  Kind kind = Kind::key;
  std::string key;      // Kind::key
  size_t position = 0;  // Kind::index
};

struct JsonPath {
  std::vector<PathStep> steps;  // the first is always a key
  /// The canonical text: equal paths have equal texts (a payload index is found by it).
  std::string text() const;
};

/// The path `text` spells, or nullopt when it spells none (empty, "a..b", "a[x]", ".a", an
/// unclosed quote, a path starting with '[').
std::optional<JsonPath> parse_json_path(std::string_view text);

/// Appends the text of every value `path` reaches in the JSON object `object_text` (Qdrant's
/// rule: a key step reads an object's member, `[]` visits every element of an array, `[n]` one;
/// a step that meets anything else reaches nothing). An array reached at the end is one value
/// (the conditions look at its elements). Reads nothing past the text; malformed text reaches
/// nothing.
void values_at(std::string_view object_text, const JsonPath& path, std::vector<std::string_view>& out);

/// The kind of the JSON value starting at text[0].
enum class JsonKind { none, null, boolean, number, string, array, object };
JsonKind kind_of(std::string_view value_text);

/// Calls visit(element_text) for each element of the JSON array `array_text` until one returns
/// true; returns whether one did. Malformed text ends the walk.
template <class Visit>
bool any_element(std::string_view array_text, Visit&& visit);

/// One past the end of the array element (or member value) starting at text[at], or 0 when the
/// text is malformed there; `at` is moved past leading whitespace.
size_t element_end(std::string_view text, size_t& at);

template <class Visit>
bool any_element(std::string_view t, Visit&& visit) {
  if (t.size() < 2 || t.front() != '[') return false;
  size_t i = 1;
  for (;;) {
    const size_t end = element_end(t, i);
    if (end == 0) return false;  // "]" or malformed
    if (visit(t.substr(i, end - i))) return true;
    i = end;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r')) ++i;
    if (i >= t.size() || t[i] != ',') return false;
    ++i;
  }
}

}  // namespace simkit::server
