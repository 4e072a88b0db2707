#include "point_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include <simkit/error.hpp>

namespace simkit::server {

namespace {

constexpr const char* kFormat = "simkit-collection-1";

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  throw Error(ErrorCode::io, "collection database: " + what + ": " + (db ? sqlite3_errmsg(db) : "cannot open"));
}

void exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string m = message ? message : "unknown error";
    sqlite3_free(message);
    throw Error(ErrorCode::io, std::string("collection database: ") + sql + ": " + m);
  }
}

// A prepared statement, finalised on every path out.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail(db, std::string("prepare ") + sql);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind_blob(int i, const void* p, size_t bytes) {
    check(sqlite3_bind_blob64(stmt_, i, p, bytes, SQLITE_STATIC));
    return *this;
  }
  Statement& bind_null(int i) {
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }
  /// True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, "step");
  }
  void run() {
    step();
    reset();
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  const void* blob(int col, size_t* bytes) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    *bytes = static_cast<size_t>(sqlite3_column_bytes(stmt_, col));
    return p;
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if anything throws before commit().
class Transaction {
 public:
  explicit Transaction(sqlite3* db, const char* begin = "BEGIN IMMEDIATE") : db_(db) { exec(db, begin); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

sqlite3* open_connection(const std::filesystem::path& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw Error(ErrorCode::io, "cannot open collection database " + path.string() + ": " + m);
  }
  sqlite3_busy_timeout(db, 10000);
  return db;
}

void set_meta(sqlite3* db, const std::string& key, const std::string& value) {
  Statement(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)").bind(1, key).bind(2, value).run();
}

std::vector<float> blob_vector(const Statement& s, int col, int64_t dim) {
  size_t bytes = 0;
  const void* p = s.blob(col, &bytes);
  if (bytes != static_cast<size_t>(dim) * sizeof(float))
    throw Error(ErrorCode::io, "collection database: a stored vector has " + std::to_string(bytes) +
                                   " bytes, expected " + std::to_string(dim * 4));
  std::vector<float> v(static_cast<size_t>(dim));
  std::memcpy(v.data(), p, bytes);
  return v;
}

void fsync_path(const std::filesystem::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

bool has_uuid_column(sqlite3* db) {
  Statement s(db, "SELECT count(*) FROM pragma_table_info('points') WHERE name = 'uuid'");
  s.step();
  return s.integer(0) == 1;
}

// Databases written before UUID ids (the same format otherwise) gain the column on open.
void add_uuid_column(sqlite3* db) {
  if (has_uuid_column(db)) return;
  Transaction t(db);
  exec(db, "ALTER TABLE points ADD COLUMN uuid TEXT; CREATE UNIQUE INDEX points_by_uuid ON points(uuid);");
  t.commit();
}

CollectionConfig read_config(sqlite3* db, const std::string& where, int64_t* seq) {
  std::string format, dim, distance, index, seqtext;
  try {
    Statement s(db, "SELECT key, value FROM meta");
    while (s.step()) {
      const std::string key = s.text(0);
      if (key == "format") format = s.text(1);
      if (key == "dim") dim = s.text(1);
      if (key == "distance") distance = s.text(1);
      if (key == "index") index = s.text(1);
      if (key == "seq") seqtext = s.text(1);
    }
  } catch (const Error&) {
    throw Error(ErrorCode::io, where + " is not a simkit collection database (no readable meta table)");
  }
  if (format != kFormat)
    throw Error(ErrorCode::io, where + " is not a simkit collection database (format " + simkit::quoted(format) + ")");
  CollectionConfig c;
  try {
    c.dim = std::stoll(dim);
    *seq = std::stoll(seqtext);
  } catch (const std::exception&) {
    throw Error(ErrorCode::io, where + ": its meta table is damaged (dim " + simkit::quoted(dim) + ", seq " +
                                   simkit::quoted(seqtext) + ")");
  }
  c.distance = distance;
  c.index = index.empty() ? "flat" : index;
  metric_for_distance(c.distance);
  if (c.dim < 1 || c.dim > 65536)
    throw Error(ErrorCode::io, where + ": its meta table is damaged (dim " + simkit::quoted(dim) + ")");
  return c;
}

}  // namespace

Metric metric_for_distance(const std::string& distance) {
  if (distance == "Cosine") return Metric::cosine;
  if (distance == "Dot") return Metric::dot;
  if (distance == "Euclid") return Metric::l2;
  if (distance == "Manhattan") return Metric::l1;
  throw Error(ErrorCode::invalid_argument,
              "unknown distance " + simkit::quoted(distance) + " (expected one of: Cosine, Dot, Euclid, Manhattan)");
}

PointStore::PointStore(const std::filesystem::path& path) : path_(path) {}

// sqlite3_close_v2: a statement still open (an exception unwinding past it) defers the close
// to its finalisation instead of failing with SQLITE_BUSY and leaking the descriptor.
PointStore::~PointStore() {
  sqlite3_close_v2(reader_);
  sqlite3_close_v2(writer_);
}

std::unique_ptr<PointStore> PointStore::create(const std::filesystem::path& path, const CollectionConfig& config) {
  std::unique_ptr<PointStore> s(new PointStore(path));
  s->writer_ = open_connection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  exec(s->writer_, "PRAGMA journal_mode=WAL");
  exec(s->writer_, "PRAGMA synchronous=FULL");
  {
    Transaction t(s->writer_);
    exec(s->writer_,
         "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "CREATE TABLE points(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, vector BLOB NOT NULL, payload TEXT,"
         "                    uuid TEXT);"
         "CREATE INDEX points_by_seq ON points(seq);"
         "CREATE UNIQUE INDEX points_by_uuid ON points(uuid);"
         "CREATE TABLE deleted(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL);");
    set_meta(s->writer_, "format", kFormat);
    set_meta(s->writer_, "dim", std::to_string(config.dim));
    set_meta(s->writer_, "distance", config.distance);
    set_meta(s->writer_, "index", config.index);
    set_meta(s->writer_, "seq", "0");
    t.commit();
  }
  s->reader_ = open_connection(path, SQLITE_OPEN_READONLY);
  s->load_meta();
  return s;
}

std::unique_ptr<PointStore> PointStore::open(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw Error(ErrorCode::io, "no collection database at " + path.string());
  std::unique_ptr<PointStore> s(new PointStore(path));
  s->writer_ = open_connection(path, SQLITE_OPEN_READWRITE);
  exec(s->writer_, "PRAGMA journal_mode=WAL");
  exec(s->writer_, "PRAGMA synchronous=FULL");
  s->load_meta();
  add_uuid_column(s->writer_);
  s->reader_ = open_connection(path, SQLITE_OPEN_READONLY);
  return s;
}

void PointStore::load_meta() {
  config_ = read_config(writer_, path_.string(), &seq_);
  // Above every stored id, so that a new UUID never takes an old point's id, whatever it was.
  Statement s(writer_, "SELECT max(id) FROM points");
  if (s.step() && !s.is_null(0)) next_uuid_id_ = std::max(kFirstUuidId, s.integer(0) + 1);
}

int64_t PointStore::count() {
  std::lock_guard g(reader_mutex_);
  Statement s(reader_, "SELECT count(*) FROM points");
  s.step();
  return s.integer(0);
}

int64_t PointStore::upsert(std::vector<StoredPoint>& points) {
  Transaction t(writer_);
  const int64_t seq = seq_ + 1;
  int64_t next_uuid_id = next_uuid_id_;
  Statement put(writer_, "INSERT OR REPLACE INTO points(id, seq, vector, payload, uuid) VALUES (?1, ?2, ?3, ?4, ?5)");
  Statement undelete(writer_, "DELETE FROM deleted WHERE id = ?1");
  Statement find_uuid(writer_, "SELECT id FROM points WHERE uuid = ?1");
  for (StoredPoint& p : points) {
    if (!p.uuid.empty()) {
      find_uuid.bind(1, p.uuid);
      p.id = find_uuid.step() ? find_uuid.integer(0) : next_uuid_id++;
      find_uuid.reset();
    }
    put.bind(1, p.id).bind(2, seq).bind_blob(3, p.vector.data(), p.vector.size() * sizeof(float));
    p.payload.empty() ? put.bind_null(4) : put.bind(4, p.payload);
    p.uuid.empty() ? put.bind_null(5) : put.bind(5, p.uuid);
    put.run();
    undelete.bind(1, p.id).run();
  }
  set_meta(writer_, "seq", std::to_string(seq));
  t.commit();  // synchronous=FULL: durable when this returns
  seq_ = seq;
  next_uuid_id_ = next_uuid_id;
  return seq;
}

void PointStore::begin_bulk() { exec(writer_, "PRAGMA synchronous=OFF"); }

void PointStore::finish_bulk() {
  exec(writer_, "PRAGMA synchronous=FULL");
  // TRUNCATE: every page into the database file, synced, and the journal emptied, so the file
  // is whole by itself (a copy of the folder needs nothing else).
  exec(writer_, "PRAGMA wal_checkpoint(TRUNCATE)");
  fsync_path(path_);
}

std::vector<int64_t> PointStore::remove(const std::vector<int64_t>& ids, int64_t* seq_out) {
  Transaction t(writer_);
  const int64_t seq = seq_ + 1;
  Statement del(writer_, "DELETE FROM points WHERE id = ?1");
  Statement mark(writer_, "INSERT OR REPLACE INTO deleted(id, seq) VALUES (?1, ?2)");
  std::vector<int64_t> removed;
  for (int64_t id : ids) {
    del.bind(1, id).run();
    if (sqlite3_changes(writer_) == 0) continue;
    removed.push_back(id);
    mark.bind(1, id).bind(2, seq).run();
  }
  set_meta(writer_, "seq", std::to_string(seq));
  t.commit();
  seq_ = seq;
  *seq_out = seq;
  return removed;
}

int64_t PointStore::set_payloads(const std::vector<std::pair<int64_t, std::string>>& payloads) {
  Transaction t(writer_);
  const int64_t seq = seq_ + 1;
  Statement put(writer_, "UPDATE points SET payload = ?1, seq = ?2 WHERE id = ?3");
  for (const auto& [id, text] : payloads) {
    text.empty() ? put.bind_null(1) : put.bind(1, text);
    put.bind(2, seq).bind(3, id).run();
  }
  set_meta(writer_, "seq", std::to_string(seq));
  t.commit();
  seq_ = seq;
  return seq;
}

void PointStore::set_index_description(const std::string& description) {
  Transaction t(writer_);
  set_meta(writer_, "index", description);
  t.commit();
  config_.index = description;
}

std::optional<StoredPoint> PointStore::get(int64_t id, bool with_vector) {
  std::lock_guard g(reader_mutex_);
  Statement s(reader_, "SELECT vector, payload, uuid FROM points WHERE id = ?1");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  StoredPoint p;
  p.id = id;
  if (with_vector) p.vector = blob_vector(s, 0, config_.dim);
  p.payload = s.text(1);
  p.uuid = s.text(2);
  return p;
}

std::optional<int64_t> PointStore::id_of_uuid(const std::string& uuid) {
  std::lock_guard g(reader_mutex_);
  Statement s(reader_, "SELECT id FROM points WHERE uuid = ?1");
  s.bind(1, uuid);
  if (!s.step()) return std::nullopt;
  return s.integer(0);
}

std::vector<StoredPoint> PointStore::scroll(int64_t from, int64_t limit, bool with_vector) {
  std::lock_guard g(reader_mutex_);
  Statement s(reader_, "SELECT id, vector, payload, uuid FROM points WHERE id >= ?1 ORDER BY id LIMIT ?2");
  s.bind(1, from).bind(2, limit);
  std::vector<StoredPoint> out;
  while (s.step()) {
    StoredPoint p;
    p.id = s.integer(0);
    if (with_vector) p.vector = blob_vector(s, 1, config_.dim);
    p.payload = s.text(2);
    p.uuid = s.text(3);
    out.push_back(std::move(p));
  }
  return out;
}

int64_t PointStore::read_all(const std::function<void(StoredPoint&&)>& visit, bool with_vector) {
  std::lock_guard g(reader_mutex_);
  Transaction t(reader_, "BEGIN");  // one snapshot for the sequence number and the rows
  int64_t seq = 0;
  {
    Statement m(reader_, "SELECT value FROM meta WHERE key = 'seq'");
    if (m.step()) seq = std::stoll(m.text(0));
  }
  Statement s(reader_, with_vector ? "SELECT id, payload, uuid, vector FROM points ORDER BY id"
                                   : "SELECT id, payload, uuid FROM points ORDER BY id");
  while (s.step()) {
    StoredPoint p;
    p.id = s.integer(0);
    p.payload = s.text(1);
    p.uuid = s.text(2);
    if (with_vector) p.vector = blob_vector(s, 3, config_.dim);
    visit(std::move(p));
  }
  t.commit();
  return seq;
}

ChangesSince PointStore::changes_since(int64_t seq) {
  std::lock_guard g(reader_mutex_);
  Transaction t(reader_, "BEGIN");
  ChangesSince c;
  Statement up(reader_, "SELECT id, vector, payload, uuid FROM points WHERE seq > ?1 ORDER BY id");
  up.bind(1, seq);
  while (up.step()) {
    StoredPoint p;
    p.id = up.integer(0);
    p.vector = blob_vector(up, 1, config_.dim);
    p.payload = up.text(2);
    p.uuid = up.text(3);
    c.upserted.push_back(std::move(p));
  }
  Statement del(reader_, "SELECT id FROM deleted WHERE seq > ?1 ORDER BY id");
  del.bind(1, seq);
  while (del.step()) c.deleted.push_back(del.integer(0));
  t.commit();
  return c;
}

std::string PointStore::payload_indexes() {
  std::lock_guard g(reader_mutex_);
  Statement m(reader_, "SELECT value FROM meta WHERE key = 'payload_indexes'");
  return m.step() ? m.text(0) : std::string();
}

void PointStore::set_payload_indexes(const std::string& json_text) {
  Transaction t(writer_);
  set_meta(writer_, "payload_indexes", json_text);
  t.commit();
}

SavedIndex PointStore::saved_index() {
  std::lock_guard g(reader_mutex_);
  SavedIndex s;
  Statement m(reader_, "SELECT key, value FROM meta WHERE key IN ('index_file', 'index_description', 'index_seq')");
  while (m.step()) {
    const std::string key = m.text(0);
    if (key == "index_file") s.file = m.text(1);
    if (key == "index_description") s.description = m.text(1);
    if (key == "index_seq") s.seq = std::stoll(m.text(1));
  }
  return s;
}

void PointStore::set_saved_index(const SavedIndex& saved) {
  Transaction t(writer_);
  set_meta(writer_, "index_file", saved.file);
  set_meta(writer_, "index_description", saved.description);
  set_meta(writer_, "index_seq", std::to_string(saved.seq));
  Statement(writer_, "DELETE FROM deleted WHERE seq <= ?1").bind(1, saved.seq).run();
  t.commit();
}

void PointStore::backup_to(const std::filesystem::path& dest) {
  const std::filesystem::path tmp = dest.string() + ".partial";
  std::filesystem::remove(tmp);
  sqlite3* out = open_connection(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = SQLITE_OK;
  {
    std::lock_guard g(reader_mutex_);
    sqlite3_backup* b = sqlite3_backup_init(out, "main", reader_, "main");
    if (!b) {
      std::string m = sqlite3_errmsg(out);
      sqlite3_close(out);
      std::filesystem::remove(tmp);
      throw Error(ErrorCode::io, "snapshot: " + m);
    }
    // All pages in one step: one read transaction, so the copy is a single point in time.
    rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
  }
  if (rc == SQLITE_DONE) {
    // The copy is a plain rollback-journal database with every page in the file itself.
    char* m = nullptr;
    if (sqlite3_exec(out, "PRAGMA journal_mode=DELETE", nullptr, nullptr, &m) != SQLITE_OK) rc = SQLITE_ERROR;
    sqlite3_free(m);
  }
  const std::string message = sqlite3_errmsg(out);
  sqlite3_close(out);
  if (rc != SQLITE_DONE) {
    std::filesystem::remove(tmp);
    throw Error(ErrorCode::io, "snapshot failed: " + message);
  }
  fsync_path(tmp);
  std::filesystem::rename(tmp, dest);
  fsync_path(dest.parent_path());
}

CollectionConfig PointStore::check_file(const std::filesystem::path& path,
                                        const std::function<void(const StoredPoint&)>& check_point) {
  sqlite3* db = open_connection(path, SQLITE_OPEN_READONLY);
  // Closed after every statement below is finalised (they are destroyed first), on every path:
  // closing with a statement open fails and leaves the file's descriptor open for good.
  const std::unique_ptr<sqlite3, int (*)(sqlite3*)> closer(db, sqlite3_close_v2);
  const std::string name = path.filename().string();
  {
    Statement q(db, "PRAGMA quick_check");
    if (!q.step() || q.text(0) != "ok") throw Error(ErrorCode::io, name + " is damaged");
  }
  int64_t seq = 0;
  CollectionConfig c = read_config(db, name, &seq);
  {
    Statement t(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('points', 'deleted')");
    t.step();
    if (t.integer(0) != 2) throw Error(ErrorCode::io, name + " is not a simkit collection database (tables missing)");
  }
  const bool uuids = has_uuid_column(db);
  if (check_point) {
    Statement p(db, uuids ? "SELECT id, vector, payload, uuid FROM points" : "SELECT id, vector, payload FROM points");
    while (p.step()) {
      StoredPoint point;
      point.id = p.integer(0);
      point.vector = blob_vector(p, 1, c.dim);
      point.payload = p.text(2);
      if (uuids) point.uuid = p.text(3);
      std::string canonical;
      if (point.id < 0 || (point.id >= kFirstUuidId) != !point.uuid.empty() ||
          (!point.uuid.empty() && (!canonical_uuid(point.uuid, canonical) || canonical != point.uuid)))
        throw Error(ErrorCode::io, name + ": point " + std::to_string(point.id) +
                                       " has an id that does not match its uuid " + simkit::quoted(point.uuid));
      check_point(point);
    }
  }
  return c;
}

}  // namespace simkit::server
