#pragma once
// The storage layout of an inverted file, shared by ivf_flat and ivf_pq: an arena of rows in
// which list l holds rows begin[l] .. end[l], one contiguous block (so a list is scanned as one
// block), with spare rows end[l] .. limit[l] to grow into. A write costs the lists it touches,
// not the index: new rows merge into their list's block in place while it has room, and a list
// that outgrows its block moves to the arena's end with half its length to spare (its old
// block becomes garbage, reclaimed by compact() once spare rows and garbage are half the
// arena). A list filled from empty by one batch gets no spare rows: a bulk-built index is as
// small as a compact one. Freshly built or loaded arenas are compact: begin[l + 1] == end[l], no spare rows --
// the form the GPU copy and the file take.
//
// Within a list the rows stay in id order (every write merges by id): the scans keep a list's
// best candidates by (key, row), which is then (key, id), so ties go to the lower id as in knn.
//
// The arena keeps the ids; what else a family stores per row (vectors, norms, codes) lives in
// its own arrays, which the arena moves through the Columns interface.

#include <cstdint>
#include <functional>
#include <vector>

#include "index/id_filter.hpp"

namespace simkit::detail {

class ListArena {
 public:
  /// A family's per-row arrays, indexed like the arena's rows.
  class Columns {
   public:
    virtual ~Columns() = default;
    /// Makes room for `rows` arena rows, keeping the first ones' contents.
    virtual void resize(int64_t rows) = 0;
    /// Arena row `to` := row `from`.
    virtual void copy(int64_t from, int64_t to) = 0;
    /// Row i := old row from[i], for i < from.size(): the arena's new, compact order.
    virtual void gather(const std::vector<int64_t>& from) = 0;
  };

  /// Writes new row `i` of a batch at arena row `at` (its id is already set).
  using Put = std::function<void(int64_t at, int64_t i)>;

  std::vector<int64_t> begin, end, limit;  // per list; empty until reset()
  std::vector<int64_t> ids;                // the user id of each arena row

  int64_t nlist() const noexcept { return static_cast<int64_t>(begin.size()); }
  bool ready() const noexcept { return !begin.empty(); }
  int64_t size() const noexcept { return count_; }
  int64_t length(int64_t l) const noexcept { return end[size_t(l)] - begin[size_t(l)]; }
  int64_t arena_rows() const noexcept { return static_cast<int64_t>(ids.size()); }
  bool is_compact() const noexcept;
  /// nlist + 1 offsets of a compact arena (list l is rows offsets[l] .. offsets[l + 1]).
  std::vector<int64_t> offsets() const;
  /// Every list's rows, list after list: the compact order of the arena's rows.
  std::vector<int64_t> compact_order() const;
  /// A compact arena holding these lists, and in `order` the rows it took, in its order (for the
  /// caller to gather its columns).
  ListArena compacted(std::vector<int64_t>& order) const;
  /// Slice s of every list cut into `shards` (core/shards.hpp's shard_rows), as a compact arena
  /// with the same lists, and in `rows` the arena rows it took, in its order: one GPU's part of a
  /// multi-GPU search, where each probe scans a part of the same list on every GPU.
  ListArena slice(int64_t shards, int64_t s, std::vector<int64_t>& rows) const;
  /// The arena row of `id` in list l, or -1 (a binary search: the list is in id order).
  int64_t find(int64_t l, int64_t id) const;
  /// The rows `filter` allows, as a mask (bit r of word r / 64) over the arena's rows, or with
  /// `compact` over the compact positions (list after list, the GPU copy's).
  std::vector<uint64_t> mask(const IdFilter& filter, bool compact) const;

  /// Empty lists (after training).
  void reset(int64_t nlist, Columns& c);
  /// Merges new rows into list l: `row_ids[i]` for the batch rows rows[0..), sorted by id and not
  /// held; put() writes their other columns.
  void merge(int64_t l, const std::vector<int64_t>& rows, const std::vector<int64_t>& row_ids, Columns& c,
             const Put& put);
  /// Removes the rows of list l whose ids `gone` holds (sorted); returns how many.
  int64_t erase(int64_t l, const std::vector<int64_t>& gone, Columns& c);
  /// Rewrites the arena with every list packed in order and no spare rows.
  void compact(Columns& c);
  /// compact() once spare rows and garbage are more than half the arena.
  void compact_if_sparse(Columns& c);
  /// Compact lists from saved offsets and ids (the columns are the caller's, already compact).
  void assign(const std::vector<int64_t>& offsets, std::vector<int64_t> row_ids);

 private:
  /// Moves list l to the arena's end with room for `capacity` rows.
  void move_list(int64_t l, int64_t capacity, Columns& c);
  void grow(int64_t rows, Columns& c);

  int64_t count_ = 0;  // rows held by the lists
};

}  // namespace simkit::detail
