#include "index/id_map.hpp"

#include <algorithm>
#include <string>

#include <simkit/error.hpp>

#include "core/expects.hpp"
#include "core/quoted_path.hpp"

namespace simkit::detail {

std::vector<int64_t> IdMap::assign(ArrayView<const int64_t> given, int64_t n) const {
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

void IdMap::spill(int64_t from) {
  for (int64_t id = from; id < dense_; ++id) slots_.emplace(id, id);
  dense_ = std::min(dense_, from);
}

void IdMap::set(int64_t id, int64_t slot) {
  next_ = std::max(next_, id + 1);
  if (id < dense_) {
    if (slot == id) return;
    spill(id);
  }
  if (id == dense_ && slot == id) {  // extends the range, with any identity entries just above it
    slots_.erase(id);
    ++dense_;
    for (auto it = slots_.find(dense_); it != slots_.end() && it->second == dense_; it = slots_.find(dense_)) {
      slots_.erase(it);
      ++dense_;
    }
    return;
  }
  slots_.insert_or_assign(id, slot);
}

std::optional<int64_t> IdMap::find(int64_t id) const {
  if (id >= 0 && id < dense_) return id;
  const auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> IdMap::erase(int64_t id) {
  if (id >= 0 && id < dense_) {
    spill(id + 1);
    dense_ = id;
    return id;
  }
  const auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  const int64_t slot = it->second;
  slots_.erase(it);
  return slot;
}

void IdMap::insert(const std::vector<int64_t>& ids) {
  for (int64_t id : ids) set(id, -1);
}

int64_t IdMap::erase(ArrayView<const int64_t> ids) {
  check_remove_ids(ids);
  int64_t held = 0;
  for (int64_t i = 0; i < ids.size; ++i) held += erase(ids[i]) ? 1 : 0;
  return held;
}

void IdMap::reset(const std::vector<int64_t>& ids, int64_t next, const std::string& file) {
  std::vector<int64_t> slots(ids.size());
  for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int64_t>(i);
  reset(ids, slots, next, file);
}

void IdMap::reset(const std::vector<int64_t>& ids, const std::vector<int64_t>& slots, int64_t next,
                  const std::string& file) {
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorCode::io, "not a usable simkit index file: " + quoted_path(file) + ": " + why);
  };
  slots_.clear();
  size_t p = 0;  // the identity prefix is the range
  while (p < ids.size() && ids[p] == int64_t(p) && slots[p] == int64_t(p) && int64_t(p) < next) ++p;
  dense_ = int64_t(p);
  slots_.reserve(ids.size() - p);
  for (size_t i = p; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= next) refuse("ids out of range");
    if (ids[i] < dense_ || !slots_.emplace(ids[i], slots[i]).second)
      refuse("id " + std::to_string(ids[i]) + " is stored twice");
  }
  next_ = next;
}

void IdMap::clear() {
  dense_ = 0;
  slots_.clear();
  next_ = 0;
}

size_t IdMap::memory_bytes() const noexcept {
  // libstdc++: one node per entry (next pointer, key, value, cached hash) and one bucket pointer.
  return slots_.size() * (4 * sizeof(int64_t)) + slots_.bucket_count() * sizeof(void*);
}

void check_remove_ids(ArrayView<const int64_t> ids) {
  SIMKIT_EXPECTS(ids.empty() || ids.where == Memory::host, invalid_argument, "remove: ids must be in host memory");
  SIMKIT_EXPECTS(ids.size >= 0 && (ids.data != nullptr || ids.size == 0), invalid_argument,
                 "remove: the ids have no data");
}

}  // namespace simkit::detail
