#pragma once
// An allow-list in the form a scan tests it (SearchParams::allowed): a bitmap over the id space
// when the ids are dense enough (one bit per id up to the largest, at most 64 per allowed id
// plus 8 MiB), else a hash set -- FAISS's IDSelectorBitmap and IDSelectorBatch. It is built once
// per search in O(allowed) and turned into a row mask by one pass over the rows' ids, which is
// what the scans read: a bit per row, so the filter costs the scan one test per row offered.

#include <cstdint>
#include <unordered_set>
#include <vector>

#include <simkit/array.hpp>

namespace simkit::detail {

class IdFilter {
 public:
  /// `allowed`: checked by check_allowed (host memory, ascending, no repeats).
  explicit IdFilter(ArrayView<const int64_t> allowed);

  bool allows(int64_t id) const noexcept {
    if (!bitmap_.empty() || hashed_.empty())
      return id >= 0 && id < limit_ && ((bitmap_[size_t(id >> 6)] >> (id & 63)) & 1u);
    return hashed_.count(id) != 0;
  }

  /// The dense form, when the filter has it: bit id of word id / 64 for ids below limit()
  /// (empty for the hash-set form, and for a filter allowing nothing).
  const std::vector<uint64_t>& bitmap() const noexcept { return bitmap_; }
  int64_t limit() const noexcept { return limit_; }

  /// Sets bit (at + i) of `mask` (bit r of word r / 64) for each allowed ids[i], i < count;
  /// returns how many were set.
  int64_t mark(const int64_t* ids, int64_t count, int64_t at, uint64_t* mask) const;

 private:
  std::vector<uint64_t> bitmap_;
  int64_t limit_ = 0;  // ids below it are in the bitmap's range
  std::unordered_set<int64_t> hashed_;
};

}  // namespace simkit::detail
