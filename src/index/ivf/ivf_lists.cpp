#include "index/ivf/ivf_lists.hpp"

#include <algorithm>
#include <cstring>

namespace simkit::detail {

namespace {

template <class Stats>
auto* stat_columns(Stats& s, int i) {
  return i == 0 ? &s.sq : (i == 1 ? &s.inv : &s.mean);
}

/// dst's vectors and statistics := src's rows from[0], from[1], ...
void gather_rows(const IvfLists& src, const std::vector<int64_t>& from, IvfLists& dst) {
  const size_t d = size_t(src.dim);
  dst.vectors.resize(from.size() * d);
  for (size_t i = 0; i < from.size(); ++i)
    std::memcpy(dst.vectors.data() + i * d, src.vectors.data() + size_t(from[i]) * d, d * sizeof(float));
  RowStats& out = dst.stats;
  const RowStats& in = src.stats;
  for (int c = 0; c < 3; ++c) {
    const std::vector<double>& v = *stat_columns(in, c);
    std::vector<double>& w = *stat_columns(out, c);
    w.resize(v.empty() ? 0 : from.size());
    for (size_t j = 0; j < w.size(); ++j) w[j] = v[size_t(from[j])];
  }
}

}  // namespace

void IvfFlatColumns::resize(int64_t rows) {
  const size_t n = static_cast<size_t>(rows);
  if (n * size_t(L_.dim) > L_.vectors.capacity())  // by half, not double: the arena may be most of memory
    L_.vectors.reserve(std::max(n * size_t(L_.dim), L_.vectors.size() + L_.vectors.size() / 2));
  L_.vectors.resize(n * size_t(L_.dim));
  const MetricPlan& plan = L_.plan;  // the statistics cpu::row_stats fills for this plan
  if (plan.expanded) {
    L_.stats.sq.resize(n);
  } else if (plan.prep != RowPrep::none) {
    L_.stats.inv.resize(n);
    if (plan.prep == RowPrep::centre_normalize) L_.stats.mean.resize(n);
  }
}

void IvfFlatColumns::copy(int64_t from, int64_t to) {
  std::memcpy(L_.vectors.data() + to * L_.dim, L_.vectors.data() + from * L_.dim, size_t(L_.dim) * sizeof(float));
  for (int i = 0; i < 3; ++i) {
    std::vector<double>& v = *stat_columns(L_.stats, i);
    if (!v.empty()) v[size_t(to)] = v[size_t(from)];
  }
}

void IvfFlatColumns::gather(const std::vector<int64_t>& from) {
  IvfLists packed;
  gather_rows(L_, from, packed);
  L_.vectors = std::move(packed.vectors);
  L_.stats = std::move(packed.stats);
}

void IvfFlatColumns::put(int64_t at, MatrixView<const float> X, const RowStats& stats, int64_t x) {
  std::memcpy(L_.vectors.data() + at * L_.dim, X.row(x), size_t(L_.dim) * sizeof(float));
  RowStats& s = L_.stats;
  if (!stats.sq.empty()) s.sq[size_t(at)] = stats.sq[size_t(x)];
  if (!stats.inv.empty()) s.inv[size_t(at)] = stats.inv[size_t(x)];
  if (!stats.mean.empty()) s.mean[size_t(at)] = stats.mean[size_t(x)];
}

namespace {

/// An IvfLists with L's cells and no rows.
std::unique_ptr<IvfLists> same_cells(const IvfLists& L) {
  auto C = std::make_unique<IvfLists>();
  C->dim = L.dim;
  C->nlist = L.nlist;
  C->plan = L.plan;
  C->coarse = L.coarse;
  C->centroids = L.centroids;
  return C;
}

}  // namespace

std::vector<std::unique_ptr<IvfLists>> split_lists(const IvfLists& L, int64_t shards) {
  std::vector<std::unique_ptr<IvfLists>> out;
  std::vector<int64_t> rows;
  for (int64_t s = 0; s < shards; ++s) {
    std::unique_ptr<IvfLists> C = same_cells(L);
    C->arena = L.arena.slice(shards, s, rows);
    gather_rows(L, rows, *C);
    out.push_back(std::move(C));
  }
  return out;
}

const IvfLists& compact_view(const IvfLists& L, std::unique_ptr<IvfLists>& holder) {
  if (L.arena.is_compact()) return L;
  holder = same_cells(L);
  IvfLists& C = *holder;
  // Only the held rows travel, in list order: no copy of the spare rows or the garbage.
  std::vector<int64_t> order;
  C.arena = L.arena.compacted(order);
  gather_rows(L, order, C);
  return C;
}

}  // namespace simkit::detail
