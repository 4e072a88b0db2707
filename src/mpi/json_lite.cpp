// src/mpi/json_lite.hpp: a strict reader and a string writer for the manifest's JSON.

#include "mpi/json_lite.hpp"

#include <cstdint>
#include <cstdio>

#include <simkit/error.hpp>

namespace simkit::mpi_detail {

namespace {

constexpr int kMaxDepth = 8;  // the manifest nests three deep

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  JsonValue document() {
    JsonValue v = value(0);
    space();
    if (at_ != s_.size()) fail("unexpected bytes after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::invalid_argument, "malformed JSON at byte " + std::to_string(at_) + ": " + why);
  }
  void space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\r' || s_[at_] == '\t')) ++at_;
  }
  bool take(char c) {
    space();
    if (at_ < s_.size() && s_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nested too deep");
    space();
    if (at_ >= s_.size()) fail("the document ends early");
    const char c = s_[at_];
    JsonValue v;
    if (c == '{') {
      ++at_;
      if (take('}')) return v;
      do {
        space();
        std::string key = string();
        for (const auto& m : v.members)
          if (m.first == key) fail("key \"" + key + "\" is repeated");
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++at_;
      v.kind = JsonValue::Kind::array;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = JsonValue::Kind::string;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = JsonValue::Kind::integer;
      v.number = integer();
    } else {
      fail("expected an object, array, string or integer");
    }
    return v;
  }

  std::string string() {
    if (at_ >= s_.size() || s_[at_] != '"') fail("expected a string");
    ++at_;
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c == '\\') {
        if (at_ >= s_.size()) break;
        const char e = s_[at_++];
        if (e == 'n')
          c = '\n';
        else if (e == 't')
          c = '\t';
        else if (e == '"' || e == '\\' || e == '/')
          c = e;
        else if (e == 'u')
          c = ascii_escape();
        else
          fail("an escape this reader does not take");
      }
      out += c;
    }
    if (at_ >= s_.size()) fail("a string is not closed");
    ++at_;
    return out;
  }

  /// The four hex digits after "\\u", for the ASCII characters json_quoted escapes that way.
  char ascii_escape() {
    if (at_ + 4 > s_.size()) fail("a \\u escape is cut short");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[at_++];
      const int digit = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
      if (digit < 0) fail("a \\u escape with a non-hex digit");
      v = v * 16 + unsigned(digit);
    }
    if (v >= 0x80) fail("a \\u escape beyond ASCII");
    return static_cast<char>(v);
  }

  int64_t integer() {
    const bool negative = s_[at_] == '-';
    if (negative) ++at_;
    const size_t first = at_;
    uint64_t v = 0;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') {
      const uint64_t digit = uint64_t(s_[at_++] - '0');
      if (v > (uint64_t(INT64_MAX) - digit) / 10) fail("a number out of range");
      v = v * 10 + digit;
    }
    if (at_ == first) fail("a number without digits");
    if (at_ < s_.size() && (s_[at_] == '.' || s_[at_] == 'e' || s_[at_] == 'E'))
      fail("a number that is not an integer");
    return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  }

  std::string_view s_;
  size_t at_ = 0;
};

}  // namespace

const JsonValue& JsonValue::member(std::string_view key, Kind want) const {
  static const char* const kNames[] = {"an object", "an array", "a string", "an integer"};
  if (kind != Kind::object) throw Error(ErrorCode::invalid_argument, "expected an object");
  for (const auto& m : members)
    if (m.first == key) {
      if (m.second.kind != want)
        throw Error(ErrorCode::invalid_argument,
                    "\"" + std::string(key) + "\" must be " + kNames[static_cast<int>(want)]);
      return m.second;
    }
  throw Error(ErrorCode::invalid_argument, "\"" + std::string(key) + "\" is missing");
}

const std::string& JsonValue::text_at(std::string_view key) const { return member(key, Kind::string).text; }

int64_t JsonValue::int_at(std::string_view key, int64_t lo, int64_t hi) const {
  const int64_t v = member(key, Kind::integer).number;
  if (v < lo || v > hi)
    throw Error(ErrorCode::invalid_argument, "\"" + std::string(key) + "\" = " + std::to_string(v) + " is outside [" +
                                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

const std::vector<JsonValue>& JsonValue::array_at(std::string_view key) const { return member(key, Kind::array).items; }

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace simkit::mpi_detail
