#pragma once
// A collection's durable state: one SQLite database (WAL journal, synchronous=FULL), which is
// the truth the in-memory index is rebuilt from. Every write is one transaction that also bumps
// the collection's sequence number, so a crash leaves either the whole request or none of it,
// and an index saved at sequence S plus "what changed after S" is the current state.
//
//   meta(key, value)             format, dim, distance, index description, seq, saved index,
//                                payload_indexes (the indexed fields, JSON: {"lang": "keyword"})
//   points(id, seq, vector, payload, uuid)   vector: dim float32 (little-endian); payload: JSON
//                                text; uuid: the point's UUID when its API id is one (point_id.hpp)
//   deleted(id, seq)             ids deleted after the saved index, for its replay
//
// Thread safety: writes are serialised by the caller (Collection's writer mutex); reads use a
// second connection guarded here, so they never wait on a write's fsync.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <simkit/metric.hpp>

#include "point_id.hpp"

namespace simkit::server {

struct CollectionConfig {
  int64_t dim = 0;
  std::string distance;        // as the API names it: Cosine, Dot, Euclid, Manhattan
  std::string index = "flat";  // the description the collection's index is built from
};

struct StoredPoint {
  int64_t id = 0;    // the internal id; -1 in an upsert of a UUID the store has not seen yet
  std::string uuid;  // canonical, when the point's API id is a UUID (then id >= kFirstUuidId)
  std::vector<float> vector;
  std::string payload;  // JSON object text; empty: no payload
};

/// Changes after some sequence number: the points upserted (current vectors) and the ids deleted.
struct ChangesSince {
  std::vector<StoredPoint> upserted;
  std::vector<int64_t> deleted;
};

/// Where the last saved index file is and which sequence number it covers.
struct SavedIndex {
  std::string file;  // a name inside the collection's folder; empty: none
  std::string description;
  int64_t seq = 0;
};

class PointStore {
 public:
  /// Creates a new database at `path` (which must not exist) holding `config`.
  static std::unique_ptr<PointStore> create(const std::filesystem::path& path, const CollectionConfig& config);
  /// Opens an existing database; Error(io) naming the problem when it is not a collection's.
  static std::unique_ptr<PointStore> open(const std::filesystem::path& path);
  ~PointStore();
  PointStore(const PointStore&) = delete;
  PointStore& operator=(const PointStore&) = delete;

  const CollectionConfig& config() const noexcept { return config_; }
  int64_t seq() const noexcept { return seq_; }
  int64_t count();

  /// One durable transaction: replaces or inserts every point. A point named by a UUID gets its
  /// internal id here (the one it has, or the next free one at or above kFirstUuidId), written
  /// into `points`. Returns the new sequence number.
  int64_t upsert(std::vector<StoredPoint>& points);
  /// For a database no one else can see yet (`simkit import` fills it under a temporary name):
  /// until finish_bulk(), commits skip their fsync. finish_bulk() folds the journal into the
  /// database file and syncs it: the file is then complete and durable on its own.
  void begin_bulk();
  void finish_bulk();
  /// One durable transaction: deletes these ids (absent ones are ignored). Returns the ids that
  /// were present, and through `seq_out` the new sequence number.
  std::vector<int64_t> remove(const std::vector<int64_t>& ids, int64_t* seq_out);
  /// One durable transaction: sets the payloads of these points ("" for none); ids not stored
  /// are skipped. Returns the new sequence number.
  int64_t set_payloads(const std::vector<std::pair<int64_t, std::string>>& payloads);
  /// Records the index's desired description (PUT .../index) durably.
  void set_index_description(const std::string& description);

  std::optional<StoredPoint> get(int64_t id, bool with_vector);
  /// The internal id of a stored point named by this (canonical) UUID.
  std::optional<int64_t> id_of_uuid(const std::string& uuid);
  /// Up to `limit` points with id >= `from`, in id order.
  std::vector<StoredPoint> scroll(int64_t from, int64_t limit, bool with_vector);
  /// Every point, in id order, read in one transaction; returns the sequence number it is at.
  int64_t read_all(const std::function<void(StoredPoint&&)>& visit, bool with_vector);
  ChangesSince changes_since(int64_t seq);

  /// The payload indexes' definitions as JSON text ({"field": field_schema, ...}; "" for none).
  std::string payload_indexes();
  /// Records them durably (PUT and DELETE .../index); a restart rebuilds the indexes from them.
  void set_payload_indexes(const std::string& json_text);

  SavedIndex saved_index();
  /// Records that `file` holds the index at `seq`; forgets deletions at or before it.
  void set_saved_index(const SavedIndex& saved);

  /// A consistent copy of the database at `dest`, through SQLite's online backup on the reading
  /// connection: searches never wait for it, writes continue (WAL), and the copy is one point in
  /// time. `dest` is written under a temporary name, fsynced, then renamed.
  void backup_to(const std::filesystem::path& dest);
  /// Checks that `path` is a complete collection database (schema, integrity), and passes each
  /// stored point to `check_point` (which throws to refuse it); returns its config.
  static CollectionConfig check_file(const std::filesystem::path& path,
                                     const std::function<void(const StoredPoint&)>& check_point = {});

 private:
  explicit PointStore(const std::filesystem::path& path);
  void load_meta();

  std::filesystem::path path_;
  sqlite3* writer_ = nullptr;
  sqlite3* reader_ = nullptr;
  std::mutex reader_mutex_;
  CollectionConfig config_;
  int64_t seq_ = 0;
  int64_t next_uuid_id_ = kFirstUuidId;  // writer side: the id the next new UUID gets
};

/// The engine's metric behind an API distance name; Error(invalid_argument) listing the names.
Metric metric_for_distance(const std::string& distance);

}  // namespace simkit::server
