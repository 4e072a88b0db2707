#include "index/id_filter.hpp"

namespace simkit::detail {

IdFilter::IdFilter(ArrayView<const int64_t> allowed) {
  // Negative ids are never stored (add refuses them): they allow nothing and are skipped.
  int64_t first = 0;
  while (first < allowed.size && allowed[first] < 0) ++first;
  if (first == allowed.size) return;  // an empty bitmap allows nothing
  const int64_t largest = allowed[allowed.size - 1], count = allowed.size - first;
  if (largest < 64 * count + (int64_t{1} << 26)) {
    limit_ = largest + 1;
    bitmap_.assign(size_t((limit_ + 63) / 64), 0);
    for (int64_t i = first; i < allowed.size; ++i) bitmap_[size_t(allowed[i] >> 6)] |= uint64_t{1} << (allowed[i] & 63);
  } else {
    hashed_.reserve(size_t(count));
    for (int64_t i = first; i < allowed.size; ++i) hashed_.insert(allowed[i]);
  }
}

int64_t IdFilter::mark(const int64_t* ids, int64_t count, int64_t at, uint64_t* mask) const {
  int64_t marked = 0;
  if (!bitmap_.empty() || hashed_.empty()) {
    // Without branches on the outcome: at half the rows allowed a branch would miss half the time.
    const uint64_t limit = static_cast<uint64_t>(limit_);
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t id = static_cast<uint64_t>(ids[i]);
      const uint64_t in = id < limit ? 1u : 0u;  // also false for negative ids
      const uint64_t word = bitmap_.empty() ? 0 : bitmap_[size_t((id * in) >> 6)];
      const uint64_t bit = (word >> (id & 63)) & in;
      const int64_t r = at + i;
      mask[size_t(r >> 6)] |= bit << (r & 63);
      marked += static_cast<int64_t>(bit);
    }
    return marked;
  }
  for (int64_t i = 0; i < count; ++i)
    if (hashed_.count(ids[i]) != 0) {
      const int64_t r = at + i;
      mask[size_t(r >> 6)] |= uint64_t{1} << (r & 63);
      ++marked;
    }
  return marked;
}

}  // namespace simkit::detail
