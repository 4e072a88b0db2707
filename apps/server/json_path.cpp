#include "json_path.hpp"

#include <charconv>

#include "payload.hpp"

namespace simkit::server {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A plain key needs no quotes when it is not empty, does not start with a quote and holds no
// '.', '[' or ']'.
bool plain_key(std::string_view key) {
  return !key.empty() && key.front() != '"' && key.find_first_of(".[]") == std::string_view::npos;
}

// The values `steps[s..]` reach from `value`. Each step descends one level into the value, so
// the recursion is as deep as the payload, which its limits bound (request_limits.hpp).
void walk(std::string_view value, const std::vector<PathStep>& steps, size_t s, std::vector<std::string_view>& out) {
  if (s == steps.size()) {
    out.push_back(value);
    return;
  }
  const PathStep& step = steps[s];
  if (step.kind == PathStep::Kind::key) {
    if (kind_of(value) != JsonKind::object) return;
    const std::string_view member = payload_field(value, step.key);
    if (!member.empty()) walk(member, steps, s + 1, out);
    return;
  }
  if (kind_of(value) != JsonKind::array) return;
  size_t n = 0;
  any_element(value, [&](std::string_view element) {
    if (step.kind == PathStep::Kind::each) {
      walk(element, steps, s + 1, out);
      return false;
    }
    if (n++ != step.position) return false;
    walk(element, steps, s + 1, out);
    return true;
  });
}

}  // namespace

std::string JsonPath::text() const {
  std::string t;
  for (const PathStep& step : steps) {
    if (step.kind == PathStep::Kind::each) {
      t += "[]";
    } else if (step.kind == PathStep::Kind::index) {
      t += '[' + std::to_string(step.position) + ']';
    } else {
      if (!t.empty()) t += '.';
      t += plain_key(step.key) ? step.key : '"' + step.key + '"';
    }
  }
  return t;
}

std::optional<JsonPath> parse_json_path(std::string_view t) {
  JsonPath path;
  size_t i = 0;
  while (i < t.size() || path.steps.empty()) {
    const bool first = path.steps.empty();
    if (!first && t[i] == '[') {
      const size_t close = t.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      PathStep step;
      if (close == i + 1) {
        step.kind = PathStep::Kind::each;
      } else {
        step.kind = PathStep::Kind::index;
        const auto r = std::from_chars(t.data() + i + 1, t.data() + close, step.position);
        if (r.ec != std::errc() || r.ptr != t.data() + close) return std::nullopt;
      }
      path.steps.push_back(std::move(step));
      i = close + 1;
      continue;
    }
    if (!first && t[i++] != '.') return std::nullopt;
    PathStep step;
    if (i < t.size() && t[i] == '"') {
      const size_t close = t.find('"', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      step.key = std::string(t.substr(i + 1, close - i - 1));
      i = close + 1;
    } else {
      const size_t end = std::min(t.find_first_of(".[]", i), t.size());
      if (end == i) return std::nullopt;
      step.key = std::string(t.substr(i, end - i));
      i = end;
    }
    path.steps.push_back(std::move(step));
  }
  return path;
}

void values_at(std::string_view object_text, const JsonPath& path, std::vector<std::string_view>& out) {
  walk(object_text, path.steps, 0, out);
}

JsonKind kind_of(std::string_view v) {
  if (v.empty()) return JsonKind::none;
  switch (v.front()) {
    case '{': return JsonKind::object;
    case '[': return JsonKind::array;
    case '"': return JsonKind::string;
    case 'n': return JsonKind::null;
    case 't':
    case 'f': return JsonKind::boolean;
    default: return JsonKind::number;
  }
}

size_t element_end(std::string_view t, size_t& at) {
  while (at < t.size() && is_space(t[at])) ++at;
  if (at >= t.size() || t[at] == ']') return 0;
  const size_t end = skip_json_value(t, at);
  return end > t.size() || end == at ? 0 : end;
}

}  // namespace simkit::server
