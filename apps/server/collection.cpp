#include "collection.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include <simkit/error.hpp>
#include <simkit/matrix.hpp>

#include "api_error.hpp"
#include "request_limits.hpp"

namespace simkit::server {

namespace {

namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string index_file_name(int64_t seq) { return "index-" + std::to_string(seq) + ".simkit"; }

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
      std::fprintf(stderr, "simkit serve: collection %s: index file %s unusable (%s); rebuilding from the points\n",
                   name_.c_str(), saved.file.c_str(), e.what());
    }
  }
  if (!index_) {
    index_ = build_from_store("flat", &index_seq_, /*keep_payloads=*/true);  // one pass for rows and payloads
    how = "built from the points";
  } else {
    store_->read_all(
        [&](StoredPoint&& p) {
          if (!p.uuid.empty()) remember_uuid(p.id, p.uuid);
          if (!p.payload.empty()) payloads_.emplace(p.id, std::move(p.payload));
        },
        /*with_vector=*/false);
  }
  points_gauge_.Set(static_cast<double>(index_->size()));
  std::fprintf(stderr, "simkit serve: collection %s: %lld points, index %s (%s) in %.2f s\n", name_.c_str(),
               static_cast<long long>(index_->size()), index_->description().c_str(), how.c_str(), seconds_since(t0));
}

std::unique_ptr<Index> Collection::build_from_store(const std::string& description, int64_t* seq, bool keep_payloads) {
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
  nlohmann::json j;
  std::string build;
  {
    std::lock_guard g(build_mutex_);
    build = build_state_;
  }
  std::shared_lock lock(state_);
  j["status"] = building_ ? "yellow" : "green";
  j["points_count"] = index_->size();
  j["config"] = {{"params", {{"vectors", {{"size", config_.dim}, {"distance", config_.distance}}}}},
                 {"index", config_.index}};
  j["index"] = {{"description", index_->description()},
                {"type", index_->type()},
                {"memory_bytes", index_->memory_bytes()},
                {"build", build}};
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

int64_t Collection::remove(const std::vector<int64_t>& ids) {
  std::lock_guard w(writer_mutex_);
  refuse_if_closed();
  int64_t seq = 0;
  const std::vector<int64_t> removed = store_->remove(ids, &seq);
  std::unique_lock lock(state_);
  if (!removed.empty()) index_->remove(removed);
  for (int64_t id : removed) {
    payloads_.erase(id);
    forget_uuid(id);
  }
  index_seq_ = seq;
  points_gauge_.Set(static_cast<double>(index_->size()));
  return static_cast<int64_t>(removed.size());
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

PointId Collection::point_id(int64_t id) const {
  PointId p;
  if (id >= kFirstUuidId) {
    std::shared_lock lock(state_);
    auto it = uuids_.find(id);
    if (it != uuids_.end()) p.uuid = it->second;
  }
  if (!p.is_uuid()) p.number = id;
  return p;
}

void Collection::append_id(std::string& out, int64_t id) const {
  if (id >= kFirstUuidId) {
    auto it = uuids_.find(id);
    if (it != uuids_.end()) {
      out += '"';
      out += it->second;  // canonical: hex digits and hyphens, nothing to escape
      out += '"';
      return;
    }
  }
  char number[24];
  out.append(number, std::to_chars(number, number + sizeof number, id).ptr);
}

void Collection::build_index(const std::string& description) {
  make_index(description, config_.dim, metric_);  // a bad description is refused here, synchronously
  std::lock_guard g(build_mutex_);
  if (building_) throw ApiError(409, "an index build is already running for collection '" + name_ + "'");
  if (builder_.joinable()) builder_.join();
  if (description != config_.index) {
    std::lock_guard w(writer_mutex_);
    store_->set_index_description(description);
    config_.index = description;
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
      std::fprintf(stderr, "simkit serve: collection %s: building %s failed: %s\n", name_.c_str(), description.c_str(),
                   e.what());
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
  {
    std::lock_guard w(writer_mutex_);  // a write in progress finishes first; later ones are refused
    if (closed_) return;
    closed_ = true;
  }
  batcher_->stop();
  if (builder_.joinable()) builder_.join();
  if (!save) return;
  try {
    save_index();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simkit serve: collection %s: saving the index failed (%s); it is rebuilt at the next start\n",
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
        k = std::max(k, q.offset + q.limit);
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
        allowed = allowed_ids(*batch[members[0]].job.query.filter, payloads_);
        params.allowed = ArrayView<const int64_t>(allowed);
      }
      const IndexSearchResult r = index_->search(settings_.ctx, Q.view(), k, params);
      if (stats.short_rows > 0) short_searches_.Increment(static_cast<double>(stats.short_rows));
      for (int64_t row = 0; row < m; ++row) {
        SearchJob& job = batch[members[row]].job;
        const int64_t* ids = r.ids.view().row(row);
        const float* values = r.values.view().row(row);
        std::string hits = "[";
        for (int64_t c = job.query.offset; c < job.query.offset + job.query.limit && ids[c] >= 0; ++c) {
          if (static_cast<int64_t>(hits.size()) > settings_.max_response_bytes) break;
          char number[64];
          hits += c == job.query.offset ? "{\"id\":" : ",{\"id\":";
          append_id(hits, ids[c]);
          hits += ",\"version\":0,\"score\":";
          // A metric can overflow float32 on finite vectors (Dot of two 3e38 vectors): JSON has no
          // inf or nan, so such a score is null, as the JSON tree wrote it, not an invalid body.
          if (std::isfinite(values[c]))
            hits.append(number, std::to_chars(number, number + sizeof number, values[c]).ptr);
          else
            hits += "null";
          if (job.query.with_payload) {
            auto it = payloads_.find(ids[c]);
            hits += ",\"payload\":";
            hits += it == payloads_.end() ? std::string_view("{}") : std::string_view(it->second);
          }
          hits += '}';
        }
        hits += ']';
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
