#pragma once
// The row preparation of ivf_pq's coded space (index/ivf_pq_lists.hpp): what a stored row goes
// through before it meets the centroids and the code books, and what a query goes through
// before its lookup tables are built. Shared by the index (train, add) and the backends
// (search) so both sides of a table see the same preparation.

#include <cstdint>

#include "core/metric_plan.hpp"
#include "index/ivf/ivf_pq_lists.hpp"

namespace simkit::detail {

/// out row r = row r of x prepared for the plan (n x d, both contiguous; out may equal x):
/// as given, unit norm (cosine), or centred then unit norm (pearson). Norms and means in
/// float64; a zero (or, for pearson, constant) row becomes all zeros, as in the k-NN epilogues.
void prepare_pq_rows(const MetricPlan& plan, const float* x, int64_t n, int64_t d, float* out);

/// For the squared-distance form, |q' - c - e|^2 = |q' - c|^2 + sum_j (|e_j|^2 + 2 c_j.e_j) -
/// 2 q'.e for a row coded as e in the list of c: the middle sum depends on the row alone, so it
/// is stored per row (4 bytes) and the search needs only the query's -2 q'_j.e_s table and
/// |q' - c|^2 per list. The term of one row with these codes in list `list`, in float64
/// rounded once.
float pq_row_term(const IvfPqLists& L, int64_t list, const uint8_t* code);

/// Sets L.row_terms for every row of the lists (empty for the other forms).
void make_row_terms(IvfPqLists& L);

}  // namespace simkit::detail
