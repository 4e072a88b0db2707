// CPU ivf_flat search: probe, scan the probed lists a list at a time, merge, re-score.
//
// FAISS's IndexIVFFlat scans query by query: each (query, list) pair streams the list from
// memory for one dot product per row, which is bound by memory bandwidth. Here a batch of
// queries is inverted first: every list gathers the queries that probe it and scans them
// together, one sgemm per tile of the list (cpu/block.hpp), so each row is read once per batch
// and multiplied by all its queries while it sits in cache. With 10,000 queries and nprobe = 32
// of 1,024 lists, a list serves ~300 queries at once instead of one.
//
// Per batch:
//   1. coarse: the nprobe nearest centroids of each query (this backend's exact k-NN);
//   2. a counting sort of the (query, probe) pairs by list;
//   3. tasks of (list, up to kQueryTile of its queries): the block engine computes the float32
//      keys of those queries against the list a kBaseTile at a time, and each query keeps its
//      best kc (the k-NN candidate count) of the list in its (query, probe) slot;
//   4. per query: the best kc of its slots, re-scored in float64 (core/exact_metric.hpp) and
//      ranked by (value, user id), the best k written out, padded if short.
// Step 4 is knn's own rule, which is why nprobe = nlist gives the flat index's result.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "cpu/block.hpp"
#include "cpu/select/top_k.hpp"
#include "index/ivf/ivf_searchers.hpp"
#include "index/ivf/probe_pairs.hpp"

namespace simkit::detail::cpu {

namespace {

// Slot memory per batch: queries x nprobe x kc candidates of 16 bytes.
constexpr size_t kSlotBytes = size_t(64) << 20;

struct Task {
  int64_t list;
  int64_t first;  // into the batch's pairs sorted by list
  int64_t count;  // queries of this task
  double work;
};

/// The row statistics of `rows` gathered rows (by index into `src`) for the plan.
RowStats gather_stats(const RowStats& src, const std::vector<int64_t>& rows) {
  RowStats out;
  auto take = [&](const std::vector<double>& from, std::vector<double>& to) {
    if (from.empty()) return;
    to.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) to[i] = from[static_cast<size_t>(rows[i])];
  };
  take(src.sq, out.sq);
  take(src.inv, out.inv);
  take(src.mean, out.mean);
  return out;
}

/// Writes one query's best k of `cands` (positions into the lists) as values and user ids,
/// re-scored and ranked like knn; pads a short row.
void finish_query(const IvfLists& L, const float* q, std::vector<Candidate>& cands, int64_t kc, int64_t k,
                  float* values, int64_t* ids, std::vector<std::pair<double, int64_t>>& ranked) {
  const MetricPlan& plan = L.plan;
  if (static_cast<int64_t>(cands.size()) > kc) {
    // By (key, id): rows of different lists are not in id order (index/ivf_lists.hpp).
    std::nth_element(cands.begin(), cands.begin() + (kc - 1), cands.end(), [&](const Candidate& x, const Candidate& y) {
      return x.key < y.key || (x.key == y.key && L.arena.ids[size_t(x.id)] < L.arena.ids[size_t(y.id)]);
    });
    cands.resize(static_cast<size_t>(kc));
  }
  ranked.clear();
  for (const Candidate& c : cands) {
    const double key =
        plan.rescores() ? exact_key(plan.exact, q, L.vectors.data() + c.id * L.dim, L.dim) : static_cast<double>(c.key);
    ranked.emplace_back(key, L.arena.ids[static_cast<size_t>(c.id)]);
  }
  const int64_t have = std::min<int64_t>(k, static_cast<int64_t>(ranked.size()));
  std::partial_sort(ranked.begin(), ranked.begin() + have, ranked.end());
  for (int64_t p = 0; p < have; ++p) {
    values[p] = static_cast<float>(plan.value_of_key(ranked[static_cast<size_t>(p)].first));
    ids[p] = ranked[static_cast<size_t>(p)].second;
  }
  const float worst = plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t p = have; p < k; ++p) values[p] = worst, ids[p] = -1;
}

}  // namespace

void ivf_flat_search(const Context& ctx, const IvfSearchArgs& a) {
  const IvfLists& L = *a.lists;
  translate_bad_alloc("ivf_flat search", [&] {
    const int threads = cpu_threads(ctx);
    const int64_t m = a.Q.rows, d = L.dim, nprobe = a.nprobe, k = a.k;
    const int64_t kc = L.plan.candidates(k, L.size());
    const bool negate = L.plan.negate;
    // The allow-list's rows, a poison value per arena row (TopK::offer_filtered), added to each
    // list tile as it is offered.
    const std::vector<float> poison =
        a.filter ? filter_poison(L.arena.mask(*a.filter, /*compact=*/false).data(), L.arena.arena_rows())
                 : std::vector<float>{};

    // 1. The nearest nprobe centroids of every query.
    Matrix<float> probe_values(m, nprobe);
    Matrix<int64_t> probes(m, nprobe);
    Context quiet = ctx;
    quiet.progress = nullptr;
    cpu_backend().knn(
        quiet, KnnArgs{a.Q, L.centroid_rows(), nprobe, plan_metric(L.coarse), probe_values.view(), probes.view()});

    const BlasSerialScope serial_blas;
    const int64_t per_query = nprobe * kc * static_cast<int64_t>(sizeof(Candidate));
    const int64_t batch = std::clamp<int64_t>(static_cast<int64_t>(kSlotBytes) / per_query, 1, m);
    std::vector<Candidate> slots;
    std::vector<int64_t> slot_count;  // candidates kept per (query, probe), <= kc
    std::vector<int64_t> list_start(static_cast<size_t>(L.nlist + 1)), pairs;
    struct Scratch {
      BlockEngine::Workspace ws;
      std::vector<float> block, gathered;
      std::vector<int64_t> rows;
      std::vector<TopK> lists;
      std::vector<Candidate> merged;
      std::vector<std::pair<double, int64_t>> ranked;
    };
    std::vector<Scratch> scratch(static_cast<size_t>(threads));

    for (int64_t b0 = 0; b0 < m; b0 += batch) {
      const int64_t B = std::min(batch, m - b0);
      const MatrixView<const float> Qb{a.Q.row(b0), B, d};
      const RowStats q_stats = row_stats(Qb, L.plan, 1);

      // 2. Pairs (query in batch * nprobe + probe) sorted by list.
      group_pairs_by_list(probes.data() + b0 * nprobe, B * nprobe, L.nlist, list_start, pairs);
      std::vector<Task> tasks;
      for (int64_t l = 0; l < L.nlist; ++l) {
        const int64_t len = L.arena.length(l);
        for (int64_t p = list_start[static_cast<size_t>(l)]; p < list_start[static_cast<size_t>(l + 1)];
             p += kQueryTile) {
          const int64_t count = std::min(kQueryTile, list_start[static_cast<size_t>(l + 1)] - p);
          tasks.push_back({l, p, count, static_cast<double>(len + 64) * static_cast<double>(count)});
        }
      }
      // Largest first, so the dynamic schedule does not end on one long list.
      std::sort(tasks.begin(), tasks.end(), [](const Task& x, const Task& y) { return x.work > y.work; });

      slots.resize(static_cast<size_t>(B * nprobe * kc));
      slot_count.assign(static_cast<size_t>(B * nprobe), 0);

      // 3. Scan.
      const double lo = static_cast<double>(b0) / m, span = static_cast<double>(B) / m;
      run_tasks(
          ctx, threads, static_cast<int64_t>(tasks.size()),
          [&](int64_t t, int tid) {
            const Task& task = tasks[static_cast<size_t>(t)];
            Scratch& sc = scratch[static_cast<size_t>(tid)];
            const int64_t r = task.count;
            sc.rows.resize(static_cast<size_t>(r));
            sc.gathered.resize(static_cast<size_t>(r * d));
            for (int64_t i = 0; i < r; ++i) {
              const int64_t query = pairs[static_cast<size_t>(task.first + i)] / nprobe;
              sc.rows[static_cast<size_t>(i)] = query;
              std::copy_n(Qb.row(query), d, sc.gathered.data() + i * d);
            }
            const BlockEngine engine(L.plan, MatrixView<const float>{sc.gathered.data(), r, d},
                                     gather_stats(q_stats, sc.rows), L.rows(), L.stats);
            sc.ws.q_at = -1;  // the gathered rows changed under the same index
            const int64_t j0 = L.arena.begin[static_cast<size_t>(task.list)];
            const int64_t len = L.arena.length(task.list);
            if (static_cast<int64_t>(sc.lists.size()) < r) sc.lists.resize(static_cast<size_t>(r));
            for (int64_t i = 0; i < r; ++i) sc.lists[static_cast<size_t>(i)].reset(kc, len);
            sc.block.resize(static_cast<size_t>(r * std::min(kBaseTile, len)));
            for (int64_t c0 = 0; c0 < len; c0 += kBaseTile) {
              const int64_t tx = std::min(kBaseTile, len - c0);
              engine.compute(sc.ws, 0, r, j0 + c0, tx, sc.block.data(), tx, /*squared=*/true);
              for (int64_t i = 0; i < r; ++i) {
                float* row = sc.block.data() + i * tx;
                if (a.filter)
                  negate
                      ? sc.lists[static_cast<size_t>(i)].offer_filtered<true>(row, tx, j0 + c0, poison.data() + j0 + c0)
                      : sc.lists[static_cast<size_t>(i)].offer_filtered<false>(row, tx, j0 + c0,
                                                                               poison.data() + j0 + c0);
                else if (negate)
                  sc.lists[static_cast<size_t>(i)].offer<true>(row, tx, j0 + c0);
                else
                  sc.lists[static_cast<size_t>(i)].offer<false>(row, tx, j0 + c0);
              }
            }
            for (int64_t i = 0; i < r; ++i) {
              const int64_t pair = pairs[static_cast<size_t>(task.first + i)];
              const std::vector<Candidate>& best = sc.lists[static_cast<size_t>(i)].best();
              std::copy(best.begin(), best.end(), slots.begin() + pair * kc);
              slot_count[static_cast<size_t>(pair)] = static_cast<int64_t>(best.size());
            }
          },
          lo, lo + 0.9 * span);

      // 4. Merge, re-score, rank.
      run_tasks(
          ctx, threads, B,
          [&](int64_t i, int tid) {
            Scratch& sc = scratch[static_cast<size_t>(tid)];
            sc.merged.clear();
            for (int64_t p = 0; p < nprobe; ++p) {
              const int64_t pair = i * nprobe + p;
              const auto first = slots.begin() + pair * kc;
              sc.merged.insert(sc.merged.end(), first, first + slot_count[static_cast<size_t>(pair)]);
            }
            finish_query(L, Qb.row(i), sc.merged, kc, k, a.values.row(b0 + i), a.ids.row(b0 + i), sc.ranked);
          },
          lo + 0.9 * span, lo + span);
    }
  });
}

}  // namespace simkit::detail::cpu
