#include "index/filtered_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/expects.hpp"
#include "index/index_support.hpp"

namespace simkit::detail {

namespace {
// Where the planner gathers (filter_in_scan), as measured by `simkit bench filters` (1,000,000 x
// 128 clustered, k = 10; bench/results/2026-11-26-filters.md).
//
// An exact scan (flat) costs the unfiltered search whatever the list; the gather costs the copy
// plus a search of the allowed rows. CPU (2 cores, 1,000 queries): the gather wins up to about
// half the rows. GPU (H200, 10,000 queries): the gather copies through host memory; at 10% it
// took 87 ms against the scan's 219, at 50% 287 against 226 -- the crossover near 40%.
constexpr double kGatherBelowCpu = 0.5;
constexpr double kGatherBelowGpu = 0.3;
// An approximate scan (ivf_flat, ivf_pq) keeps its recall while the rows it probes hold enough
// allowed ones: recall@10 against the exact filtered answer, nprobe 32 of 1,024 lists (~31,000
// rows probed): 0.42 with 31 allowed among them (0.1%), 0.96 with 310 (1%), 1.0000 with 3,100
// (10%) and above; 50,000 rows, nprobe 32 of 256 (~6,250 probed): 0.84 with 625 (10%), 1.0000
// with 3,100 (50%). So the scan needs 256 k allowed rows among those probed; fewer are gathered.
constexpr int64_t kProbedAllowedPerK = 256;
// A pruning walk (the tree index) against the gather: the walk scores about k n / allowed rows a
// query, in float64 one by one, and prunes less as d grows; the gather's k-NN scores `allowed`
// rows a query in float32 blocks (then re-scores a shortlist). Measured (2 cores, uniform rows,
// 1,000 queries, forced plans, 2026-11-26), the crossover in allowed^2 / (k n): d = 3, n = 200,000,
// k = 10: between 8 (walk 13.7 ms, gather 11.7) and 52 (9.7 against 20.3); n = 1,000,000: between
// 10 and 40; k = 100: between 5 and 20. d = 5: between 8.5 and 50. d = 8, n = 200,000: 200
// (28.9 against 28.5); n = 1,000,000: between 250 and 1,000. So the walk is kept while
// allowed^2 >= 2^(d + 1) k n: 16 at d = 3, 64 at d = 5, 512 at d = 8.
// A graph walk (hnsw) against the gather: the walk computes ~ef links / f distances a query,
// one row at a time from scattered memory, the gather `allowed` rows in sgemm blocks, so the
// walk is kept while allowed^2 >= c ef links n, c the cost of a walked row in gathered ones.
// Measured with forced plans (`simkit bench ann --filters`, WordNet 117,659 x 384 cosine, m 16:
// 32 links, 2 threads, 10,000 queries, 2026-11-26), storage=sq8, queries/s walk against gather:
//   ef 16, random allow-lists:    10% 13,999 / 16,742   20% 22,730 / 10,244   -> c ~ 3.3
//   ef 16, clustered:             10%  4,553 / 17,576   20% 16,547 / 10,238   -> c ~ 5.9
//   ef 48, random:                20%  9,087 / 10,181   30% 12,185 /  7,219   -> c ~ 3.7
//   ef 48, clustered:             20%  7,772 / 10,238   30% 10,682 /  7,305   -> c ~ 4.8
//   ef 128, random:               30%  5,682 /  7,323   50%  8,034 /  4,657   -> c ~ 4.2
// (c from the interpolated crossover). float32's walk reads four times the bytes a node and ran
// at half sq8's speed unfiltered (12,096 against 24,726 queries/s at ef 48); at 50% random it
// walked 5,762 at ef 64 and 4,171 at ef 96 against a 4,476 gather (c between 9.6 and 14.4),
// clustered 4,557 at ef 64 against 4,505 (c ~ 14): c = 12. A few thousand allowed rows are
// always gathered (1%: 50,000 queries/s gathered, 830 walked at ef 48).
constexpr double kWalkedCodeRowCost = 4.5, kWalkedRowCost = 12;
double walk_per_gather(int64_t d) { return std::ldexp(1.0, static_cast<int>(d) + 1); }

/// SIMKIT_FILTER_PLAN=gather|scan: the plan forced (benchmarks, tests), if any.
std::optional<bool> forced_plan() {
  if (const char* forced = std::getenv("SIMKIT_FILTER_PLAN")) {
    if (std::strcmp(forced, "gather") == 0) return false;
    if (std::strcmp(forced, "scan") == 0) return true;
  }
  return std::nullopt;
}
}  // namespace

void check_allowed(ArrayView<const int64_t> allowed) {
  SIMKIT_EXPECTS(allowed.where == Memory::host, invalid_argument, "search: the allowed ids must be in host memory");
  SIMKIT_EXPECTS(allowed.size >= 0 && (allowed.data != nullptr || allowed.size == 0), invalid_argument,
                 "search: the allowed ids have no data");
  for (int64_t i = 1; i < allowed.size; ++i)
    SIMKIT_EXPECTS(allowed[i - 1] < allowed[i], invalid_argument,
                   "search: the allowed ids must be sorted ascending without repeats; position ", i, " holds ",
                   allowed[i], " after ", allowed[i - 1]);
}

bool filter_in_scan(Device device, int64_t allowed, int64_t n, int64_t probed, int64_t k) {
  if (const std::optional<bool> forced = forced_plan()) return *forced;
  // The gather copies the allowed rows (on the GPU through host memory) and then searches only
  // them; the scan searches every row and skips the others in the selection. Crossovers measured
  // with `simkit bench filters` (1,000,000 x 128): see kGatherBelow* in the results file.
  const double fraction = n > 0 ? static_cast<double>(allowed) / static_cast<double>(n) : 0.0;
  if (probed < n) return fraction * static_cast<double>(probed) >= static_cast<double>(kProbedAllowedPerK * k);
  return fraction > (device == Device::gpu ? kGatherBelowGpu : kGatherBelowCpu);
}

bool filter_in_walk(int64_t allowed, int64_t n, int64_t k, int64_t d) {
  if (const std::optional<bool> forced = forced_plan()) return *forced;
  const double a = static_cast<double>(allowed);
  return a * a >= walk_per_gather(d) * static_cast<double>(k) * static_cast<double>(n);
}

bool filter_in_graph(int64_t allowed, int64_t n, int64_t ef, int64_t links, bool coded) {
  if (const std::optional<bool> forced = forced_plan()) return *forced;
  const double a = static_cast<double>(allowed), c = coded ? kWalkedCodeRowCost : kWalkedRowCost;
  return a * a >= c * static_cast<double>(ef) * static_cast<double>(links) * static_cast<double>(n);
}

AllowedRows allowed_rows_sorted(const std::vector<int64_t>& stored, ArrayView<const int64_t> allowed) {
  AllowedRows out;
  size_t r = 0;
  int64_t a = 0;
  while (r < stored.size() && a < allowed.size) {
    if (stored[r] < allowed[a]) {
      ++r;
    } else if (allowed[a] < stored[r]) {
      ++a;
    } else {
      out.ids.push_back(stored[r]);
      out.rows.push_back(static_cast<int64_t>(r));
      ++r, ++a;
    }
  }
  return out;
}

AllowedRows allowed_rows_mapped(const IdMap& stored, ArrayView<const int64_t> allowed) {
  AllowedRows out;
  for (int64_t a = 0; a < allowed.size; ++a)
    if (const std::optional<int64_t> row = stored.find(allowed[a])) {
      out.ids.push_back(allowed[a]);
      out.rows.push_back(*row);
    }
  return out;
}

namespace {

/// The best kk <= X.rows rows of each query of Q by knn's rule (ties by row), as host matrices.
void knn_rows(const Context& ctx, const Backend& backend, MatrixView<const float> Q, const IdRows& X, int64_t kk,
              const MetricPlan& plan, Matrix<float>& v, Matrix<int64_t>& r) {
  v = Matrix<float>(Q.rows, kk);
  r = Matrix<int64_t>(Q.rows, kk);
  backend.knn(ctx, KnnArgs{Q, X.rows, kk, plan, v.view(), r.view(), X.mask});
}

/// One query's w results ranked by (key, row), re-ranked by (key, id) with rows renamed to ids:
/// every run of equal values that starts before place k is sorted by its float64 keys, then ids.
/// The caller made sure such a run ends inside the w (or that w is every row).
void rank_ties_by_id(const MetricPlan& plan, const float* q, const IdRows& X, int64_t k, int64_t w, const float* v,
                     int64_t* r, std::vector<std::pair<double, int64_t>>& run) {
  for (int64_t s = 0; s < std::min(k, w);) {
    int64_t e = s + 1;
    while (e < w && v[e] == v[s]) ++e;
    if (e - s > 1) {
      run.clear();
      for (int64_t p = s; p < e; ++p) {
        const double key = plan.rescores() ? exact_key(plan.exact, q, X.host.row(r[p]), X.host.cols)
                                           : (plan.negate ? -static_cast<double>(v[p]) : static_cast<double>(v[p]));
        run.emplace_back(key, X.ids[r[p]]);
      }
      std::sort(run.begin(), run.end());
      for (int64_t p = s; p < e; ++p) r[p] = run[static_cast<size_t>(p - s)].second;
    } else {
      r[s] = X.ids[r[s]];
    }
    s = e;
  }
}

/// search_rows for rows whose ids do not ascend (see filtered_search.hpp): host results in out.
void search_rows_any_order(const Context& ctx, const Backend& backend, MatrixView<const float> Q, int64_t k,
                           const MetricPlan& plan, const IdRows& X, MatrixView<float> values, MatrixView<int64_t> ids) {
  const int64_t n = X.candidates(), d = X.rows.cols;
  Matrix<float> q_host;  // Q's rows on the host, copied when Q is on the device
  auto query = [&](int64_t i) -> const float* {
    if (Q.where == Memory::host) return Q.row(i);
    if (q_host.size() == 0) {
      q_host = Matrix<float>(Q.rows, d);
      backend.copy_to_host(ctx, q_host.data(), Q.data, static_cast<size_t>(Q.size()) * sizeof(float));
    }
    return q_host.view().row(i);
  };
  std::vector<int64_t> pending;  // queries whose tie at place k reached past the results
  std::vector<std::pair<double, int64_t>> run;
  Matrix<float> v, gathered;
  Matrix<int64_t> r;
  int64_t w = std::min(n, k + 1);
  knn_rows(ctx, backend, Q, X, w, plan, v, r);
  for (int64_t round = 0;; ++round) {
    std::vector<int64_t> again;
    const int64_t count = round == 0 ? Q.rows : static_cast<int64_t>(pending.size());
    for (int64_t j = 0; j < count; ++j) {
      const int64_t i = round == 0 ? j : pending[static_cast<size_t>(j)];
      float* vj = v.view().row(j);
      int64_t* rj = r.view().row(j);
      if (w < n && vj[w - 1] == vj[std::min(k, w) - 1]) {
        again.push_back(i);
        continue;
      }
      rank_ties_by_id(plan, query(i), X, k, w, vj, rj, run);
      const int64_t have = std::min(k, w);
      std::copy_n(vj, have, values.row(i));
      std::copy_n(rj, have, ids.row(i));
    }
    if (again.empty()) return;
    pending = std::move(again);
    w = std::min(n, 2 * w);
    gathered = Matrix<float>(static_cast<int64_t>(pending.size()), d);
    for (size_t j = 0; j < pending.size(); ++j)
      std::copy_n(query(pending[j]), d, gathered.view().row(static_cast<int64_t>(j)));
    knn_rows(ctx, backend, gathered.view(), X, w, plan, v, r);
  }
}

}  // namespace

void search_rows(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric, const IdRows& X,
                 MatrixView<float> values, MatrixView<int64_t> ids, SearchStats* stats) {
  SearchOutput out(values, ids);
  const int64_t n = X.candidates();
  if (stats) {  // every row is a candidate of every query
    stats->candidates += Q.rows * n;
    if (n < k) stats->short_rows += Q.rows;
  }
  if (n == 0) {
    out.pad_all(metric);
    out.deliver(ctx);
    return;
  }
  const Backend& backend = backend_for(ctx, {Q.where, values.where}, "search");
  const MetricPlan plan = plan_metric(metric);
  if (k > n) out.pad_all(metric);  // the backends take 1 <= k <= n: rank all n rows, then pad
  if (!X.ascending) {
    search_rows_any_order(ctx, backend, Q, k, plan, X, out.values(), out.ids());
    out.deliver(ctx);
    return;
  }
  // Ascending distinct ids from 0 to n - 1 are 0 .. n - 1: the rows are their own ids.
  const int64_t last = X.rows.rows - 1;
  const bool identity = X.ids[0] == 0 && X.ids[last] == last;
  if (k <= n) {
    if (identity && values.where == Memory::device) {  // straight into the caller's device outputs
      backend.knn(ctx, KnnArgs{Q, X.rows, k, plan, values, ids, X.mask});
      return;
    }
    backend.knn(ctx, KnnArgs{Q, X.rows, k, plan, out.values(), out.ids(), X.mask});
  } else {
    Matrix<float> v;
    Matrix<int64_t> r;
    knn_rows(ctx, backend, Q, X, n, plan, v, r);
    for (int64_t q = 0; q < Q.rows; ++q) {
      std::copy_n(v.view().row(q), n, out.values().row(q));
      std::copy_n(r.view().row(q), n, out.ids().row(q));
    }
  }
  if (!identity)
    for (int64_t e = 0; e < out.ids().size(); ++e)
      if (out.ids().data[e] >= 0) out.ids().data[e] = X.ids[out.ids().data[e]];
  out.deliver(ctx);
}

void search_allowed(const Context& ctx, MatrixView<const float> Q, int64_t k, Metric metric,
                    MatrixView<const float> stored, const AllowedRows& allowed, MatrixView<float> values,
                    MatrixView<int64_t> ids, SearchStats* stats) {
  const int64_t a = static_cast<int64_t>(allowed.rows.size()), d = stored.cols;
  if (stats) ++stats->gathered;
  // Distinct rows of [0, n), as many as n and ascending, are every row in order: no copy.
  if (a == stored.rows && std::is_sorted(allowed.rows.begin(), allowed.rows.end()))
    return search_rows(ctx, Q, k, metric, IdRows{stored, stored, allowed.ids.data()}, values, ids, stats);
  Matrix<float> gathered(a, d);
  for (int64_t i = 0; i < a; ++i)
    std::copy_n(stored.row(allowed.rows[static_cast<size_t>(i)]), d, gathered.data() + i * d);
  search_rows(ctx, Q, k, metric, IdRows{gathered.view(), gathered.view(), allowed.ids.data()}, values, ids, stats);
}

}  // namespace simkit::detail
