// CPU exact k-NN: the m x n metric is never stored. A task takes one query tile and a run of
// base tiles (a "stripe"), computes each kQueryTile x kBaseTile block with the BlockEngine while
// it sits in cache and feeds every block row to its query's TopK. With many queries one stripe
// covers the whole base and each task writes its queries' answers directly; with few queries
// (a single query over a million rows) the base is cut into several stripes so that every
// thread has work, and the per-stripe selections are merged per query at the end.
//
// l2 and sqeuclidean select on the float32 squared distance from the expanded form, the
// similarities on sgemm's float32 dot products. That rounding (~1e-7 relative, more where
// cancellation is only partly caught) can swap neighbours whose values differ by less than
// that; on integer data many values tie exactly, and equal rows need not get equal bits from
// sgemm; all of these must come out as in a float64 computation with ties to the lower id. So
// the selection keeps k_c = k + max(16, k / 8) candidates, re-scores each one directly in
// float64 (core/exact_metric.hpp) and ranks them by (exact value, id). Where many rows tie at
// the k-th value the margin is not enough (the rounding picks an arbitrary part of the tied
// group): such queries fail the check of core/knn_certify.hpp and are redone exactly against
// every row. l1 is computed directly and ranked by the block values themselves.

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "core/rescore.hpp"
#include "cpu/block.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/dot_family.hpp"
#include "cpu/select/top_k.hpp"

namespace simkit::detail::cpu {

namespace {

/// How many stripes the base is cut into: one when the query tiles alone give every thread a
/// few tasks (dynamic scheduling then balances the load), more when they do not.
int64_t stripe_count(int threads, int64_t q_tiles, int64_t x_tiles) {
  const int64_t want = 4 * static_cast<int64_t>(threads);
  if (threads <= 1 || q_tiles >= want) return 1;
  return std::min(x_tiles, (want + q_tiles - 1) / q_tiles);
}

/// Per-thread scratch, reused from task to task.
struct Scratch {
  BlockEngine::Workspace ws;
  std::vector<float> block;
  std::vector<TopK> lists;
  std::vector<Candidate> merged;
  std::vector<int64_t> ids;
  ExactPairs exact;
};

/// A stripe's selections for the queries of one tile: query i's pairs are
/// pairs[start[i] .. start[i + 1]).
struct Partial {
  std::vector<Candidate> pairs;
  std::vector<int64_t> start;
};

/// KnnBound::relative of the squared distances of sqdist_epilogue (dot_family.cpp): an entry it
/// trusts has float value F >= tau S, S = ||q||^2 + ||x||^2, and errs by at most the product's
/// 2 eps ||q|| ||x|| <= eps S <= eps F / tau (the float64 sums add ~2^-52 S), plus 2^-24 F for
/// the float result; an entry it does not trust is the direct float64 sum, rounded once. Both
/// stay within (eps / tau + 2^-22) F.
double relative_key_error(const MetricPlan& plan, int64_t d) {
  if (!plan.expanded) return 0.0;
  return (fp32_product_eps(d) + 0x1p-48) / cancellation_threshold(d) + 0x1p-22;
}

/// Turns one query's candidates into its k output values and ids, best first.
class Finisher {
 public:
  Finisher(const KnnArgs& a, int64_t kc, int64_t n)
      : a_(a),
        kc_(kc),
        n_(n),
        check_(a.plan.rescores() ? KnnCheck::make(a.plan, a.X, a.row_mask, relative_key_error(a.plan, a.X.cols))
                                 : KnnCheck{}) {}

  void write(int64_t query, std::vector<Candidate>& cands, Scratch& sc) const {
    const MetricPlan& plan = a_.plan;
    // Fewer than kc offered (all stripes together): every allowed row is a candidate.
    const bool all_kept = static_cast<int64_t>(cands.size()) < kc_ || kc_ >= n_;
    // Only the best kc by the float key are kept, and only they are worth the exact re-score.
    if (static_cast<int64_t>(cands.size()) > kc_) {
      std::nth_element(cands.begin(), cands.begin() + (kc_ - 1), cands.end(), ranks_before);
      cands.resize(static_cast<size_t>(kc_));
    }
    float* vals = a_.values.row(query);
    int64_t* out_ids = a_.ids.row(query);
    if (plan.rescores()) {
      sc.ids.clear();
      for (const Candidate& c : cands) sc.ids.push_back(c.id);
      const double kth = rescore_rank(plan, a_.Q.row(query), a_.X, sc.ids.data(), static_cast<int64_t>(sc.ids.size()),
                                      a_.k, vals, out_ids, sc.exact);
      // Near-ties at the k-th key can leave rows of the rule's best k out of the kc: the check
      // of core/knn_certify.hpp finds such queries and redoes them exactly.
      const float worst = all_kept ? 0.0f : std::max_element(cands.begin(), cands.end(), ranks_before)->key;
      check_.settle(a_.Q.row(query), all_kept, kth, worst, a_.k, vals, out_ids, sc.exact);
      return;
    }
    std::sort(cands.begin(), cands.end(), ranks_before);
    for (int64_t p = 0; p < a_.k; ++p) {
      const Candidate& c = cands[static_cast<size_t>(p)];
      vals[p] = static_cast<float>(plan.value_of_key(c.key));
      out_ids[p] = c.id;
    }
  }

 private:
  const KnnArgs& a_;
  int64_t kc_, n_;
  KnnCheck check_;
};

}  // namespace

void CpuBackend::knn(const Context& ctx, const KnnArgs& a) const {
  const MatrixView<const float> Q = a.Q, X = a.X;
  translate_bad_alloc("knn", [&] {
    const int threads = cpu_threads(ctx);
    const BlasSerialScope serial_blas;
    const BlockEngine engine(a.plan, Q, X, threads);
    const int64_t m = Q.rows, n = X.rows;
    const int64_t kc = a.plan.candidates(a.k, n);
    const Finisher finisher(a, kc, n);
    const bool negate = a.plan.negate;
    const std::vector<float> poison = a.row_mask ? filter_poison(a.row_mask, n) : std::vector<float>{};

    const int64_t q_tiles = (m + kQueryTile - 1) / kQueryTile;
    const int64_t x_tiles = (n + kBaseTile - 1) / kBaseTile;
    const int64_t wanted = stripe_count(threads, q_tiles, x_tiles);
    const int64_t per_stripe = (x_tiles + wanted - 1) / wanted;
    const int64_t stripes = (x_tiles + per_stripe - 1) / per_stripe;  // none left empty
    std::vector<Scratch> scratch(static_cast<size_t>(threads));
    std::vector<Partial> partial(stripes > 1 ? static_cast<size_t>(q_tiles * stripes) : 0);

    const double select_share = stripes > 1 ? 0.95 : 1.0;
    run_tasks(
        ctx, threads, q_tiles * stripes,
        [&](int64_t task, int tid) {
          Scratch& sc = scratch[static_cast<size_t>(tid)];
          const int64_t i0 = task / stripes * kQueryTile, tq = std::min(kQueryTile, m - i0);
          const int64_t t0 = task % stripes * per_stripe, t1 = std::min(x_tiles, t0 + per_stripe);
          const int64_t offered = std::min(n, t1 * kBaseTile) - t0 * kBaseTile;
          if (static_cast<int64_t>(sc.lists.size()) < tq) sc.lists.resize(static_cast<size_t>(tq));
          for (int64_t i = 0; i < tq; ++i) sc.lists[static_cast<size_t>(i)].reset(kc, offered);
          sc.block.resize(static_cast<size_t>(tq * kBaseTile));
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t j0 = t * kBaseTile, tx = std::min(kBaseTile, n - j0);
            engine.compute(sc.ws, i0, tq, j0, tx, sc.block.data(), tx, /*squared=*/true);
            for (int64_t i = 0; i < tq; ++i) {
              TopK& list = sc.lists[static_cast<size_t>(i)];
              float* row = sc.block.data() + i * tx;
              if (a.row_mask)
                negate ? list.offer_filtered<true>(row, tx, j0, poison.data() + j0)
                       : list.offer_filtered<false>(row, tx, j0, poison.data() + j0);
              else if (negate)
                list.offer<true>(row, tx, j0);
              else
                list.offer<false>(row, tx, j0);
            }
          }
          if (stripes == 1) {
            for (int64_t i = 0; i < tq; ++i) finisher.write(i0 + i, sc.lists[static_cast<size_t>(i)].best(), sc);
            return;
          }
          Partial& out = partial[static_cast<size_t>(task)];
          out.start.assign(1, 0);
          for (int64_t i = 0; i < tq; ++i) {
            const std::vector<Candidate>& best = sc.lists[static_cast<size_t>(i)].best();
            out.pairs.insert(out.pairs.end(), best.begin(), best.end());
            out.start.push_back(static_cast<int64_t>(out.pairs.size()));
          }
        },
        0.0, select_share);

    if (stripes > 1) {
      // Merge each query's stripe selections; every stripe kept its best kc, so their union
      // holds the overall best kc.
      run_tasks(
          ctx, threads, m,
          [&](int64_t query, int tid) {
            Scratch& sc = scratch[static_cast<size_t>(tid)];
            const int64_t qt = query / kQueryTile, local = query % kQueryTile;
            sc.merged.clear();
            for (int64_t s = 0; s < stripes; ++s) {
              const Partial& p = partial[static_cast<size_t>(qt * stripes + s)];
              sc.merged.insert(sc.merged.end(), p.pairs.begin() + p.start[static_cast<size_t>(local)],
                               p.pairs.begin() + p.start[static_cast<size_t>(local + 1)]);
            }
            finisher.write(query, sc.merged, sc);
          },
          select_share, 1.0);
    }
    if (ctx.progress) ctx.progress(1.0);
  });
}

}  // namespace simkit::detail::cpu
