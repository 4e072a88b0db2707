// Routes that create, describe, delete, index, snapshot and recover collections, and that
// create and drop payload indexes.
//
// Folder changes are made so that a crash at any moment leaves either the old state or the new:
// a new collection is built in collections/.tmp-<name>-<n> and renamed into place; a deleted
// one is renamed to .deleted-<name>-<n> before it is removed (startup removes both kinds of
// leftovers); a recovered database is copied beside the live one, fsynced, and renamed over it.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iterator>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "payload.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> unique_counter{0};

std::string unique_suffix() {
  return std::to_string(::getpid()) + "-" + std::to_string(unique_counter.fetch_add(1)) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void copy_durably(const fs::path& from, const fs::path& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  const int fd = ::open(to.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string utc_stamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d-%H-%M-%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char out[48];
  std::snprintf(out, sizeof out, "%s-%03lld", buf, static_cast<long long>(ms));
  return out;
}

nlohmann::json snapshot_entry(const fs::path& file) {
  const auto mtime = fs::last_write_time(file);
  const auto sys = std::chrono::file_clock::to_sys(mtime);
  const std::time_t t = std::chrono::system_clock::to_time_t(sys);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {{"name", file.filename().string()}, {"size", fs::file_size(file)}, {"creation_time", buf}};
}

// A snapshot name from a request: a plain file name, never a path.
void check_snapshot_name(const std::string& name) {
  bool ok = name.size() > 9 && name.size() <= 200 && name.ends_with(".snapshot") && name[0] != '.';
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (!ok)
    bad_request(
        "location must be the name of one of the collection's snapshots (as GET .../snapshots lists "
        "them), not a path or URL: " +
        simkit::quoted(name));
}

// Qdrant's hnsw_config at creation as simkit's index description: m and ef_construct carry over;
// m = 0 (Qdrant's "no graph") means a flat, exact collection.
std::string hnsw_description(const nlohmann::json& h) {
  if (!h.is_object()) bad_request("body.hnsw_config must be an object such as {\"m\": 16, \"ef_construct\": 100}");
  check_fields(h, {"m", "ef_construct", "full_scan_threshold", "on_disk", "max_indexing_threads", "payload_m"},
               "body.hnsw_config");
  for (const char* ignored : {"on_disk", "max_indexing_threads", "payload_m"})
    if (h.contains(ignored) && !h[ignored].is_null() && h[ignored] != false && h[ignored] != 0)
      bad_request(std::string("body.hnsw_config.") + ignored + " is not supported by this server");
  const int64_t m = int_field(h, "m", 16, 0, 512, "body.hnsw_config");
  const int64_t ef = int_field(h, "ef_construct", 100, 4, 100000, "body.hnsw_config");
  int_field(h, "full_scan_threshold", 10000, 0, int64_t{1} << 40, "body.hnsw_config");  // the planner decides
  if (m == 0) return "flat";
  return "hnsw,m=" + std::to_string(m) + ",ef_construction=" + std::to_string(ef);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A path segment with its %XX escapes decoded: a field name such as a[].b arrives as a%5B%5D.b.
std::string percent_decoded(const std::string& segment, const std::string& what) {
  std::string out;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    const int hi = i + 2 < segment.size() ? hex_value(segment[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_value(segment[i + 2]) : -1;
    if (lo < 0) bad_request(what + " " + simkit::quoted(segment) + " has a malformed %-escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

JsonPath field_path(const std::string& name, const std::string& where) {
  if (name.empty()) bad_request(where + " must be a non-empty payload path such as lang or meta.lang");
  std::optional<JsonPath> path = parse_json_path(name);
  if (!path)
    bad_request(where + ": " + simkit::quoted(name) +
                " is not a payload path (write a, a.b, a[].b, a[0].b, or \"a.b\" quoted for a key holding dots)");
  return std::move(*path);
}

}  // namespace

void Api::list_collections(Call& call) {
  nlohmann::json list = nlohmann::json::array();
  {
    std::lock_guard g(collections_mutex_);
    for (const auto& [name, c] : collections_) list.push_back({{"name", name}});
  }
  reply(call, 200, {{"result", {{"collections", list}}}});
}

// GET /: what qdrant-client reads to check compatibility. `version` is the Qdrant REST API
// version whose routes this server follows (docs/API.md lists which it serves).
void Api::service_info(Call& call) {
  reply(call, 200,
        {{"title", "simkit " SIMKIT_VERSION_TEXT " (Qdrant-compatible REST API)"},
         {"version", kQdrantApiVersion},
         {"simkit_version", SIMKIT_VERSION_TEXT}});
}

void Api::get_collection(Call& call) { reply(call, 200, {{"result", find(call.params[0])->info()}}); }

// Qdrant's guard before a create (qdrant-client's collection_exists): 200 either way. A
// collection being recovered from a snapshot exists: creating it would clash.
void Api::collection_exists(Call& call) {
  bool exists = false;
  {
    std::lock_guard g(collections_mutex_);
    exists = collections_.count(call.params[0]) > 0 || recovering_.count(call.params[0]) > 0;
  }
  reply(call, 200, {{"result", {{"exists", exists}}}});
}

void Api::create_collection(Call& call) {
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"vectors", "index", "hnsw_config", "shard_number", "replication_factor", "on_disk_payload"},
               "body");
  for (const char* one : {"shard_number", "replication_factor"})
    if (body.contains(one) && !body[one].is_null() && body[one] != 1)
      bad_request(std::string("body.") + one + ": this server keeps one copy of each collection in one shard (1)");
  if (!body.contains("vectors") || !body["vectors"].is_object())
    bad_request("body.vectors must be an object such as {\"size\": 384, \"distance\": \"Cosine\"}");
  const nlohmann::json& v = body["vectors"];
  check_fields(v, {"size", "distance"}, "body.vectors");
  CollectionConfig config;
  config.dim = int_field(v, "size", 0, 1, 65536, "body.vectors");
  if (config.dim == 0) bad_request("body.vectors.size is required (the vectors' dimension, 1 to 65536)");
  if (!v.contains("distance") || !v["distance"].is_string())
    bad_request("body.vectors.distance is required: one of Cosine, Dot, Euclid, Manhattan");
  config.distance = v["distance"].get<std::string>();
  const Metric metric = metric_for_distance(config.distance);
  if (body.contains("index")) {
    if (!body["index"].is_string())
      bad_request("body.index must be an index description such as \"ivf_flat,nlist=256\"");
    config.index = body["index"].get<std::string>();
  }
  if (body.contains("hnsw_config") && !body["hnsw_config"].is_null()) {
    if (body.contains("index")) bad_request("body: give either index or hnsw_config, not both");
    config.index = hnsw_description(body["hnsw_config"]);
  }
  make_index(config.index, config.dim, metric);  // refuses a bad description with its reason
  blocking(std::move(call), [this, config](Call& c) {
    const std::string& name = c.params[0];
    std::lock_guard admin(admin_mutex_);
    {
      std::lock_guard g(collections_mutex_);
      if (collections_.count(name)) throw ApiError(409, "collection '" + name + "' already exists");
    }
    const fs::path tmp = settings_.data_dir / "collections" / (".tmp-" + name + "-" + unique_suffix());
    fs::create_directories(tmp);
    PointStore::create(tmp / "points.sqlite", config).reset();
    fsync_dir(tmp);
    fs::rename(tmp, collection_dir(name));
    fsync_dir(settings_.data_dir / "collections");
    auto collection = Collection::open(name, collection_dir(name), settings_.collection, metrics_);
    {
      std::lock_guard g(collections_mutex_);
      collections_[name] = collection;
    }
    reply(c, 200, {{"result", true}});
  });
}

void Api::delete_collection(Call& call) {
  find(call.params[0]);  // 404 before queueing
  blocking(std::move(call), [this](Call& c) {
    const std::string& name = c.params[0];
    std::lock_guard admin(admin_mutex_);
    std::shared_ptr<Collection> collection;
    {
      std::lock_guard g(collections_mutex_);
      auto it = collections_.find(name);
      if (it == collections_.end()) throw ApiError(404, "collection '" + name + "' does not exist");
      collection = it->second;
      collections_.erase(it);
    }
    collection->close(/*save=*/false);
    collection.reset();
    std::map<std::string, std::string> aliases;
    {
      std::lock_guard g(collections_mutex_);
      aliases = aliases_;
    }
    if (std::erase_if(aliases, [&](const auto& a) { return a.second == name; }) > 0) {
      save_aliases(aliases);
      std::lock_guard g(collections_mutex_);
      aliases_ = std::move(aliases);
    }
    const fs::path gone = settings_.data_dir / "collections" / (".deleted-" + name + "-" + unique_suffix());
    fs::rename(collection_dir(name), gone);
    fsync_dir(settings_.data_dir / "collections");
    fs::remove_all(gone);
    metrics_.forget(name);
    reply(c, 200, {{"result", true}});
  });
}

void Api::build_index(Call& call) {
  const nlohmann::json body = parse_object(call.request.body, settings_.limits, /*empty_is_object=*/true);
  check_fields(body, {"index"}, "body");
  auto collection = find(call.params[0]);
  std::string description = collection->index_description();
  if (body.contains("index")) {
    if (!body["index"].is_string())
      bad_request("body.index must be an index description such as \"ivf_flat,nlist=256\"");
    description = body["index"].get<std::string>();
  }
  blocking(std::move(call), [this, collection, description](Call& c) {
    collection->build_index(description);
    reply(c, 202, {{"result", {{"status", "building"}, {"index", description}}}});
  });
}

// Qdrant's PUT /collections/{name}/index: {"field_name": "lang", "field_schema": "keyword"}.
void Api::create_payload_index(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"field_name", "field_schema"}, "body");
  if (!body.contains("field_name") || !body["field_name"].is_string())
    bad_request("body.field_name is required: the payload field to index, such as \"lang\" or \"meta.lang\"");
  const JsonPath path = field_path(body["field_name"].get<std::string>(), "body.field_name");
  if (!body.contains("field_schema") || body["field_schema"].is_null())
    bad_request("body.field_schema is required: keyword, integer, float or bool");
  const FieldSchema schema = parse_field_schema(body["field_schema"], "body.field_schema");
  blocking(std::move(call), [this, collection, path, schema, wait](Call& c) {
    const int64_t op = collection->create_payload_index(path, schema);
    reply(c, 200, {{"result", {{"operation_id", op}, {"status", wait ? "completed" : "acknowledged"}}}});
  });
}

void Api::delete_payload_index(Call& call) {
  auto collection = find(call.params[0]);
  const bool wait = wait_param(call);
  const JsonPath path = field_path(percent_decoded(call.params[1], "field name"), "the field name");
  blocking(std::move(call), [this, collection, path, wait](Call& c) {
    const int64_t op = collection->delete_payload_index(path);
    reply(c, 200, {{"result", {{"operation_id", op}, {"status", wait ? "completed" : "acknowledged"}}}});
  });
}

void Api::create_snapshot(Call& call) {
  auto collection = find(call.params[0]);
  blocking(std::move(call), [this, collection](Call& c) {
    const fs::path dir = snapshot_dir(collection->name());
    fs::create_directories(dir);
    fs::path file = dir / (collection->name() + "-" + utc_stamp() + ".snapshot");
    for (int i = 1; fs::exists(file); ++i)
      file = dir / (collection->name() + "-" + utc_stamp() + "-" + std::to_string(i) + ".snapshot");
    collection->snapshot(file);
    reply(c, 200, {{"result", snapshot_entry(file)}});
  });
}

void Api::list_snapshots(Call& call) {
  const fs::path dir = snapshot_dir(call.params[0]);
  if (!fs::exists(dir)) find(call.params[0]);  // 404 for a collection that never had one
  nlohmann::json list = nlohmann::json::array();
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".snapshot") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) list.push_back(snapshot_entry(f));
  reply(call, 200, {{"result", list}});
}

void Api::download_snapshot(Call& call) {
  check_snapshot_name(call.params[1]);
  const fs::path file = snapshot_dir(call.params[0]) / call.params[1];
  if (!fs::is_regular_file(file))
    throw ApiError(404, "no snapshot '" + call.params[1] + "' for collection '" + call.params[0] + "'");
  blocking(std::move(call), [this, file](Call& c) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw Error(ErrorCode::io, "cannot read snapshot " + file.filename().string());
    answer(c, 200, std::move(bytes), {{"Content-Type", "application/octet-stream"}});
  });
}

void Api::delete_snapshot(Call& call) {
  check_snapshot_name(call.params[1]);
  const fs::path file = snapshot_dir(call.params[0]) / call.params[1];
  if (!fs::is_regular_file(file))
    throw ApiError(404, "no snapshot '" + call.params[1] + "' for collection '" + call.params[0] + "'");
  blocking(std::move(call), [this, file](Call& c) {
    fs::remove(file);
    fsync_dir(file.parent_path());
    reply(c, 200, {{"result", true}});
  });
}

void Api::recover_snapshot(Call& call) {
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"location", "priority"}, "body");
  if (!body.contains("location") || !body["location"].is_string())
    bad_request("body.location is required: the name of a snapshot of this collection");
  // A snapshot's name, or its URL on this server (.../collections/{from}/snapshots/{name}), which
  // may name another collection's snapshot, as Qdrant allows; never a path elsewhere.
  std::string location = body["location"].get<std::string>();
  std::string from = call.params[0];
  const std::string marker = "/collections/";
  if (const size_t at = location.rfind(marker); at != std::string::npos) {
    const std::string rest = location.substr(at + marker.size());
    const size_t slash = rest.find("/snapshots/");
    if (slash == std::string::npos) bad_request("body.location " + simkit::quoted(location) + " names no snapshot");
    from = rest.substr(0, slash);
    location = rest.substr(slash + 11);
    check_collection_name(from);
  }
  check_snapshot_name(location);
  const fs::path source = snapshot_dir(from) / location;
  if (!fs::exists(source)) throw ApiError(404, "no snapshot '" + location + "' for collection '" + from + "'");
  blocking(std::move(call), [this, source](Call& c) {
    const std::string& name = c.params[0];
    std::lock_guard admin(admin_mutex_);
    const fs::path dir = collection_dir(name);
    const bool exists = fs::exists(dir);
    const fs::path staging = exists ? dir / "points.sqlite.recover"
                                    : settings_.data_dir / "collections" / (".tmp-" + name + "-" + unique_suffix());
    const fs::path staged = exists ? staging : staging / "points.sqlite";
    if (!exists) fs::create_directories(staging);
    copy_durably(source, staged);
    try {
      // The copy we will use, not the file that may change; and each point as an upsert would
      // check it, since the old collection is gone by the time the index is built from them.
      const CollectionConfig config = PointStore::check_file(staged, [this](const StoredPoint& p) {
        for (float x : p.vector)
          if (!std::isfinite(x))
            throw Error(ErrorCode::io, "point " + std::to_string(p.id) + "'s vector holds NaN or infinity");
        if (!scores_stay_finite(p.vector))
          throw Error(ErrorCode::io,
                      "point " + std::to_string(p.id) + "'s vector is too long (squared norm past 2^125)");
        if (!p.payload.empty()) check_stored_payload(p.id, p.payload, settings_.limits.payload);
      });
      // Its index description too: opening it must not fail once the old database is gone.
      make_index(config.index, config.dim, metric_for_distance(config.distance));
    } catch (const std::exception& e) {
      fs::remove_all(staging);
      throw ApiError(400, std::string("snapshot refused: ") + e.what());
    }
    // From here until the recovered collection is in place, its routes answer 503 with
    // Retry-After (find()), never 404: the collection exists throughout.
    std::shared_ptr<Collection> old;
    {
      std::lock_guard g(collections_mutex_);
      recovering_.insert(name);
      if (auto it = collections_.find(name); it != collections_.end()) {
        old = it->second;
        collections_.erase(it);
      }
    }
    struct Unmark {
      Api* api;
      std::string name;
      ~Unmark() {
        std::lock_guard g(api->collections_mutex_);
        api->recovering_.erase(name);
      }
    } unmark{this, name};
    if (old) old->close(/*save=*/false);  // the last connection checkpoints and removes the WAL
    old.reset();
    if (exists) {
      // Index files belong to the replaced history; the recovered database rebuilds its own.
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().rfind("index-", 0) == 0) fs::remove(e.path());
      for (const char* side : {"points.sqlite-wal", "points.sqlite-shm"}) fs::remove(dir / side);
      fs::rename(staged, dir / "points.sqlite");
      fsync_dir(dir);
    } else {
      fsync_dir(staging);
      fs::rename(staging, dir);
      fsync_dir(settings_.data_dir / "collections");
    }
    auto collection = Collection::open(name, dir, settings_.collection, metrics_);
    {
      std::lock_guard g(collections_mutex_);
      collections_[name] = collection;
    }
    reply(c, 200, {{"result", true}});
  });
}

}  // namespace simkit::server
