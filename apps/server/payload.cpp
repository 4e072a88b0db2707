#include "payload.hpp"

#include <charconv>

#include <simkit/error.hpp>

#include "api_error.hpp"

namespace simkit::server {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

// One past the closing quote of the string whose opening quote is t[i], or t.size() + 1.
size_t skip_string(std::string_view t, size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\')
      ++i;
    else if (t[i] == '"')
      return i + 1;
  }
  return t.size() + 1;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits at t[i..i+3] as a code unit, or -1.
long hex4(std::string_view t, size_t i) {
  if (i + 4 > t.size()) return -1;
  long v = 0;
  for (size_t j = i; j < i + 4; ++j) {
    const int d = hex_digit(t[j]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string payload_text(const nlohmann::json& payload, const PayloadLimits& limits, const std::string& where) {
  // The body's own depth limit already bounds the tree, so printing it cannot recurse deeply.
  std::string text = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  const JsonShape shape = measure_json(text);
  if (shape.depth > limits.max_depth)
    bad_request(where + " nests arrays and objects " + std::to_string(shape.depth) + " deep; the limit is " +
                std::to_string(limits.max_depth) + " (--max-payload-depth)");
  if (shape.values > limits.max_values)
    bad_request(where + " holds " + std::to_string(shape.values) + " values; the limit is " +
                std::to_string(limits.max_values) + " per point (--max-payload-values)");
  if (static_cast<int64_t>(text.size()) > limits.max_bytes)
    bad_request(where + " is " + std::to_string(text.size()) + " bytes as compact JSON; the limit is " +
                std::to_string(limits.max_bytes) + " per point (--max-payload-kb)");
  return text;
}

void check_stored_payload(int64_t id, const std::string& text, const PayloadLimits& limits) {
  const std::string where = "point " + std::to_string(id) + "'s payload";
  const JsonShape shape = measure_json(text);  // before parsing: a deep text is refused unbuilt
  if (shape.depth > limits.max_depth || shape.values > limits.max_values ||
      static_cast<int64_t>(text.size()) > limits.max_bytes)
    throw Error(ErrorCode::io, where + " exceeds this server's payload limits (depth " + std::to_string(shape.depth) +
                                   ", " + std::to_string(shape.values) + " values, " + std::to_string(text.size()) +
                                   " bytes)");
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.dump() != text)
    throw Error(ErrorCode::io, where + " is not a JSON object in compact form: " + simkit::quoted(text));
}

size_t skip_json_value(std::string_view t, size_t at) {
  size_t i = skip_space(t, at);
  if (i >= t.size()) return t.size() + 1;
  if (t[i] == '"') return skip_string(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int64_t depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return t.size() + 1;
  }
  while (i < t.size() && t[i] != ',' && t[i] != ']' && t[i] != '}' && t[i] != ':' && !is_space(t[i])) ++i;
  return i;
}

bool decode_json_string(std::string_view t, std::string& out) {
  out.clear();
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') return false;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    const char c = t[i];
    if (c == '"' || static_cast<unsigned char>(c) < 0x20) return false;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i + 1 >= t.size()) return false;
    switch (t[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        long cp = hex4(t, i + 1);
        if (cp < 0 || i + 5 > t.size() - 1) return false;
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low half must follow
          if (i + 7 > t.size() - 1 || t[i + 1] != '\\' || t[i + 2] != 'u') return false;
          const long low = hex4(t, i + 3);
          if (low < 0xDC00 || low > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return false;
        }
        append_utf8(out, static_cast<unsigned long>(cp));
        break;
      }
      default: return false;
    }
  }
  return true;
}

std::string_view payload_field(std::string_view t, std::string_view key) {
  std::string_view found;
  std::string decoded;
  size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return {};
  i = skip_space(t, i + 1);
  if (i < t.size() && t[i] == '}') return {};
  while (i < t.size()) {
    if (t[i] != '"') return {};
    const size_t key_end = skip_string(t, i);
    if (key_end > t.size()) return {};
    const std::string_view raw = t.substr(i + 1, key_end - i - 2);
    const bool same = raw.find('\\') == std::string_view::npos
                          ? raw == key
                          : decode_json_string(t.substr(i, key_end - i), decoded) && decoded == key;
    i = skip_space(t, key_end);
    if (i >= t.size() || t[i] != ':') return {};
    const size_t value_at = skip_space(t, i + 1);
    const size_t value_end = skip_json_value(t, value_at);
    if (value_end > t.size() || value_end == value_at) return {};
    if (same) found = t.substr(value_at, value_end - value_at);
    i = skip_space(t, value_end);
    if (i >= t.size()) return {};
    if (t[i] == '}') return found;
    if (t[i] != ',') return {};
    i = skip_space(t, i + 1);
  }
  return {};
}

std::optional<int64_t> json_integer(std::string_view t) {
  if (t.find_first_of(".eE") != std::string_view::npos) return std::nullopt;
  int64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> json_number(std::string_view t) {
  double v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

}  // namespace simkit::server
