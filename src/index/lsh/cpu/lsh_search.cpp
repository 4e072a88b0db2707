// CPU lsh search: hash the queries (one sgemm against every table's projections), gather each
// query's candidates from its probed buckets (index/lsh_hash.hpp), rank them with knn's rule.
//
// knn's rule over the candidates: float32 keys for all of them (BlockEngine, the products and
// epilogues knn itself uses), the best kc = plan.candidates(k, count) by (key, row) kept with
// TopK, and only those re-scored in float64 and ranked by (exact key, row) (core/rescore.hpp);
// l1 is ranked on its float32 values, which are final. Rows are in id order, so (key, row) is
// (key, id). Re-scoring every candidate in float64 instead costs three scalar passes per pair,
// minutes per batch when most rows are candidates.
//
// Queries go in knn's query tiles (kQueryTile rows of Q, at the same offsets), and each tile
// picks one of two regimes by its candidate fraction f = candidates / (tile rows x rows):
//   dense (f > 1/8)  the tile's keys against every row, a kBaseTile of rows at a time exactly
//                    as knn computes them, non-candidates skipped through a per-query bitmap.
//                    A GEMM over all rows runs near peak; a row-by-row gather of most of them
//                    cannot. With every bucket probed this is knn's computation, tile for tile,
//                    so the float32 keys, the kept kc and hence the result are knn's bit for bit.
//   sparse           each query's candidates in row order, each key a SIMD float32 sum straight
//                    from the row (the epilogue's form: cosine / pearson scaled by the rows'
//                    inverse norms, squared distances summed directly); work ~ f n d.
// Both regimes split over Context::threads; the rows' statistics are computed once per index
// version (LshTables::stats).

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/parallel.hpp"
#include "core/rescore.hpp"
#include "core/simd.hpp"
#include "cpu/block.hpp"
#include "cpu/l1.hpp"
#include "cpu/select/top_k.hpp"
#include "index/lsh/lsh_hash.hpp"
#include "index/lsh/lsh_searchers.hpp"

namespace simkit::detail::cpu {

namespace {

/// The rows' statistics, shared by every search until the index changes.
std::shared_ptr<const RowStats> base_stats(const LshTables& T, int threads) {
  std::lock_guard g(T.stats_mutex);
  if (!T.stats) T.stats = std::make_shared<const RowStats>(row_stats(T.rows(), T.plan, threads));
  return T.stats;
}

// Float32 sums of one pair, eight lanes at a time: the sparse regime's keys.
float dot(const float* a, const float* b, int64_t d) {
  simd::f8 s0{}, s1{};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 += simd::load8(a + i) * simd::load8(b + i);
    s1 += simd::load8(a + i + 8) * simd::load8(b + i + 8);
  }
  for (; i + 8 <= d; i += 8) s0 += simd::load8(a + i) * simd::load8(b + i);
  float s = static_cast<float>(simd::sum_as_double(s0 + s1));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

/// a . (b - mean): b centred on the fly, for pearson (a is centred already).
float centred_dot(const float* a, const float* b, float mean, int64_t d) {
  const simd::f8 m = simd::f8{} + mean;
  simd::f8 s0{};
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) s0 += simd::load8(a + i) * (simd::load8(b + i) - m);
  float s = static_cast<float>(simd::sum_as_double(s0));
  for (; i < d; ++i) s += a[i] * (b[i] - mean);
  return s;
}

float sqdist(const float* a, const float* b, int64_t d) {
  simd::f8 s0{}, s1{};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    const simd::f8 u = simd::load8(a + i) - simd::load8(b + i), w = simd::load8(a + i + 8) - simd::load8(b + i + 8);
    s0 += u * u;
    s1 += w * w;
  }
  for (; i + 8 <= d; i += 8) {
    const simd::f8 u = simd::load8(a + i) - simd::load8(b + i);
    s0 += u * u;
  }
  float s = static_cast<float>(simd::sum_as_double(s0 + s1));
  for (; i < d; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

struct Scratch {
  LshCandidates cands;
  BlockEngine::Workspace ws;
  std::vector<float> block, gathered;
  std::vector<TopK> lists;
  TopK one;
  std::vector<Candidate> merged;
  std::vector<int64_t> picked, rows;
  ExactPairs exact;
  int64_t short_rows = 0, candidates = 0;
};

/// A stripe's selections for the queries of the current tile: query i's pairs are
/// pairs[start[i] .. start[i + 1]).
struct Partial {
  std::vector<Candidate> pairs;
  std::vector<int64_t> start;
};

class Search {
 public:
  Search(const LshSearchArgs& a, const RowStats& q_stats, const RowStats& x_stats)
      : a_(a), T_(*a.tables), q_stats_(q_stats), x_stats_(x_stats) {}

  /// One query's candidates (the rows marked in `marks`): each one's float32 key straight from
  /// its row, the best kc kept, then finish(). Copying the rows into a block for sgemm cost
  /// more than the products: a candidate's row is read once here, from wherever it lies.
  void sparse(int64_t q, const uint64_t* marks, Scratch& sc) const {
    const MetricPlan& plan = T_.plan;
    const int64_t d = T_.dim, words = (T_.size() + 63) / 64;
    // Ascending, so that TopK's tie rule on positions is the (key, row) rule.
    std::vector<int64_t>& rows = sc.rows;
    rows.clear();
    for (int64_t w = 0; w < words; ++w)
      for (uint64_t b = marks[w]; b; b &= b - 1) rows.push_back(w * 64 + std::countr_zero(b));
    const auto count = static_cast<int64_t>(rows.size());
    sc.merged.clear();
    if (count == 0) return finish(q, sc.merged, 0, sc);

    const float* query = a_.Q.row(q);
    if (plan.prep == RowPrep::centre_normalize) {
      sc.gathered.resize(static_cast<size_t>(d));
      centre_rows(query, 1, d, q_stats_.mean.data() + q, sc.gathered.data());
      query = sc.gathered.data();
    }
    const double q_inv = q_stats_.inv.empty() ? 0 : q_stats_.inv[static_cast<size_t>(q)];
    sc.block.resize(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) {
      const int64_t r = rows[static_cast<size_t>(j)];
      if (j + 2 < count) {
        const char* next = reinterpret_cast<const char*>(T_.vectors.data() + rows[static_cast<size_t>(j + 2)] * d);
        for (int64_t b = 0; b < d * 4; b += 64) __builtin_prefetch(next + b);
      }
      const float* x = T_.vectors.data() + r * d;
      float v;
      if (!plan.product) {
        l1_block(query, 1, x, 1, d, &v, 1);  // knn's own l1 bits
      } else if (plan.prep != RowPrep::none) {
        const float c = plan.prep == RowPrep::centre_normalize
                            ? centred_dot(query, x, static_cast<float>(x_stats_.mean[static_cast<size_t>(r)]), d)
                            : dot(query, x, d);
        double u = static_cast<double>(c) * q_inv * x_stats_.inv[static_cast<size_t>(r)];
        u = u > 1.0 ? 1.0 : (u < -1.0 ? -1.0 : u);  // as cosine_epilogue clamps
        v = static_cast<float>(u);
      } else if (plan.expanded) {
        v = sqdist(query, x, d);  // the direct form: no expansion to cancel
      } else {
        v = dot(query, x, d);
      }
      sc.block[static_cast<size_t>(j)] = v;
    }
    TopK& list = sc.one;
    list.reset(std::max<int64_t>(1, kc(count)), count);
    if (plan.negate)
      list.offer<true>(sc.block.data(), count, 0);
    else
      list.offer<false>(sc.block.data(), count, 0);
    for (Candidate c : list.best()) sc.merged.push_back({c.key, rows[static_cast<size_t>(c.id)]});
    finish(q, sc.merged, count, sc);
  }

  /// How many candidates of `count` the float32 selection keeps (k for l1).
  int64_t kc(int64_t count) const { return std::min(T_.plan.candidates(a_.k, count), count); }

  /// Writes query q's k values and ids from its float32 selection `cands` (ids are rows).
  void finish(int64_t q, std::vector<Candidate>& cands, int64_t count, Scratch& sc) const {
    const MetricPlan& plan = T_.plan;
    const int64_t k = a_.k, have = std::min(k, count), keep = kc(count);
    float* values = a_.values.row(q);
    int64_t* ids = a_.ids.row(q);
    sc.candidates += count;
    if (count < k) ++sc.short_rows;
    if (static_cast<int64_t>(cands.size()) > keep) {
      std::nth_element(cands.begin(), cands.begin() + (keep - 1), cands.end(), ranks_before);
      cands.resize(static_cast<size_t>(keep));
    }
    if (plan.rescores()) {
      sc.picked.clear();
      for (const Candidate& c : cands) sc.picked.push_back(c.id);
      rescore_rank(plan, a_.Q.row(q), T_.rows(), sc.picked.data(), static_cast<int64_t>(sc.picked.size()), have, values,
                   ids, sc.exact);
    } else {
      std::sort(cands.begin(), cands.end(), ranks_before);
      for (int64_t p = 0; p < have; ++p) {
        values[p] = static_cast<float>(plan.value_of_key(cands[static_cast<size_t>(p)].key));
        ids[p] = cands[static_cast<size_t>(p)].id;
      }
    }
    const float worst = plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    for (int64_t p = 0; p < have; ++p) ids[p] = T_.ids[static_cast<size_t>(ids[p])];
    for (int64_t p = have; p < k; ++p) values[p] = worst, ids[p] = -1;
  }

 private:
  const LshSearchArgs& a_;
  const LshTables& T_;
  const RowStats& q_stats_;
  const RowStats& x_stats_;
};

}  // namespace

void lsh_search(const Context& ctx, const LshSearchArgs& a) {
  const LshTables& T = *a.tables;
  translate_bad_alloc("lsh search", [&] {
    const int threads = cpu_threads(ctx);
    const int64_t m = a.Q.rows, H = T.hashes(), n = T.size();
    std::vector<float> proj(static_cast<size_t>(m * H));
    lsh_project(T, a.Q, proj.data(), threads);

    const BlasSerialScope serial_blas;
    const MetricPlan& plan = T.plan;
    const std::shared_ptr<const RowStats> x_stats = base_stats(T, threads);
    const RowStats q_stats = row_stats(a.Q, plan, threads);
    const BlockEngine engine(plan, a.Q, q_stats, T.rows(), *x_stats);
    const Search search(a, q_stats, *x_stats);
    Context quiet = ctx;
    quiet.progress = nullptr;

    const int64_t words = (n + 63) / 64;
    const int64_t x_tiles = (n + kBaseTile - 1) / kBaseTile;
    const int64_t per_stripe = std::max<int64_t>(1, (x_tiles + 4 * threads - 1) / (4 * threads));
    const int64_t stripes = std::max<int64_t>(1, (x_tiles + per_stripe - 1) / per_stripe);
    std::vector<Scratch> scratch(static_cast<size_t>(threads));
    std::vector<int64_t> counts(static_cast<size_t>(std::min(kQueryTile, m)));
    // The tile's candidates as one bitmap per query: a few MiB where lists of rows would take
    // 8 bytes per candidate, and the sparse regime reads its rows off it in ascending order.
    std::vector<uint64_t> marks;
    std::vector<Partial> partial(static_cast<size_t>(stripes));

    for (int64_t i0 = 0; i0 < m; i0 += kQueryTile) {
      const int64_t tq = std::min(kQueryTile, m - i0);
      marks.assign(static_cast<size_t>(tq * words), 0);
      run_tasks(quiet, threads, tq, [&](int64_t i, int tid) {
        LshCandidates& c = scratch[static_cast<size_t>(tid)].cands;
        counts[static_cast<size_t>(i)] = c.mark(T, proj.data() + (i0 + i) * H, a.probes, marks.data() + i * words);
      });
      double total = 0;
      for (int64_t i = 0; i < tq; ++i) total += static_cast<double>(counts[static_cast<size_t>(i)]);

      if (n > 0 && total * 8 > static_cast<double>(tq) * static_cast<double>(n)) {
        run_tasks(quiet, threads, stripes, [&](int64_t s, int tid) {
          Scratch& sc = scratch[static_cast<size_t>(tid)];
          sc.ws.q_at = sc.ws.x_at = -1;  // the sparse regime may have left another engine's copies
          const int64_t t0 = s * per_stripe, t1 = std::min(x_tiles, t0 + per_stripe);
          const int64_t offered = std::min(n, t1 * kBaseTile) - t0 * kBaseTile;
          if (static_cast<int64_t>(sc.lists.size()) < tq) sc.lists.resize(static_cast<size_t>(tq));
          for (int64_t i = 0; i < tq; ++i) {
            const int64_t count = counts[static_cast<size_t>(i)];
            sc.lists[static_cast<size_t>(i)].reset(std::max<int64_t>(1, search.kc(count)), offered);
          }
          sc.block.resize(static_cast<size_t>(tq * kBaseTile));
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t j0 = t * kBaseTile, tx = std::min(kBaseTile, n - j0);
            engine.compute(sc.ws, i0, tq, j0, tx, sc.block.data(), tx, /*squared=*/true);
            for (int64_t i = 0; i < tq; ++i) {
              TopK& list = sc.lists[static_cast<size_t>(i)];
              const float* row = sc.block.data() + i * tx;
              const uint64_t* mk = marks.data() + i * words;
              if (plan.negate)
                list.offer_marked<true>(row, tx, j0, mk);
              else
                list.offer_marked<false>(row, tx, j0, mk);
            }
          }
          Partial& out = partial[static_cast<size_t>(s)];
          out.pairs.clear();
          out.start.assign(1, 0);
          for (int64_t i = 0; i < tq; ++i) {
            const std::vector<Candidate>& best = sc.lists[static_cast<size_t>(i)].best();
            out.pairs.insert(out.pairs.end(), best.begin(), best.end());
            out.start.push_back(static_cast<int64_t>(out.pairs.size()));
          }
        });
        // Every stripe kept its best kc, so their union holds the overall best kc.
        run_tasks(quiet, threads, tq, [&](int64_t i, int tid) {
          Scratch& sc = scratch[static_cast<size_t>(tid)];
          sc.merged.clear();
          for (const Partial& p : partial)
            sc.merged.insert(sc.merged.end(), p.pairs.begin() + p.start[static_cast<size_t>(i)],
                             p.pairs.begin() + p.start[static_cast<size_t>(i + 1)]);
          search.finish(i0 + i, sc.merged, counts[static_cast<size_t>(i)], sc);
        });
      } else {
        run_tasks(quiet, threads, tq, [&](int64_t i, int tid) {
          search.sparse(i0 + i, marks.data() + i * words, scratch[static_cast<size_t>(tid)]);
        });
      }
      if (ctx.progress) ctx.progress(static_cast<double>(i0 + tq) / static_cast<double>(m));
    }
    for (const Scratch& sc : scratch) {
      if (a.short_rows) *a.short_rows += sc.short_rows;
      if (a.candidates) *a.candidates += sc.candidates;
    }
  });
}

}  // namespace simkit::detail::cpu
