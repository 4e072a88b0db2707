#pragma once
// The lsh family's searchers, one per backend, beside the family (cpu/, cuda/): what the index
// hands them and their entry points (see index/ivf/ivf_searchers.hpp for the pattern).

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

#include "index/lsh/lsh_tables.hpp"

namespace simkit::detail {

/// One lsh search (index/lsh_index.cpp): Q (the queries as given) may live on the device for the
/// GPU backend; the outputs are host Q.rows x k. probes >= 1; the index holds >= 1 row. Each
/// query's candidates (index/lsh_hash.hpp, LshCandidates) are ranked by knn's rule: float64
/// keys (l1: its float32 value, as knn computes it) by (key, id). Rows short of k are padded
/// with (worst, -1) and counted -- never topped up by a scan of the rest.
struct LshSearchArgs {
  const LshTables* tables = nullptr;
  MatrixView<const float> Q;
  int64_t k = 0;
  int64_t probes = 0;
  MatrixView<float> values;
  MatrixView<int64_t> ids;
  int64_t* short_rows = nullptr;  // += queries padded
  int64_t* candidates = nullptr;  // += distinct candidates, over the queries
};

namespace cpu {
/// Hash the queries, gather each one's probed buckets, rank the candidates exactly (cpu/lsh_search.cpp).
void lsh_search(const Context& ctx, const LshSearchArgs& a);
}  // namespace cpu

namespace cuda {
/// The same on the GPU (cuda/lsh_search.cpp).
void lsh_search(const Context& ctx, const LshSearchArgs& a);
}  // namespace cuda

}  // namespace simkit::detail
