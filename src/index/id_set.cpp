#include "index/id_set.hpp"

#include <algorithm>
#include <string>

#include <simkit/error.hpp>

#include "core/expects.hpp"
#include "core/quoted_path.hpp"

namespace simkit::detail {

std::vector<int64_t> IdSet::assign(ArrayView<const int64_t> given, int64_t n) const {
  std::vector<int64_t> ids;
  if (given.empty()) {
    SIMKIT_EXPECTS(next_ <= INT64_MAX - n, invalid_argument, "add: the default ids would pass INT64_MAX");
    ids.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = next_ + i;
    return ids;
  }
  SIMKIT_EXPECTS(given.where == Memory::host, invalid_argument, "add: ids must be in host memory");
  SIMKIT_EXPECTS(given.size == n, invalid_argument, "add: ", given.size, " ids for ", n, " vectors");
  ids.assign(given.data, given.data + given.size);
  for (int64_t i = 0; i < n; ++i)
    SIMKIT_EXPECTS(ids[static_cast<size_t>(i)] >= 0, invalid_argument, "add: ids must be >= 0 (id ",
                   ids[static_cast<size_t>(i)], " at position ", i, "); -1 marks padding in results");
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  SIMKIT_EXPECTS(dup == sorted.end(), invalid_argument, "add: id ", *dup, " appears more than once in the batch");
  for (int64_t id : sorted)
    SIMKIT_EXPECTS(!contains(id), invalid_argument, "add: id ", id,
                   " is already in the index (remove it first to replace its vector)");
  return ids;
}

void IdSet::insert(const std::vector<int64_t>& ids) {
  if (ids.empty()) return;
  const size_t old = sorted_.size();
  sorted_.insert(sorted_.end(), ids.begin(), ids.end());
  std::sort(sorted_.begin() + static_cast<std::ptrdiff_t>(old), sorted_.end());
  std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(old), sorted_.end());
  next_ = std::max(next_, sorted_.back() + 1);
}

int64_t IdSet::erase(ArrayView<const int64_t> ids) {
  SIMKIT_EXPECTS(ids.empty() || ids.where == Memory::host, invalid_argument, "remove: ids must be in host memory");
  std::vector<int64_t> gone(ids.data, ids.data + ids.size);
  std::sort(gone.begin(), gone.end());
  gone.erase(std::unique(gone.begin(), gone.end()), gone.end());
  const size_t before = sorted_.size();
  std::vector<int64_t> kept;
  kept.reserve(before);
  std::set_difference(sorted_.begin(), sorted_.end(), gone.begin(), gone.end(), std::back_inserter(kept));
  sorted_ = std::move(kept);
  return static_cast<int64_t>(before - sorted_.size());
}

bool IdSet::contains(int64_t id) const { return std::binary_search(sorted_.begin(), sorted_.end(), id); }

void IdSet::reset(std::vector<int64_t> ids, int64_t next, const std::string& file) {
  std::sort(ids.begin(), ids.end());
  const auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end())
    throw Error(ErrorCode::io, "not a usable simkit index file: " + quoted_path(file) + ": id " + std::to_string(*dup) +
                                   " is stored twice");
  if (!ids.empty() && (ids.front() < 0 || next <= ids.back()))
    throw Error(ErrorCode::io, "not a usable simkit index file: " + quoted_path(file) + ": ids out of range");
  sorted_ = std::move(ids);
  next_ = next;
}

}  // namespace simkit::detail
