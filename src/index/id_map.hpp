#pragma once
// The ids an index holds, each with the slot where the index keeps its vector (a row of the flat
// index, a (list, position) of an inverted file): a hash map, so that add() refuses clashes and
// remove() finds its rows in O(1) per id, whatever the index's size, and the default ids continue
// one past the largest id ever stored.
//
// The ids 0 .. n-1 held at slots 0 .. n-1 -- a base added with the default ids, the flat index
// in its first form -- are a range, not hash entries: no node, no malloc and no hashing for them
// (48 bytes and a cache miss an id otherwise, which at 10^9 rows is 48 GB and most of the time
// an add takes). A write that breaks the identity (a removal, a row moved) moves the ids above
// it into the hash map, once.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <simkit/array.hpp>

namespace simkit::detail {

class IdMap {
 public:
  /// The ids a batch of n rows will get: `given` when it is not empty (checked: n of them, none
  /// negative or repeated, none already held), else next(), next() + 1, ... Throws
  /// Error(invalid_argument); changes nothing.
  std::vector<int64_t> assign(ArrayView<const int64_t> given, int64_t n) const;
  /// Records an id returned by assign() at `slot`, or moves a held id to another slot.
  void set(int64_t id, int64_t slot);
  /// The slot of a held id.
  std::optional<int64_t> find(int64_t id) const;
  /// Forgets an id; returns its slot when it was held.
  std::optional<int64_t> erase(int64_t id);
  /// Records ids at slots the index does not track (an index that finds rows by its own ids).
  void insert(const std::vector<int64_t>& ids);
  /// Forgets these ids (those not held are ignored); returns how many were held.
  int64_t erase(ArrayView<const int64_t> ids);
  bool contains(int64_t id) const { return (id >= 0 && id < dense_) || slots_.count(id) != 0; }
  /// Rebuilds from stored ids, id i at slots[i] (load); throws Error(io) naming `file` on a
  /// repeated or negative id, or one not below `next`.
  void reset(const std::vector<int64_t>& ids, const std::vector<int64_t>& slots, int64_t next, const std::string& file);
  /// reset() with id i at slot i.
  void reset(const std::vector<int64_t>& ids, int64_t next, const std::string& file);
  void clear();

  int64_t size() const noexcept { return dense_ + static_cast<int64_t>(slots_.size()); }
  int64_t next() const noexcept { return next_; }
  /// Host bytes the map holds (an estimate of the hash table's nodes and buckets).
  size_t memory_bytes() const noexcept;

 private:
  /// Moves the ids [from, dense_) into slots_, each at its own slot, and ends the range at from.
  void spill(int64_t from);

  int64_t dense_ = 0;  // ids 0 .. dense_ - 1 are held at slot == id, and are not in slots_
  std::unordered_map<int64_t, int64_t> slots_;
  int64_t next_ = 0;
};

/// Error(invalid_argument) unless the ids to remove are in host memory.
void check_remove_ids(ArrayView<const int64_t> ids);

}  // namespace simkit::detail
