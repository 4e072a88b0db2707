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
// Layout: the rows of list l are rows offsets[l] .. offsets[l + 1] of `codes` (m bytes each),
// contiguous per list and in id order within a list, so ties between equal keys go to the lower
// id as in ivf_flat (index/ivf_lists.hpp). When the index keeps the original vectors (refine > 0)
// `vectors` holds them, as given, in the same order: the exact re-rank then sees what knn sees.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"
#include "index/ivf_lists.hpp"

namespace simkit::detail {

/// The per-sub-space table form (see above).
enum class PqTable : uint8_t { sqdist, neg_dot, l1 };

struct IvfPqLists {
  int64_t dim = 0;
  int64_t nlist = 0;
  int64_t m = 0;                        // sub-quantizers; dsub = dim / m
  int64_t ksub = 0;                     // centroids per sub-space (<= 256)
  MetricPlan plan;                      // the index's metric: prep for the coded space, exact re-rank
  Metric coarse = Metric::sqeuclidean;  // how prepared rows and queries meet the centroids
  PqTable table = PqTable::sqdist;
  std::vector<float> centroids;  // nlist x dim, in the coded (prepared) space
  std::vector<float> codebooks;  // (m * ksub) x dsub: sub-space j's entries are rows j * ksub ..
  std::vector<int64_t> offsets;  // nlist + 1
  std::vector<uint8_t> codes;    // size() x m, list after list
  std::vector<int64_t> ids;      // the user id of each row
  bool keeps_vectors = false;    // refine > 0 at build time
  bool refine_on_device = true;  // a GPU search re-ranks with a device copy of `vectors`
  std::vector<float> vectors;    // size() x dim as given, when keeps_vectors
  /// The squared-distance form's row terms, one per row in `codes` order: the sum over sub-spaces
  /// j of |e_j|^2 + 2 c_j.e_j, e_j the row's code book entry and c its list's centroid (that is
  /// |c + e|^2 - |c|^2), in float64 rounded once (ivf_pq_prep.hpp, make_row_terms). Empty for the
  /// other forms and for lists made without them; the search then builds each table whole.
  std::vector<float> row_terms;

  int64_t dsub() const noexcept { return m > 0 ? dim / m : 0; }
  int64_t size() const noexcept { return offsets.empty() ? 0 : offsets.back(); }
  MatrixView<const float> centroid_rows() const noexcept { return {centroids.data(), nlist, dim}; }

  /// The device copy, made by the CUDA backend on first use and reset by every change.
  mutable std::mutex device_mutex;
  mutable std::shared_ptr<IvfDeviceLists> device;
};

}  // namespace simkit::detail
