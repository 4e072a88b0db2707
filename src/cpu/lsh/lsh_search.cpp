// CPU lsh search: hash the queries (one sgemm against every table's projections), gather each
// query's candidates from its probed buckets (index/lsh_hash.hpp), rank them exactly.
//
// Ranking is knn's rule applied to every candidate rather than to a float32 shortlist: the
// re-scoring metrics take core/rescore.cpp's float64 keys (exact_key) for all of them, ranked by
// (key, row) -- rows are in id order, so that is (key, id) -- and l1 takes the float32 value of
// knn's own l1 kernel (cpu/l1.hpp computes each pair independently of its tile, so a 1 x 1 call
// gives the same bits). With every bucket probed the candidates are every row, and the result
// is knn's bit for bit; with fewer, it is knn's over the candidates.

#include <algorithm>
#include <limits>
#include <vector>

#include "core/rescore.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/l1.hpp"
#include "cpu/parallel.hpp"
#include "index/lsh_hash.hpp"

namespace simkit::detail::cpu {

void CpuBackend::lsh_search(const Context& ctx, const LshSearchArgs& a) const {
  const LshTables& T = *a.tables;
  translate_bad_alloc("lsh search", [&] {
    const int threads = cpu_threads(ctx);
    const int64_t m = a.Q.rows, H = T.hashes(), k = a.k, d = T.dim;
    std::vector<float> proj(static_cast<size_t>(m * H));
    lsh_project(T, a.Q, proj.data(), threads);

    struct Scratch {
      LshCandidates cands;
      ExactPairs ranked;
      int64_t short_rows = 0, candidates = 0;
    };
    std::vector<Scratch> scratch(static_cast<size_t>(threads));
    const float worst =
        T.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    run_tasks(ctx, threads, m, [&](int64_t q, int tid) {
      Scratch& sc = scratch[static_cast<size_t>(tid)];
      sc.cands.gather(T, proj.data() + q * H, a.probes);
      const std::vector<int64_t>& rows = sc.cands.rows();
      const int64_t count = static_cast<int64_t>(rows.size());
      const int64_t have = std::min(k, count);
      float* values = a.values.row(q);
      int64_t* ids = a.ids.row(q);
      sc.candidates += count;
      if (count < k) ++sc.short_rows;
      if (T.plan.rescores()) {
        rescore_rank(T.plan, a.Q.row(q), T.rows(), rows.data(), count, have, values, ids, sc.ranked);
      } else {
        sc.ranked.clear();
        for (int64_t r : rows) {
          float v = 0;
          l1_block(a.Q.row(q), 1, T.vectors.data() + r * d, 1, d, &v, 1);
          sc.ranked.emplace_back(static_cast<double>(v), r);
        }
        std::partial_sort(sc.ranked.begin(), sc.ranked.begin() + have, sc.ranked.end());
        for (int64_t p = 0; p < have; ++p) {
          values[p] = static_cast<float>(sc.ranked[size_t(p)].first);
          ids[p] = sc.ranked[size_t(p)].second;
        }
      }
      for (int64_t p = 0; p < have; ++p) ids[p] = T.ids[static_cast<size_t>(ids[p])];
      for (int64_t p = have; p < k; ++p) values[p] = worst, ids[p] = -1;
    });
    for (const Scratch& sc : scratch) {
      if (a.short_rows) *a.short_rows += sc.short_rows;
      if (a.candidates) *a.candidates += sc.candidates;
    }
  });
}

}  // namespace simkit::detail::cpu
