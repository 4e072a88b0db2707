#pragma once
// Payload indexes: per indexed field, the ids of the points holding each value, so that a filter
// condition on the field becomes a set lookup (filter_eval.hpp) instead of a walk over every
// payload's text. Qdrant's field types (PUT /collections/{name}/index, docs/API.md):
//
//   keyword   strings: value -> ids (a hash map)       match value / any / except / text
//   integer   int64 integers: value -> ids, ordered     match value / any / except, range
//   float     every number as a double, ordered         range
//   bool      true / false -> ids                      match value
//
// An index never changes an answer, only its cost: it answers a condition exactly from the
// values it keeps, and a point holding values it does not keep at that path (a float in an
// integer field, a string in a float field, an object) is listed in others(), which the
// evaluator tests on its payload text. It also keeps which points hold a non-empty or a null
// value at the path, which answers is_empty and is_null. A value that is an array contributes
// each element (an array inside it is an "other").
//
// Maintained under the collection's state lock: built in one pass over the points (ids
// ascending: appends only), then changed by each write's batch (one merge per touched set).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "filter.hpp"
#include "id_set.hpp"
#include "json_path.hpp"

namespace simkit::server {

enum class FieldType { keyword, integer, floating, boolean };

/// Qdrant's field_schema: a type name, or an object {"type": name, ...} whose other members are
/// that type's options (integer: "lookup", "range" -- false turns that use of the index off; the
/// rest, such as "on_disk" or "is_tenant", are accepted and change nothing here).
struct FieldSchema {
  FieldType type = FieldType::keyword;
  bool lookup = true;             // integer: answer match conditions
  bool range = true;              // integer: answer range conditions
  nlohmann::json written;         // the schema as given (kept durably, read back at startup)
  nlohmann::json params() const;  // payload_schema's "params": the object form, or null
  const char* type_name() const;  // "keyword", "integer", "float", "bool"
};

/// Reads a field_schema; ApiError(400) naming `where` for an unknown or unsupported type or option.
FieldSchema parse_field_schema(const nlohmann::json& j, const std::string& where);

/// One point's payload before and after a write ("" for none); `live`: the point exists after.
struct PayloadChange {
  int64_t id = 0;
  std::string_view before;
  std::string_view after;
  bool live = true;
};

class FieldIndex {
 public:
  FieldIndex(JsonPath path, FieldSchema schema) : path_(std::move(path)), schema_(std::move(schema)) {}

  /// Adds a point whose id is above every id already added (the build's pass).
  void append(int64_t id, std::string_view payload_text);
  /// Applies a write's changes (ids unique within the batch).
  void apply(const std::vector<PayloadChange>& changes);

  /// Whether kept_matches(c) can answer `c` (a match or range condition on this field); cheap.
  bool answers(const Condition& c) const;
  /// The ids whose kept values satisfy `c` (a match or range condition on this field), among
  /// `within` when given, or nullopt when this index cannot tell (a float index asked for integer
  /// equality). Points in others() are not included: they must still be tested.
  std::optional<Ids> kept_matches(const Condition& c, const Ids* within = nullptr) const;
  /// About how many ids kept_matches(c) returns, to order conditions; cheap.
  size_t estimate(const Condition& c) const;

  const Ids& others() const { return others_; }
  const Ids& nonempty() const { return nonempty_; }                      // a value at the path other than null and []
  const Ids& nulls() const { return nulls_; }                            // a null value at the path
  int64_t points() const { return static_cast<int64_t>(kept_.size()); }  // points with a kept value
  const FieldSchema& schema() const { return schema_; }
  const JsonPath& path() const { return path_; }

 private:
  struct Extracted;
  void extract(std::string_view text, Extracted& out) const;
  template <class Map>
  void add_where(IdGather& out, const Map& map, const std::function<bool(const typename Map::key_type&)>& keep) const;
  void add_range(IdGather& out, const Range& r) const;

  JsonPath path_;
  FieldSchema schema_;
  std::unordered_map<std::string, Ids> words_;  // keyword
  std::map<int64_t, Ids> integers_;             // integer; bool as 0 / 1
  std::map<double, Ids> numbers_;               // float
  Ids kept_, others_, nonempty_, nulls_;
};

/// A collection's filter-side state: the ids of its live points (the universe must_not and
/// is_empty complement against) and its field indexes, by the canonical text of their path.
class PayloadIndexes {
 public:
  const Ids& live() const { return live_; }
  /// Every live id, ascending, at load; the field indexes are built afterwards (install).
  void reset(Ids live) {
    live_ = std::move(live);
    fields_.clear();
  }
  /// A write: live ids and every field index follow it.
  void apply(const std::vector<PayloadChange>& changes);

  const FieldIndex* find(const std::string& key) const;
  /// Builds the index of `path` over the live points (text_of(id): the payload text, "" for none).
  static std::unique_ptr<FieldIndex> build(const JsonPath& path, const FieldSchema& schema, const Ids& live,
                                           const std::function<std::string_view(int64_t)>& text_of);
  void install(std::unique_ptr<FieldIndex> index);
  bool drop(const std::string& key) { return fields_.erase(key) > 0; }

  /// GET /collections/{name}'s payload_schema: {"lang": {"data_type": "keyword", "points": N}}.
  nlohmann::json schema() const;
  /// The fields and their schemas as written, what the store keeps: {"lang": "keyword", ...}.
  nlohmann::json definitions() const;

 private:
  Ids live_;
  std::map<std::string, std::unique_ptr<FieldIndex>> fields_;
};

}  // namespace simkit::server
