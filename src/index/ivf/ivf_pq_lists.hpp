#pragma once
// What an ivf_pq index stores, in the form both backends scan (core/backend.hpp,
// Backend::ivf_pq_search). The index (index/ivf_pq_index.cpp) owns it and changes it only under
// its exclusive lock; a search reads it under the shared lock.
//
// The coded space. Vectors are coded after the metric's row preparation, so that one squared
// distance table serves every metric that is a distance between prepared rows:
//   l2, sqeuclidean   rows as given                        table: squared l2   bias 0
//   cosine            rows scaled to unit norm             table: squared l2   bias 0
//   pearson           rows centred, then unit norm         table: squared l2   bias 0
//   dot               rows as given                        table: -inner prod  bias -q.c
//   l1                rows as given                        table: l1           bias 0
// (for unit rows, |q - x|^2 = 2 - 2 cos, so the cosine order is the squared-distance order).
// A row joins the cell whose centroid is nearest under `coarse` (as ivf_flat) and is stored as
// the m codes of its residual r = x' - c (x' the prepared row). For a query q' and a probed
// cell c the lookup table is T[j][s] = table form of (q'_j - c_j) against code book entry s of
// sub-space j (dot: of q_j against it), and a row's approximate key (smaller is better) is
// bias + sum_j T[j][code_j].
//
// Layout: the cells and list arena of ivf_core.hpp (list l is arena rows begin[l] .. end[l], in
// id order, so ties between equal keys go to the lower id as in ivf_flat); per arena row, `codes`
// holds its m bytes and `row_terms` its table term. When the index keeps the original vectors
// (refine > 0) `vectors` holds them, as given, per arena row: the exact re-rank then sees what
// knn sees.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"
#include "index/ivf/ivf_core.hpp"

namespace simkit::detail {

/// The per-sub-space table form (see above).
enum class PqTable : uint8_t { sqdist, neg_dot, l1 };

struct IvfPqLists : IvfCore {
  int64_t m = 0;     // sub-quantizers; dsub = dim / m
  int64_t ksub = 0;  // centroids per sub-space (<= 256)
  PqTable table = PqTable::sqdist;
  std::vector<float> codebooks;  // (m * ksub) x dsub: sub-space j's entries are rows j * ksub ..
  std::vector<uint8_t> codes;    // arena rows x m
  bool keeps_vectors = false;    // refine > 0 at build time
  bool refine_on_device = true;  // a GPU search re-ranks with a device copy of `vectors`
  std::vector<float> vectors;    // arena rows x dim as given, when keeps_vectors
  /// The squared-distance form's row terms, one per arena row: the sum over sub-spaces j of
  /// |e_j|^2 + 2 c_j.e_j, e_j the row's code book entry and c its list's centroid (that is
  /// |c + e|^2 - |c|^2), in float64 rounded once (ivf_pq_prep.hpp, pq_row_term). Empty for the
  /// other forms and for lists made without them; the search then builds each table whole.
  std::vector<float> row_terms;

  int64_t dsub() const noexcept { return m > 0 ? dim / m : 0; }
  bool has_row_terms() const noexcept { return table == PqTable::sqdist; }
};

/// The arena's view of IvfPqLists' per-row arrays (list_arena.hpp).
class IvfPqColumns final : public ListArena::Columns {
 public:
  explicit IvfPqColumns(IvfPqLists& L) : L_(L) {}
  void resize(int64_t rows) override;
  void copy(int64_t from, int64_t to) override;
  void gather(const std::vector<int64_t>& from) override;

 private:
  IvfPqLists& L_;
};

/// L in compact form, for readers that need it (the GPU copy): L itself when it is compact, else
/// a compact copy kept in `holder`.
const IvfPqLists& compact_view(const IvfPqLists& L, std::unique_ptr<IvfPqLists>& holder);

/// L's rows split into `shards` compact IvfPqLists with L's cells and code books, one per GPU of
/// a multi-GPU search: shard s holds slice s of every list (ListArena::slice).
std::vector<std::unique_ptr<IvfPqLists>> split_lists(const IvfPqLists& L, int64_t shards);

}  // namespace simkit::detail
