#include "index/ivf/ivf_pq_lists.hpp"

#include <algorithm>
#include <cstring>

namespace simkit::detail {

namespace {

/// dst's codes, vectors and row terms := src's rows from[0], from[1], ...
void gather_rows(const IvfPqLists& src, const std::vector<int64_t>& from, IvfPqLists& dst) {
  const size_t m = size_t(src.m), d = size_t(src.dim), n = from.size();
  std::vector<uint8_t> codes(n * m);
  for (size_t i = 0; i < n; ++i) std::memcpy(codes.data() + i * m, src.codes.data() + size_t(from[i]) * m, m);
  std::vector<float> vectors(src.vectors.empty() ? 0 : n * d);
  for (size_t i = 0; i < n && !vectors.empty(); ++i)
    std::memcpy(vectors.data() + i * d, src.vectors.data() + size_t(from[i]) * d, d * sizeof(float));
  std::vector<float> terms(src.row_terms.empty() ? 0 : n);
  for (size_t i = 0; i < terms.size(); ++i) terms[i] = src.row_terms[size_t(from[i])];
  dst.codes = std::move(codes);
  dst.vectors = std::move(vectors);
  dst.row_terms = std::move(terms);
}

}  // namespace

void IvfPqColumns::resize(int64_t rows) {
  const size_t n = static_cast<size_t>(rows);
  auto grow = [n](auto& v, size_t width) {  // by half, not double: the arena may be most of memory
    if (n * width > v.capacity()) v.reserve(std::max(n * width, v.size() + v.size() / 2));
    v.resize(n * width);
  };
  grow(L_.codes, size_t(L_.m));
  if (L_.keeps_vectors) grow(L_.vectors, size_t(L_.dim));
  if (L_.has_row_terms()) grow(L_.row_terms, 1);
}

void IvfPqColumns::copy(int64_t from, int64_t to) {
  std::memcpy(L_.codes.data() + to * L_.m, L_.codes.data() + from * L_.m, size_t(L_.m));
  if (!L_.vectors.empty())
    std::memcpy(L_.vectors.data() + to * L_.dim, L_.vectors.data() + from * L_.dim, size_t(L_.dim) * sizeof(float));
  if (!L_.row_terms.empty()) L_.row_terms[size_t(to)] = L_.row_terms[size_t(from)];
}

void IvfPqColumns::gather(const std::vector<int64_t>& from) { gather_rows(L_, from, L_); }

namespace {

/// An IvfPqLists with L's cells and code books and no rows.
std::unique_ptr<IvfPqLists> same_cells(const IvfPqLists& L) {
  auto C = std::make_unique<IvfPqLists>();
  C->dim = L.dim, C->nlist = L.nlist, C->plan = L.plan, C->coarse = L.coarse, C->centroids = L.centroids;
  C->m = L.m, C->ksub = L.ksub, C->table = L.table, C->codebooks = L.codebooks;
  C->keeps_vectors = L.keeps_vectors, C->refine_on_device = L.refine_on_device;
  return C;
}

}  // namespace

const IvfPqLists& compact_view(const IvfPqLists& L, std::unique_ptr<IvfPqLists>& holder) {
  if (L.arena.is_compact()) return L;
  holder = same_cells(L);
  IvfPqLists& C = *holder;
  // Only the held rows travel, in list order: no copy of the spare rows or the garbage.
  std::vector<int64_t> order;
  C.arena = L.arena.compacted(order);
  gather_rows(L, order, C);
  return C;
}

std::vector<std::unique_ptr<IvfPqLists>> split_lists(const IvfPqLists& L, int64_t shards) {
  std::vector<std::unique_ptr<IvfPqLists>> out;
  std::vector<int64_t> rows;
  for (int64_t s = 0; s < shards; ++s) {
    std::unique_ptr<IvfPqLists> C = same_cells(L);
    C->arena = L.arena.slice(shards, s, rows);
    gather_rows(L, rows, *C);
    out.push_back(std::move(C));
  }
  return out;
}

}  // namespace simkit::detail
