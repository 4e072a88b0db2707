#pragma once
// One collection: its durable points (PointStore), the in-memory index built from them, the
// payloads the filters and results read, the payload indexes the filters look values up in
// (payload_index.hpp), and the batcher its searches go through.
//
// Order of a write: the writer mutex serialises writes; the points are committed to SQLite
// (durable), then applied to the index and payloads under the state lock, then acknowledged.
// Searches hold the state lock shared while their batch runs, so a search submitted after an
// upsert was acknowledged sees it, and none sees half of one request.
//
// On disk (the folder is <data-dir>/collections/<name>):
//   points.sqlite            the truth (see point_store.hpp)
//   index-<seq>.simkit       the index as it was at sequence number seq (Index::save)
// Opening loads the saved index and replays what the database recorded after its sequence
// number (upserts are remove + add, deletes ignore absent ids, so replaying is idempotent); when
// there is no usable index file, a flat index is built from the points, and a configured
// ivf_flat is rebuilt in the background. The payload indexes are rebuilt from the points at
// every opening (the fields indexed are in the database: PointStore::payload_indexes).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <simkit/context.hpp>
#include <simkit/index.hpp>

#include "batcher.hpp"
#include "filter.hpp"
#include "filter_eval.hpp"
#include "metrics.hpp"
#include "payload_edit.hpp"
#include "payload_index.hpp"
#include "point_id.hpp"
#include "point_store.hpp"

namespace simkit::server {

struct SearchQuery {
  std::vector<float> vector;
  int64_t limit = 10;
  int64_t offset = 0;
  PayloadSelector with_payload;
  bool with_vector = false;
  /// Hits scoring worse are left out: below it for Cosine and Dot, above it for Euclid and
  /// Manhattan (whose scores are distances), as Qdrant reads it.
  std::optional<float> score_threshold;
  std::vector<int64_t> exclude;  // internal ids never returned (a recommendation's own examples)
  /// Point ids never returned, as the API names them: the sharded server's exclude, which each
  /// rank resolves to its own internal ids (shard_worker.hpp). Unused by a lone server.
  std::vector<PointId> exclude_points;
  std::optional<Filter> filter;
  int64_t hnsw_ef = 0;  // "params": {"hnsw_ef": N}: an hnsw collection's search width; 0: the index's
};

/// A search's answer: status 200 with `hits`, the JSON text of the result array, or an error
/// status + message. The hits are written as text directly: scores in float32's shortest form
/// (0.8946329, not 0.894632875919342), and no JSON tree per hit on the hot path.
struct SearchOutcome {
  unsigned status = 200;
  std::string error;
  std::string hits;
};

struct SearchJob {
  SearchQuery query;
  std::function<void(SearchOutcome&&)> done;  // called once, on the batcher's thread
};

/// Where one write's time went, in seconds: waiting for the writer lock, the durable store
/// (SQLite up to its fsync), and the apply (index and payloads, under the state lock).
struct WriteTimes {
  double wait = 0, store = 0, apply = 0;
};

class Collection;

/// Runs a batch the batcher formed, instead of the collection itself: the sharded server's rank 0
/// sends it to every rank and merges their answers (shard_router.hpp).
using BatchRunner = std::function<void(Collection&, std::vector<Queued<SearchJob>>&)>;

struct CollectionSettings {
  Context ctx;  // device and threads the searches and builds use
  BatcherLimits limits;
  int64_t max_response_bytes = 64 << 20;  // a search's hits beyond this get 400 (request_limits.hpp)
  BatchRunner run_batch;                  // empty: batches run here (Collection::search_now)
};

class Collection {
 public:
  /// Opens an existing collection folder: loads its index (see above).
  static std::shared_ptr<Collection> open(const std::string& name, const std::filesystem::path& dir,
                                          const CollectionSettings& settings, Metrics& metrics);
  ~Collection();

  const std::string& name() const noexcept { return name_; }
  const CollectionConfig& config() const noexcept { return config_; }
  int64_t dim() const noexcept { return config_.dim; }
  /// GET /collections/{name}'s result.
  nlohmann::json info();

  /// Durable, then visible to searches, when it returns. Points are already validated
  /// (upsert_body.hpp): their payloads are compact JSON text.
  void upsert(std::vector<StoredPoint> points, WriteTimes* times = nullptr);
  /// Removes these ids, or with a filter the points it matches (evaluated after every write
  /// before it, with writes held off); returns how many were stored.
  int64_t remove(const std::vector<int64_t>& ids, const std::optional<Filter>& filter = std::nullopt);
  /// Rewrites the payloads of the stored points among `ids` (or that `filter` matches, evaluated
  /// with writes held off) with `edit` (old text -> new text, "" for none), durably, in one
  /// transaction; returns how many points it changed.
  int64_t edit_payloads(const std::vector<int64_t>& ids, const std::optional<Filter>& filter,
                        const std::function<std::string(std::string_view)>& edit);
  /// The index description the collection is configured with (a build may change it).
  std::string index_description() const {
    std::lock_guard d(description_mutex_);
    return config_.index;
  }
  /// The ids (ascending) of the points a filter matches (every point's with none), at one
  /// moment (the state lock held shared): what searches pass to the index as their allow-list,
  /// and what count, scroll and delete by filter read.
  std::vector<int64_t> matching_ids(const std::optional<Filter>& filter);
  /// How many points a filter matches (every point with none).
  int64_t count(const std::optional<Filter>& filter);
  /// The sequence number of the last write applied: what the API calls an operation id.
  int64_t seq() const;

  /// Queues searches (all or none); false when the queue is full or the collection closing.
  bool submit(std::vector<Queued<SearchJob>>& jobs) { return batcher_->submit(jobs); }
  /// True once the collection is closing (deleted, recovered, shut down): searches are refused for good.
  bool closing() const { return batcher_->stopping(); }
  /// Runs a batch here and now, outside the batcher, each job answered before it returns: this
  /// rank's share of a sharded batch, or every batch of a lone server (from its batcher).
  void search_now(std::vector<Queued<SearchJob>>& batch) { run_batch(batch); }

  std::optional<StoredPoint> get(int64_t id, bool with_vector) { return store_->get(id, with_vector); }
  /// The internal id of an API point id: an integer is itself; a UUID the collection has never
  /// stored has none.
  std::optional<int64_t> resolve(const PointId& id) const;
  /// Up to `limit` points with id >= `from` (that `filter` matches), in id order.
  std::vector<StoredPoint> scroll(int64_t from, int64_t limit, bool with_vector, const std::optional<Filter>& filter);

  /// How has_id's point ids map to this collection's ids (integers are themselves, UUIDs are
  /// looked up); the caller holds the state lock.
  IdResolver id_resolver() const;

  /// PUT /collections/{name}/index: indexes the payload field `field` (a path) as `schema`
  /// says, replacing an index of the field, and records it durably. Searches continue while it
  /// builds; writes wait. Returns the operation's number (the collection's sequence number).
  int64_t create_payload_index(const JsonPath& field, const FieldSchema& schema);
  /// DELETE /collections/{name}/index/{field}: drops the field's index (none: nothing to do).
  int64_t delete_payload_index(const JsonPath& field);

  /// Starts building an index of `description` from the stored points in the background and
  /// swaps it in when ready. ApiError(409) while another build runs; 400 for a bad description.
  void build_index(const std::string& description);

  /// A consistent copy of the database into `file` (searches continue meanwhile).
  void snapshot(const std::filesystem::path& file) { store_->backup_to(file); }

  /// Stops taking searches, runs what is queued, waits for a running build, and (when `save`)
  /// saves the index if writes came after the last save. Idempotent.
  void close(bool save = true);

 private:
  Collection(const std::string& name, const std::filesystem::path& dir, std::unique_ptr<PointStore> store,
             const CollectionSettings& settings, Metrics& metrics);
  void load();
  /// An index of `description` over every stored point; with `keep_payloads` (at load), the
  /// payloads and UUIDs are kept in the same pass, and `ids_out` gets every id (ascending).
  std::unique_ptr<Index> build_from_store(const std::string& description, int64_t* seq, bool keep_payloads = false,
                                          std::vector<int64_t>* ids_out = nullptr);
  /// Builds the payload indexes the store names over payloads_ (at load).
  void load_payload_indexes();
  /// A point's payload text, "" for none (under the state lock).
  std::string_view payload_of(int64_t id) const;
  /// The payload indexes follow a write; before payloads_ changes (it reads the old texts).
  void index_payloads(const std::vector<StoredPoint>& upserted, const std::vector<int64_t>& deleted);
  void apply(Index& index, const std::vector<StoredPoint>& upserted, const std::vector<int64_t>& deleted) const;
  void remember_uuid(int64_t id, const std::string& uuid);  // under state_ (exclusive)
  void forget_uuid(int64_t id);
  /// A search's answer text for one query: its hits among the k ids and scores of one row.
  std::string write_hits(const SearchQuery& query, const int64_t* ids, const float* values, int64_t k) const;
  /// Appends an id as the API writes it: the number, or the UUID in quotes (under state_).
  void append_id(std::string& out, int64_t id) const;
  void save_index();
  void run_batch(std::vector<Queued<SearchJob>>& batch);
  void start_batcher();
  void refuse_if_closed() const;                           // under writer_mutex_
  int64_t remove_locked(const std::vector<int64_t>& ids);  // under writer_mutex_

  std::string name_;
  std::filesystem::path dir_;
  std::unique_ptr<PointStore> store_;
  CollectionConfig config_;
  Metric metric_;
  CollectionSettings settings_;
  Metrics& metrics_;
  prometheus::Gauge& points_gauge_;
  prometheus::Counter& short_searches_;

  mutable std::mutex description_mutex_;  // config_.index, which build_index changes
  std::mutex writer_mutex_;               // one write (commit + apply) at a time; also guards saves
  mutable std::shared_mutex state_;       // index_ and payloads_: shared by searches, exclusive for writes
  std::shared_ptr<Index> index_;
  std::unordered_map<int64_t, std::string> payloads_;  // compact JSON text (payload.hpp)
  std::unordered_map<int64_t, std::string> uuids_;     // internal id -> UUID, for the points named by one
  std::unordered_map<std::string, int64_t> uuid_ids_;  // and back
  PayloadIndexes payload_indexes_;                     // live ids and indexed fields
  int64_t index_seq_ = 0;                              // the database's sequence number the index reflects
  int64_t saved_seq_ = -1;                             // the sequence number of the index file on disk

  std::mutex build_mutex_;
  std::thread builder_;
  std::atomic<bool> building_{false};
  std::string build_state_ = "ready";  // ready, building <desc>, failed: <why>  (build_mutex_)

  std::unique_ptr<Batcher<SearchJob>> batcher_;
  bool closed_ = false;  // writer_mutex_
};

}  // namespace simkit::server
