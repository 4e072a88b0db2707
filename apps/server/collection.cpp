#include "collection.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unordered_set>

#include <simkit/error.hpp>
#include <simkit/matrix.hpp>

#include "api_error.hpp"
#include "log.hpp"
#include "request_limits.hpp"

namespace simkit::server {

namespace {

namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string index_file_name(int64_t seq) { return "index-" + std::to_string(seq) + ".simkit"; }

// The value of `key=` in an index description, or `fallback`.
int64_t description_value(const std::string& description, const std::string& key, int64_t fallback) {
  const size_t at = description.find("," + key + "=");
  return at == std::string::npos ? fallback : std::atoll(description.c_str() + at + key.size() + 2);
}

// Qdrant's hnsw_config for the collection's index: an hnsw index's own m and ef_construction,
// and m = 0 (Qdrant's "no graph") for the others.
nlohmann::json hnsw_config(const std::string& description) {
  const bool hnsw = description.rfind("hnsw", 0) == 0;
  return {{"m", hnsw ? description_value(description, "m", 16) : 0},
          {"ef_construct", hnsw ? description_value(description, "ef_construction", 200) : 0},
          {"full_scan_threshold", 0}};
}

// Stacks the points' vectors into one matrix and their ids into one array.
Matrix<float> stack(const std::vector<StoredPoint>& points, int64_t dim, std::vector<int64_t>* ids) {
  Matrix<float> X(static_cast<int64_t>(points.size()), dim);
  ids->clear();
  for (size_t i = 0; i < points.size(); ++i) {
    std::copy(points[i].vector.begin(), points[i].vector.end(), X.view().row(static_cast<int64_t>(i)));
    ids->push_back(points[i].id);
  }
  return X;
}

}  // namespace

Collection::Collection(const std::string& name, const fs::path& dir, std::unique_ptr<PointStore> store,
                       const CollectionSettings& settings, Metrics& metrics)
    : name_(name),
      dir_(dir),
      store_(std::move(store)),
      config_(store_->config()),
      metric_(metric_for_distance(config_.distance)),
      settings_(settings),
      metrics_(metrics),
      points_gauge_(metrics.points(name)),
      short_searches_(metrics.short_searches(name)) {}

std::shared_ptr<Collection> Collection::open(const std::string& name, const fs::path& dir,
                                             const CollectionSettings& settings, Metrics& metrics) {
  auto store = PointStore::open(dir / "points.sqlite");
  std::shared_ptr<Collection> c(new Collection(name, dir, std::move(store), settings, metrics));
  c->load();
  c->start_batcher();
  if (c->index_->description() != c->config_.index && c->index_->type() == "flat" && c->index_->size() > 0)
    c->build_index(c->config_.index);
  return c;
}

Collection::~Collection() { close(); }

void Collection::start_batcher() {
  prometheus::Gauge& depth = metrics_.queue_depth(name_);
  Batcher<SearchJob>::Hooks hooks;
  if (settings_.run_batch)
    hooks.run = [this](std::vector<Queued<SearchJob>>& batch) { settings_.run_batch(*this, batch); };
  else
    hooks.run = [this](std::vector<Queued<SearchJob>>& batch) { run_batch(batch); };
  hooks.expire = [this](Queued<SearchJob>& q) {
    metrics_.rejected("deadline");
    q.job.done({504, "the request's deadline passed while it waited in the queue; it was not run", {}});
  };
  hooks.depth = [&depth](int64_t n) { depth.Set(static_cast<double>(n)); };
  batcher_ = std::make_unique<Batcher<SearchJob>>(settings_.limits, std::move(hooks));
}

void Collection::load() {
  const auto t0 = Clock::now();
  const SavedIndex saved = store_->saved_index();
  std::string how;
  if (!saved.file.empty() && fs::exists(dir_ / saved.file)) {
    try {
      std::unique_ptr<Index> loaded = load_index((dir_ / saved.file).string());
      if (loaded->dim() != config_.dim || loaded->metric() != metric_)
        throw Error(ErrorCode::io, "its dimension or metric differs from the collection's");
      ChangesSince changes = store_->changes_since(saved.seq);
      apply(*loaded, changes.upserted, changes.deleted);
      index_ = std::move(loaded);
      index_seq_ = store_->seq();
      saved_seq_ = saved.seq;
      how = saved.file + " + " + std::to_string(changes.upserted.size() + changes.deleted.size()) + " replayed";
    } catch (const Error& e) {
      log_line(LogLevel::warn, "collection %s: index file %s unusable (%s); rebuilding from the points", name_.c_str(),
               saved.file.c_str(), e.what());
    }
  }
  std::vector<int64_t> live;  // ascending: read_all goes in id order
  if (!index_) {
    // An index that needs no training (flat, hnsw, tree) is built at once; the others start
    // flat and are trained in the background (open()).
    const std::string now = make_index(config_.index, config_.dim, metric_)->is_trained() ? config_.index : "flat";
    index_ = build_from_store(now, &index_seq_, /*keep_payloads=*/true, &live);  // one pass for rows and payloads
    how = "built from the points";
  } else {
    store_->read_all(
        [&](StoredPoint&& p) {
          if (!p.uuid.empty()) remember_uuid(p.id, p.uuid);
          live.push_back(p.id);
          if (!p.payload.empty()) payloads_.emplace(p.id, std::move(p.payload));
        },
        /*with_vector=*/false);
  }
  payload_indexes_.reset(std::move(live));
  load_payload_indexes();
  points_gauge_.Set(static_cast<double>(index_->size()));
  log_line(LogLevel::info, "collection %s: %lld points, index %s (%s), %zu payload indexes in %.2f s", name_.c_str(),
           static_cast<long long>(index_->size()), index_->description().c_str(), how.c_str(),
           payload_indexes_.definitions().size(), seconds_since(t0));
}

void Collection::load_payload_indexes() {
  const std::string text = store_->payload_indexes();
  if (text.empty()) return;
  const nlohmann::json definitions = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!definitions.is_object()) {
    log_line(LogLevel::warn, "collection %s: the payload index list is damaged (%s); none built", name_.c_str(),
             simkit::quoted(text).c_str());
    return;
  }
  const auto text_of = [this](int64_t id) { return payload_of(id); };
  for (auto it = definitions.begin(); it != definitions.end(); ++it) {
    try {
      const std::optional<JsonPath> path = parse_json_path(it.key());
      if (!path) throw ApiError(400, "not a payload path");
      const FieldSchema schema = parse_field_schema(it.value(), "its field_schema");
      payload_indexes_.install(PayloadIndexes::build(*path, schema, payload_indexes_.live(), text_of));
    } catch (const std::exception& e) {
      // Not fatal: searches stay right without an index, only slower.
      log_line(LogLevel::warn, "collection %s: payload index %s not built: %s", name_.c_str(),
               simkit::quoted(it.key()).c_str(), e.what());
    }
  }
}

std::unique_ptr<Index> Collection::build_from_store(const std::string& description, int64_t* seq, bool keep_payloads,
                                                    std::vector<int64_t>* ids_out) {
  std::unique_ptr<Index> index = make_index(description, config_.dim, metric_);
  std::vector<float> rows;
  std::vector<int64_t> ids;
  *seq = store_->read_all(
      [&](StoredPoint&& p) {
        rows.insert(rows.end(), p.vector.begin(), p.vector.end());
        ids.push_back(p.id);
        if (!keep_payloads) return;
        if (!p.uuid.empty()) remember_uuid(p.id, p.uuid);
        if (!p.payload.empty()) payloads_.emplace(p.id, std::move(p.payload));
      },
      /*with_vector=*/true);
  const MatrixView<const float> X{rows.data(), static_cast<int64_t>(ids.size()), config_.dim};
  if (!index->is_trained()) index->train(settings_.ctx, X);
  if (!ids.empty()) index->add(settings_.ctx, X, ids);
  if (ids_out) *ids_out = std::move(ids);
  return index;
}

void Collection::apply(Index& index, const std::vector<StoredPoint>& upserted,
                       const std::vector<int64_t>& deleted) const {
  std::vector<int64_t> gone = deleted;
  for (const StoredPoint& p : upserted) gone.push_back(p.id);
  if (!gone.empty()) index.remove(gone);
  if (upserted.empty()) return;
  std::vector<int64_t> ids;
  Matrix<float> X = stack(upserted, config_.dim, &ids);
  index.add(settings_.ctx, X.view(), ids);
}

nlohmann::json Collection::info() {
  const std::string description = index_description();
  nlohmann::json j;
  std::string build;
  {
    std::lock_guard g(build_mutex_);
    build = build_state_;
  }
  std::shared_lock lock(state_);
  // Qdrant's CollectionInfo (what qdrant-client parses), then simkit's own index and queue.
  j["status"] = building_ ? "yellow" : "green";
  j["optimizer_status"] = build.rfind("failed", 0) == 0 ? nlohmann::json{{"error", build}} : nlohmann::json("ok");
  j["points_count"] = index_->size();
  j["indexed_vectors_count"] = index_->size();
  j["segments_count"] = 1;
  j["payload_schema"] = nlohmann::json::object();
  j["config"] = {{"params",
                  {{"vectors", {{"size", config_.dim}, {"distance", config_.distance}}},
                   {"shard_number", 1},
                   {"replication_factor", 1},
                   {"write_consistency_factor", 1},
                   {"on_disk_payload", false}}},
                 {"hnsw_config", hnsw_config(description)},
                 // Every acknowledged write is already durable (flush 0 s); deletes are repaired
                 // in place (hnsw at a tenth of the points marked), in one segment.
                 {"optimizer_config",
                  {{"deleted_threshold", 0.1},
                   {"vacuum_min_vector_number", 0},
                   {"default_segment_number", 1},
                   {"flush_interval_sec", 0}}},
                 {"index", description}};
  j["index"] = {{"description", index_->description()},
                {"type", index_->type()},
                {"memory_bytes", index_->memory_bytes()},
                {"build", build}};
  j["payload_schema"] = payload_indexes_.schema();
  j["queue_depth"] = batcher_->depth();
  return j;
}

void Collection::upsert(std::vector<StoredPoint> stored, WriteTimes* times) {
  const auto t0 = Clock::now();
  std::lock_guard w(writer_mutex_);
  refuse_if_closed();
  const auto t1 = Clock::now();
  const int64_t seq = store_->upsert(stored);  // durable from here on
  const auto t2 = Clock::now();
  std::unique_lock lock(state_);
  apply(*index_, stored, {});
  index_payloads(stored, {});
  for (StoredPoint& p : stored) {
    if (!p.uuid.empty()) remember_uuid(p.id, p.uuid);
    if (p.payload.empty())
      payloads_.erase(p.id);
    else
      payloads_.insert_or_assign(p.id, std::move(p.payload));
  }
  index_seq_ = seq;
  points_gauge_.Set(static_cast<double>(index_->size()));
  if (times) *times = {seconds_between(t0, t1), seconds_between(t1, t2), seconds_since(t2)};
}

int64_t Collection::remove(const std::vector<int64_t>& ids, const std::optional<Filter>& filter) {
  std::lock_guard w(writer_mutex_);
  refuse_if_closed();
  if (filter) return remove_locked(matching_ids(filter));  // evaluated with writes held off
  return remove_locked(ids);
}

int64_t Collection::remove_locked(const std::vector<int64_t>& ids) {
  int64_t seq = 0;
  const std::vector<int64_t> removed = store_->remove(ids, &seq);
  std::unique_lock lock(state_);
  if (!removed.empty()) index_->remove(removed);
  index_payloads({}, removed);
  for (int64_t id : removed) {
    payloads_.erase(id);
    forget_uuid(id);
  }
  index_seq_ = seq;
  points_gauge_.Set(static_cast<double>(index_->size()));
  return static_cast<int64_t>(removed.size());
}

int64_t Collection::edit_payloads(const std::vector<int64_t>& selected, const std::optional<Filter>& filter,
                                  const std::function<std::string(std::string_view)>& edit) {
  std::lock_guard w(writer_mutex_);
  refuse_if_closed();
  const std::vector<int64_t> ids = filter ? matching_ids(filter) : selected;  // with writes held off
  std::vector<std::pair<int64_t, std::string>> changed;
  for (int64_t id : ids) {
    const std::optional<StoredPoint> p = store_->get(id, /*with_vector=*/false);  // writes are held off
    if (!p) continue;
    std::string text = edit(p->payload);
    if (text != p->payload) changed.emplace_back(id, std::move(text));
  }
  if (changed.empty()) return 0;
  const int64_t seq = store_->set_payloads(changed);  // durable from here on
  std::vector<StoredPoint> edited(changed.size());
  for (size_t i = 0; i < changed.size(); ++i) edited[i] = {changed[i].first, {}, {}, changed[i].second};
  std::unique_lock lock(state_);
  index_payloads(edited, {});  // reads the old texts: before payloads_ changes
  for (auto& [id, text] : changed) {
    if (text.empty())
      payloads_.erase(id);
    else
      payloads_.insert_or_assign(id, std::move(text));
  }
  index_seq_ = seq;
  return static_cast<int64_t>(changed.size());
}

std::vector<StoredPoint> Collection::scroll(int64_t from, int64_t limit, bool with_vector,
                                            const std::optional<Filter>& filter) {
  if (!filter) return store_->scroll(from, limit, with_vector);
  const std::vector<int64_t> ids = matching_ids(filter);
  std::vector<StoredPoint> page;
  for (auto it = std::lower_bound(ids.begin(), ids.end(), from);
       it != ids.end() && static_cast<int64_t>(page.size()) < limit; ++it)
    if (auto p = store_->get(*it, with_vector)) page.push_back(std::move(*p));
  return page;
}

int64_t Collection::count(const std::optional<Filter>& filter) {
  if (filter) return static_cast<int64_t>(matching_ids(filter).size());
  std::shared_lock lock(state_);
  return index_->size();
}

int64_t Collection::seq() const {
  std::shared_lock lock(state_);
  return index_seq_;
}

void Collection::remember_uuid(int64_t id, const std::string& uuid) {
  uuids_.insert_or_assign(id, uuid);
  uuid_ids_.insert_or_assign(uuid, id);
}

void Collection::forget_uuid(int64_t id) {
  if (id < kFirstUuidId) return;
  auto it = uuids_.find(id);
  if (it == uuids_.end()) return;
  uuid_ids_.erase(it->second);
  uuids_.erase(it);
}

std::optional<int64_t> Collection::resolve(const PointId& id) const {
  if (!id.is_uuid()) return id.number;
  std::shared_lock lock(state_);
  auto it = uuid_ids_.find(id.uuid);
  if (it == uuid_ids_.end()) return std::nullopt;
  return it->second;
}

std::string_view Collection::payload_of(int64_t id) const {
  const auto it = payloads_.find(id);
  return it == payloads_.end() ? std::string_view() : std::string_view(it->second);
}

void Collection::index_payloads(const std::vector<StoredPoint>& upserted, const std::vector<int64_t>& deleted) {
  std::vector<PayloadChange> changes;
  changes.reserve(upserted.size() + deleted.size());
  std::unordered_set<int64_t> seen;  // an id twice in one batch: its last payload is the one kept
  for (auto p = upserted.rbegin(); p != upserted.rend(); ++p)
    if (seen.insert(p->id).second) changes.push_back({p->id, payload_of(p->id), p->payload, true});
  for (int64_t id : deleted)
    if (seen.insert(id).second) changes.push_back({id, payload_of(id), {}, false});
  payload_indexes_.apply(changes);
}

std::vector<int64_t> Collection::matching_ids(const std::optional<Filter>& filter) {
  const IdResolver resolve = id_resolver();
  std::shared_lock lock(state_);
  if (!filter) return payload_indexes_.live();
  return evaluate(*filter, payload_indexes_, payloads_, resolve);
}

// Called by evaluate() with the state lock held: reads uuid_ids_ without taking it again.
IdResolver Collection::id_resolver() const {
  return [this](const nlohmann::json& id) -> std::optional<int64_t> {
    if (id.is_number_integer()) return id.get<int64_t>();        // parse_filter checked the range
    auto it = uuid_ids_.find(id.get_ref<const std::string&>());  // canonical since parse_filter
    if (it == uuid_ids_.end()) return std::nullopt;
    return it->second;
  };
}

int64_t Collection::create_payload_index(const JsonPath& field, const FieldSchema& schema) {
  std::lock_guard w(writer_mutex_);  // writes wait; the definitions change only under it
  refuse_if_closed();
  std::unique_ptr<FieldIndex> built;
  {
    std::shared_lock lock(state_);  // searches go on while it builds
    built =
        PayloadIndexes::build(field, schema, payload_indexes_.live(), [this](int64_t id) { return payload_of(id); });
  }
  nlohmann::json definitions = payload_indexes_.definitions();
  definitions[field.text()] = schema.written;
  store_->set_payload_indexes(definitions.dump());
  std::unique_lock lock(state_);
  payload_indexes_.install(std::move(built));
  return store_->seq();
}

int64_t Collection::delete_payload_index(const JsonPath& field) {
  std::lock_guard w(writer_mutex_);
  refuse_if_closed();
  nlohmann::json definitions = payload_indexes_.definitions();
  if (definitions.erase(field.text()) > 0) {
    store_->set_payload_indexes(definitions.dump());
    std::unique_lock lock(state_);
    payload_indexes_.drop(field.text());
  }
  return store_->seq();
}

void Collection::build_index(const std::string& description) {
  make_index(description, config_.dim, metric_);  // a bad description is refused here, synchronously
  std::lock_guard g(build_mutex_);
  if (building_) throw ApiError(409, "an index build is already running for collection '" + name_ + "'");
  if (builder_.joinable()) builder_.join();
  {
    // A collection closed by a delete or a recover while this waited starts no thread: close()
    // has taken (or is about to take, under build_mutex_) the builder it joins.
    std::lock_guard w(writer_mutex_);
    refuse_if_closed();
    if (description != index_description()) {
      store_->set_index_description(description);
      std::lock_guard d(description_mutex_);
      config_.index = description;
    }
  }
  building_ = true;
  build_state_ = "building " + description;
  builder_ = std::thread([this, description] {
    std::string state = "ready";
    try {
      int64_t seq = 0;
      std::shared_ptr<Index> fresh = build_from_store(description, &seq);
      {
        // Catch up with what was written while it trained, then swap, with writes held off.
        std::lock_guard w(writer_mutex_);
        ChangesSince changes = store_->changes_since(seq);
        apply(*fresh, changes.upserted, changes.deleted);
        std::unique_lock lock(state_);
        index_ = std::move(fresh);
        index_seq_ = store_->seq();
      }
      save_index();
    } catch (const std::exception& e) {
      state = std::string("failed: ") + e.what();
      log_line(LogLevel::error, "collection %s: building %s failed: %s", name_.c_str(), description.c_str(), e.what());
    }
    std::lock_guard g2(build_mutex_);
    build_state_ = state;
    building_ = false;
  });
}

void Collection::save_index() {
  std::shared_ptr<Index> index;
  int64_t seq = 0;
  {
    std::lock_guard w(writer_mutex_);
    std::shared_lock lock(state_);
    if (index_seq_ == saved_seq_) return;
    index = index_;
    seq = index_seq_;
  }
  // Saved outside the locks: writes after `seq` may land in the file too, which the replay
  // from `seq` re-applies harmlessly.
  const std::string file = index_file_name(seq);
  index->save((dir_ / file).string());
  const SavedIndex previous = store_->saved_index();
  {
    std::lock_guard w(writer_mutex_);
    store_->set_saved_index({file, index->description(), seq});
    saved_seq_ = seq;
  }
  if (!previous.file.empty() && previous.file != file) fs::remove(dir_ / previous.file);
}

void Collection::refuse_if_closed() const {
  if (closed_) throw ApiError(503, "collection '" + name_ + "' is being deleted, recovered or shut down; retry");
}

void Collection::close(bool save) {
  bool first = false;
  {
    std::lock_guard w(writer_mutex_);  // a write in progress finishes first; later ones are refused
    first = !closed_;
    closed_ = true;
  }
  if (first) batcher_->stop();
  // Every call joins a build still running (the destructor's too): build_index starts none once
  // closed_ is set, and assigns builder_ under build_mutex_, so the one taken here is the last.
  std::thread builder;
  {
    std::lock_guard g(build_mutex_);
    builder = std::move(builder_);
  }
  if (builder.joinable()) builder.join();
  if (!first || !save) return;
  try {
    save_index();
  } catch (const std::exception& e) {
    log_line(LogLevel::error, "collection %s: saving the index failed (%s); it is rebuilt at the next start",
             name_.c_str(), e.what());
  }
}

void Collection::run_batch(std::vector<Queued<SearchJob>>& batch) {
  const Clock::time_point start = Clock::now();
  metrics_.batch_size(static_cast<int64_t>(batch.size()));
  for (const auto& q : batch) metrics_.queue_wait(std::chrono::duration<double>(start - q.enqueued).count());
  // One library call per group: the unfiltered searches together, and each distinct filter and
  // search width.
  std::map<std::pair<std::string, int64_t>, std::vector<size_t>> groups;
  const IdResolver resolve = id_resolver();
  for (size_t i = 0; i < batch.size(); ++i) {
    const SearchQuery& q = batch[i].job.query;
    groups[{q.filter ? q.filter->key() : std::string(), q.hnsw_ef}].push_back(i);
  }
  std::shared_lock lock(state_);
  for (const auto& [group, members] : groups) {
    const auto& [key, hnsw_ef] = group;
    try {
      const int64_t m = static_cast<int64_t>(members.size());
      int64_t k = 1;
      Matrix<float> Q(m, config_.dim);
      for (int64_t r = 0; r < m; ++r) {
        const SearchQuery& q = batch[members[r]].job.query;
        k = std::max(k, q.offset + q.limit + static_cast<int64_t>(q.exclude.size()));
        std::copy(q.vector.begin(), q.vector.end(), Q.view().row(r));
      }
      SearchStats stats;
      SearchKnobs knobs;
      knobs.ef = hnsw_ef;
      // A knob the collection's index does not read is refused (400), not ignored.
      const std::unique_ptr<SearchParams> own = make_search_params(*index_, knobs);
      SearchParams& params = *own;
      params.stats = &stats;
      std::vector<int64_t> allowed;
      if (!key.empty()) {
        allowed = evaluate(*batch[members[0]].job.query.filter, payload_indexes_, payloads_, resolve);
        params.allowed = ArrayView<const int64_t>(allowed);
      }
      const IndexSearchResult r = index_->search(settings_.ctx, Q.view(), k, params);
      if (stats.short_rows > 0) short_searches_.Increment(static_cast<double>(stats.short_rows));
      for (int64_t row = 0; row < m; ++row) {
        SearchJob& job = batch[members[row]].job;
        std::string hits = write_hits(job.query, r.ids.view().row(row), r.values.view().row(row), k);
        if (static_cast<int64_t>(hits.size()) > settings_.max_response_bytes)
          job.done({400, response_too_large(settings_.max_response_bytes), {}});
        else
          job.done({200, {}, std::move(hits)});
      }
    } catch (const std::exception& e) {
      const auto* se = dynamic_cast<const Error*>(&e);
      const unsigned status = se && se->code() == ErrorCode::invalid_argument ? 400 : 500;
      for (size_t i : members) batch[i].job.done({status, std::string("search failed: ") + e.what(), {}});
    }
  }
}

}  // namespace simkit::server
