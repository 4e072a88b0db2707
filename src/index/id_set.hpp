#pragma once
// The ids an index holds: kept sorted, so that add() can refuse clashes and remove() can find
// its rows with binary searches, and the default ids continue one past the largest id seen.

#include <cstdint>
#include <string>
#include <vector>

#include <simkit/array.hpp>

namespace simkit::detail {

class IdSet {
 public:
  /// The ids a batch of n rows will get: `given` when it is not empty (checked: n of them, none
  /// repeated, none already held), else next(), next() + 1, ... Throws Error(invalid_argument);
  /// changes nothing.
  std::vector<int64_t> assign(ArrayView<const int64_t> given, int64_t n) const;
  /// Records ids returned by assign().
  void insert(const std::vector<int64_t>& ids);
  /// Forgets these ids (those not held are ignored); returns how many were held.
  int64_t erase(ArrayView<const int64_t> ids);
  bool contains(int64_t id) const;
  /// Rebuilds from stored ids (load); throws Error(io) on a repeated id.
  void reset(std::vector<int64_t> ids, int64_t next, const std::string& file);

  int64_t size() const noexcept { return static_cast<int64_t>(sorted_.size()); }
  /// Every id held, ascending.
  const std::vector<int64_t>& sorted() const noexcept { return sorted_; }
  int64_t next() const noexcept { return next_; }

 private:
  std::vector<int64_t> sorted_;
  int64_t next_ = 0;
};

}  // namespace simkit::detail
