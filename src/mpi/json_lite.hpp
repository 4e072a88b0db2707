#pragma once
// The little JSON a sharded index's manifest needs (mpi/shard_manifest.cpp): objects, arrays,
// strings and integers, read strictly -- anything else, a repeated key, trailing bytes or a
// number out of range is an error -- so that a damaged manifest is refused, never half-read.
// libsimkit_mpi links nothing but simkit and MPI, hence no JSON library.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace simkit::mpi_detail {

struct JsonValue {
  enum class Kind { object, array, string, integer } kind = Kind::object;
  std::string text;
  int64_t number = 0;
  std::vector<std::pair<std::string, JsonValue>> members;  // an object's, in order
  std::vector<JsonValue> items;                            // an array's

  /// The member `key` of an object, of the kind asked for; Error(invalid_argument) naming the
  /// key when it is missing, of another kind, or (integers) outside [lo, hi].
  const std::string& text_at(std::string_view key) const;
  int64_t int_at(std::string_view key, int64_t lo, int64_t hi) const;
  const std::vector<JsonValue>& array_at(std::string_view key) const;

 private:
  const JsonValue& member(std::string_view key, Kind kind) const;
};

/// The document `text`; Error(invalid_argument) naming the byte where it goes wrong.
JsonValue parse_json(std::string_view text);

/// `s` as a JSON string literal.
std::string json_quoted(std::string_view s);

}  // namespace simkit::mpi_detail
