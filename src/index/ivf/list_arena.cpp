#include "index/ivf/list_arena.hpp"

#include <algorithm>

#include "core/shards.hpp"

namespace simkit::detail {

namespace {

/// The rows a list gets when it moves: half its new length to spare, at least 16.
int64_t capacity_for(int64_t rows) { return std::max<int64_t>(rows + rows / 2, 16); }

}  // namespace

bool ListArena::is_compact() const noexcept {
  int64_t at = 0;
  for (int64_t l = 0; l < nlist(); ++l) {
    if (begin[size_t(l)] != at) return false;
    at = end[size_t(l)];
  }
  return at == arena_rows();
}

std::vector<int64_t> ListArena::offsets() const {
  std::vector<int64_t> o(begin.begin(), begin.end());
  o.push_back(nlist() > 0 ? end.back() : 0);
  return o;
}

std::vector<int64_t> ListArena::compact_order() const {
  std::vector<int64_t> order;
  order.reserve(size_t(count_));
  for (int64_t l = 0; l < nlist(); ++l)
    for (int64_t r = begin[size_t(l)]; r < end[size_t(l)]; ++r) order.push_back(r);
  return order;
}

ListArena ListArena::compacted(std::vector<int64_t>& order) const {
  order = compact_order();
  std::vector<int64_t> packed(order.size()), o{0};
  for (size_t i = 0; i < order.size(); ++i) packed[i] = ids[size_t(order[i])];
  for (int64_t l = 0; l < nlist(); ++l) o.push_back(o.back() + length(l));
  ListArena out;
  out.assign(o, std::move(packed));
  return out;
}

ListArena ListArena::slice(int64_t shards, int64_t s, std::vector<int64_t>& rows) const {
  std::vector<int64_t> offsets{0}, taken;
  rows.clear();
  for (int64_t l = 0; l < nlist(); ++l) {
    const RowRange r = shard_rows(length(l), shards, s);
    for (int64_t j = 0; j < r.rows; ++j) rows.push_back(begin[size_t(l)] + r.first + j);
    offsets.push_back(int64_t(rows.size()));
  }
  for (int64_t row : rows) taken.push_back(ids[size_t(row)]);
  ListArena out;
  out.assign(offsets, std::move(taken));
  return out;
}

int64_t ListArena::find(int64_t l, int64_t id) const {
  const auto first = ids.begin() + begin[size_t(l)], last = ids.begin() + end[size_t(l)];
  const auto it = std::lower_bound(first, last, id);
  return it != last && *it == id ? it - ids.begin() : -1;
}

std::vector<uint64_t> ListArena::mask(const IdFilter& filter, bool compact) const {
  std::vector<uint64_t> out(size_t(((compact ? count_ : arena_rows()) + 63) / 64), 0);
  int64_t at = 0;
  for (int64_t l = 0; l < nlist(); ++l) {
    filter.mark(ids.data() + begin[size_t(l)], length(l), compact ? at : begin[size_t(l)], out.data());
    at += length(l);
  }
  return out;
}

void ListArena::reset(int64_t lists, Columns& c) {
  begin.assign(size_t(lists), 0);
  end.assign(size_t(lists), 0);
  limit.assign(size_t(lists), 0);
  ids.clear();
  c.resize(0);
}

void ListArena::grow(int64_t rows, Columns& c) {
  const size_t n = size_t(arena_rows() + rows);
  if (n > ids.capacity())
    ids.reserve(std::max(n, ids.size() + ids.size() / 2));  // by half: the arena may be most of memory
  ids.resize(n);
  c.resize(int64_t(n));
}

void ListArena::move_list(int64_t l, int64_t capacity, Columns& c) {
  const int64_t len = length(l), at = arena_rows();
  grow(capacity, c);
  for (int64_t j = 0; j < len; ++j) {
    ids[size_t(at + j)] = ids[size_t(begin[size_t(l)] + j)];
    c.copy(begin[size_t(l)] + j, at + j);
  }
  begin[size_t(l)] = at;
  end[size_t(l)] = at + len;
  limit[size_t(l)] = at + capacity;
}

void ListArena::merge(int64_t l, const std::vector<int64_t>& rows, const std::vector<int64_t>& row_ids, Columns& c,
                      const Put& put) {
  const int64_t add = static_cast<int64_t>(rows.size()), len = length(l);
  if (add == 0) return;
  // A list filled from empty by a batch (a bulk build) gets exactly its rows: a static index
  // carries no spare rows (WordNet, ivf_flat: 185 MB, not 280); it moves, with room, on its first
  // later write.
  if (begin[size_t(l)] + len + add > limit[size_t(l)])
    move_list(l, len == 0 && add >= 16 ? add : capacity_for(len + add), c);
  // Backwards, so the list's own rows move at most once and only those after the first new one.
  const int64_t b = begin[size_t(l)];
  int64_t w = b + len + add - 1, r = b + len - 1, f = add - 1;
  while (f >= 0) {
    const int64_t x = rows[size_t(f)];
    if (r >= b && ids[size_t(r)] > row_ids[size_t(x)]) {
      ids[size_t(w)] = ids[size_t(r)];
      c.copy(r--, w--);
      continue;
    }
    ids[size_t(w)] = row_ids[size_t(x)];
    put(w--, x);
    --f;
  }
  end[size_t(l)] = b + len + add;
  count_ += add;
}

int64_t ListArena::erase(int64_t l, const std::vector<int64_t>& gone, Columns& c) {
  int64_t out = begin[size_t(l)];
  for (int64_t r = begin[size_t(l)]; r < end[size_t(l)]; ++r) {
    if (std::binary_search(gone.begin(), gone.end(), ids[size_t(r)])) continue;
    if (out != r) {
      ids[size_t(out)] = ids[size_t(r)];
      c.copy(r, out);
    }
    ++out;
  }
  const int64_t removed = end[size_t(l)] - out;
  end[size_t(l)] = out;
  count_ -= removed;
  return removed;
}

void ListArena::compact(Columns& c) {
  std::vector<int64_t> order;
  ListArena packed = compacted(order);
  c.gather(order);
  *this = std::move(packed);
}

void ListArena::compact_if_sparse(Columns& c) {
  if (2 * (arena_rows() - count_) > arena_rows() && arena_rows() > 4096) compact(c);
}

void ListArena::assign(const std::vector<int64_t>& o, std::vector<int64_t> row_ids) {
  begin.assign(o.begin(), o.end() - 1);
  end.assign(o.begin() + 1, o.end());
  limit = end;
  ids = std::move(row_ids);
  count_ = arena_rows();
}

}  // namespace simkit::detail
