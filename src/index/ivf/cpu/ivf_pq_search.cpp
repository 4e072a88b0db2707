// CPU ivf_pq search: probe, scan each probed list's codes through a lookup table, re-rank.
//
// Unlike ivf_flat's scan (one sgemm per list tile for a batch of queries, cpu/ivf_flat_search.cpp)
// a code scan is table lookups, m bytes per row: a list is small in memory (m bytes a row) and
// the work per (query, list) pair is m lookups per row, plus (l1, or lists without row terms)
// its table. So queries run independently, one task each:
//   1. coarse: the nprobe nearest centroids of every prepared query, ranked in float32 from one
//      sgemm per block of queries (float_probes; pearson: this backend's exact k-NN);
//   2. per probed list: the table for (query, list) where it depends on the list, then the
//      list's keys bias (+ row term) + sum_j T[j][code_j] in float32, four rows at a time for
//      independent adds, each key tested against the selection's bound before it is kept;
//   3. the best kc (k, or the re-rank depth) by (key, user id): with a re-rank they are re-scored
//      exactly against the kept vectors (float64 with knn's arithmetic, four rows at a time, or
//      l1's own float32 kernel) and ranked by (value, id); without, the best k are returned with
//      the metric's value of the approximate key. Rows short of k are padded and counted.
//
// Tables. For the squared-distance form, with r = q' - c, a row coded as e has
// |r - e|^2 = |q' - c|^2 + sum_j (|e_j|^2 + 2 c_j.e_j) - 2 q'.e. The middle sum depends on the
// row alone and is stored with it (IvfPqLists::row_terms); -2 q'_j.e_s is one m x ksub table per
// query, the same for every list; |q' - c|^2 is the list's bias. So no table is built per
// (query, list) pair: that build (m * ksub * dsub multiply-adds, or a read of a per-list table
// of m * ksub floats from memory) was most of the search. Keys now differ from a float64 table
// in the last bits and may be slightly negative: they are estimates, and the exact re-rank
// decides the final order. Lists without row terms (made by hand) get the per-pair table
// |r_j|^2 + |e_s|^2 - 2 r_j.e_s in float32, clamped at 0. The code books are transposed per
// sub-space (dsub x ksub) so the dot loops run over the ksub entries in vector lanes. The
// negated-dot table (-q_j.e_s) does not depend on the list either; the list enters as the bias
// -q.c. l1 has no expansion: sum_t |r_t - e_st| per pair, over the lanes.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "cpu/dot_family.hpp"
#include "cpu/l1.hpp"
#include "index/ivf/ivf_pq_prep.hpp"
#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail::cpu {

namespace {

struct PqCandidate {
  float key;
  int64_t id;   // the user id: ties across lists go to the lower id, as in finish_query
  int64_t row;  // where its codes and vector are
};

inline bool ranks_before(const PqCandidate& a, const PqCandidate& b) noexcept {
  return a.key < b.key || (a.key == b.key && a.id < b.id);
}

/// The best `keep` candidates by (key, id): TopK's threshold-filtered buffer (cpu/select/top_k.hpp),
/// here carrying the row beside the user id, since lists are not in id order one after another.
class Selection {
 public:
  void reset(int64_t keep) {
    keep_ = keep;
    capacity_ = static_cast<size_t>(2 * keep + 64);
    buf_.clear();
    bound_ = std::numeric_limits<float>::infinity();
  }
  /// Nothing with a larger key can enter; equal keys may (the id decides at the next prune).
  float bound() const noexcept { return bound_; }
  void push(float key, int64_t id, int64_t row) {
    buf_.push_back({key, id, row});
    if (buf_.size() >= capacity_) prune();
  }
  std::vector<PqCandidate>& best() {
    if (buf_.size() > static_cast<size_t>(keep_)) prune();
    return buf_;
  }

 private:
  void prune() {
    std::nth_element(buf_.begin(), buf_.begin() + (keep_ - 1), buf_.end(), ranks_before);
    buf_.resize(static_cast<size_t>(keep_));
    bound_ = buf_.back().key;
  }
  std::vector<PqCandidate> buf_;
  int64_t keep_ = 0;
  size_t capacity_ = 0;
  float bound_ = std::numeric_limits<float>::infinity();
};

/// Code books regrouped for the table loops: per sub-space j, dsub rows of ksub values.
struct Books {
  std::vector<float> t;      // m x dsub x ksub
  std::vector<float> norms;  // m x ksub: |e_s|^2
};

Books regroup(const IvfPqLists& L) {
  const int64_t m = L.m, ds = L.dsub(), ks = L.ksub;
  Books b;
  b.t.resize(static_cast<size_t>(m * ds * ks));
  b.norms.assign(static_cast<size_t>(m * ks), 0.0f);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t s = 0; s < ks; ++s) {
      const float* e = L.codebooks.data() + (j * ks + s) * ds;
      double sq = 0;
      for (int64_t t = 0; t < ds; ++t) {
        b.t[static_cast<size_t>((j * ds + t) * ks + s)] = e[t];
        sq += double(e[t]) * e[t];
      }
      b.norms[static_cast<size_t>(j * ks + s)] = static_cast<float>(sq);
    }
  return b;
}

/// T[j][s] for r (dim floats) in the list-dependent forms.
void residual_table(const IvfPqLists& L, const Books& b, const float* r, float* T) {
  const int64_t m = L.m, ds = L.dsub(), ks = L.ksub;
  for (int64_t j = 0; j < m; ++j) {
    float* Tj = T + j * ks;
    const float* rj = r + j * ds;
    const float* E = b.t.data() + j * ds * ks;
    if (L.table == PqTable::l1) {
      std::fill(Tj, Tj + ks, 0.0f);
      for (int64_t t = 0; t < ds; ++t) {
        const float a = rj[t];
        const float* e = E + t * ks;
        for (int64_t s = 0; s < ks; ++s) Tj[s] += std::fabs(a - e[s]);
      }
      continue;
    }
    float rn = 0;
    for (int64_t t = 0; t < ds; ++t) rn += rj[t] * rj[t];
    const float* en = b.norms.data() + j * ks;
    for (int64_t s = 0; s < ks; ++s) Tj[s] = rn + en[s];
    for (int64_t t = 0; t < ds; ++t) {
      const float a = -2.0f * rj[t];
      const float* e = E + t * ks;
      for (int64_t s = 0; s < ks; ++s) Tj[s] += a * e[s];
    }
    for (int64_t s = 0; s < ks; ++s) Tj[s] = std::max(Tj[s], 0.0f);
  }
}

/// T[j][s] = scale * q_j.e_s: the query's half of a table, the same for every list (dot: scale
/// -1, the whole table; squared distance with row terms: scale -2).
void query_table(const IvfPqLists& L, const Books& b, const float* q, float scale, float* T) {
  const int64_t m = L.m, ds = L.dsub(), ks = L.ksub;
  for (int64_t j = 0; j < m; ++j) {
    float* Tj = T + j * ks;
    std::fill(Tj, Tj + ks, 0.0f);
    for (int64_t t = 0; t < ds; ++t) {
      const float a = scale * q[j * ds + t];
      const float* e = b.t.data() + (j * ds + t) * ks;
      for (int64_t s = 0; s < ks; ++s) Tj[s] += a * e[s];
    }
  }
}

/// Keys of rows [r0, r1) offered to `sel`: bias (+ the row's term, when `rt` is given) + the sum
/// of the m table entries its codes pick. Four rows at a time: four independent add chains.
/// With `mask`, only the rows whose bit is set are offered (an allow-list tested in the scan).
void scan_list(const IvfPqLists& L, const float* T, float bias, const float* rt, int64_t r0, int64_t r1,
               const uint64_t* mask, Selection& sel) {
  const int64_t m = L.m, ks = L.ksub;
  const uint8_t* codes = L.codes.data();
  const int64_t* ids = L.arena.ids.data();
  auto start = [&](int64_t r) { return rt ? bias + rt[r] : bias; };
  auto allowed = [&](int64_t r) { return mask == nullptr || ((mask[r >> 6] >> (r & 63)) & 1u); };
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const uint8_t* c0 = codes + r * m;
    const uint8_t* c1 = c0 + m;
    const uint8_t* c2 = c1 + m;
    const uint8_t* c3 = c2 + m;
    float a0 = start(r), a1 = start(r + 1), a2 = start(r + 2), a3 = start(r + 3);
    const float* t = T;
    for (int64_t j = 0; j < m; ++j, t += ks) {
      a0 += t[c0[j]];
      a1 += t[c1[j]];
      a2 += t[c2[j]];
      a3 += t[c3[j]];
    }
    const float bound = sel.bound();
    if (a0 <= bound && allowed(r)) sel.push(a0, ids[r], r);
    if (a1 <= bound && allowed(r + 1)) sel.push(a1, ids[r + 1], r + 1);
    if (a2 <= bound && allowed(r + 2)) sel.push(a2, ids[r + 2], r + 2);
    if (a3 <= bound && allowed(r + 3)) sel.push(a3, ids[r + 3], r + 3);
  }
  for (; r < r1; ++r) {
    const uint8_t* c = codes + r * m;
    float a = start(r);
    for (int64_t j = 0; j < m; ++j) a += T[j * ks + c[j]];
    if (a <= sel.bound() && allowed(r)) sel.push(a, ids[r], r);
  }
}

/// The float32 key the re-rank's shortlist ranks a kept row by (shortlist_float32). Not inlined:
/// a sharded search computes it for the same rows in ivf_pq_rerank_keys, and one compiled copy
/// gives the same bits for a row wherever it is called from.
[[gnu::noinline]] float shortlist_key(ExactForm form, const float* q, const float* x, int64_t d) {
  float dot = 0, xx = 0, sq = 0;
#pragma omp simd reduction(+ : dot, xx, sq)
  for (int64_t t = 0; t < d; ++t) {
    dot += q[t] * x[t];
    xx += x[t] * x[t];
    sq += (q[t] - x[t]) * (q[t] - x[t]);
  }
  return form == ExactForm::sqdist ? sq : form == ExactForm::dot ? -dot : (xx > 0 ? -dot / std::sqrt(xx) : 0.0f);
}

/// knn's rule before the float64 re-rank: the candidates' float32 keys from their stored rows,
/// and only the best plan.candidates(k, n) of them -- k plus knn's margin for float32 ranking
/// errors -- re-scored in float64. With refine 8 that re-scores 26 rows instead of 80: the float64
/// sums, kept in knn's order for bit-equal values, are serial chains and cost more than fetching
/// the rows. Pearson (centred rows) and l1 (no re-score) keep every candidate.
void shortlist_float32(const MetricPlan& plan, const float* q, const float* vectors, int64_t d, int64_t k,
                       std::vector<PqCandidate>& cands) {
  const int64_t n = static_cast<int64_t>(cands.size()), keep = ivf_pq_shortlist(plan, k, n);
  if (keep >= n) return;
  for (PqCandidate& c : cands) c.key = shortlist_key(plan.exact, q, vectors + c.row * d, d);
  std::nth_element(
      cands.begin(), cands.begin() + (keep - 1), cands.end(),
      [](const PqCandidate& a, const PqCandidate& b) { return a.key < b.key || (a.key == b.key && a.id < b.id); });
  cands.resize(static_cast<size_t>(keep));
}

/// Asks for the cache lines of a row of d floats.
inline void prefetch_row(const float* x, int64_t d) {
  for (int64_t t = 0; t < d; t += 16) __builtin_prefetch(x + t);
}

/// The metric's value of an approximate key (ivf_pq_lists.hpp's table forms).
float approximate_value(Metric metric, float key) {
  switch (metric) {
    case Metric::l2: return std::sqrt(std::max(key, 0.0f));
    case Metric::cosine:
    case Metric::pearson: return 1.0f - key / 2.0f;
    case Metric::dot: return -key;
    default: return key;  // sqeuclidean, l1
  }
}

/// exact_key of four rows at once for the dot and cosine forms. Each row's sums are the very
/// operations exact_dot / exact_mean / exact_cosine perform, in the same order, so the keys have
/// the same bits as knn's; running four rows' serial chains side by side hides the latency of
/// each float64 add, which bounds a single chain. |q|^2 and the query's mean are given (`qq`,
/// `qm`): they are the same for every row.
void exact_keys4(ExactForm form, const float* q, const float* const* x, int64_t d, double qq, double qm, double* out) {
  const bool centred = form == ExactForm::centred_cosine;
  double mb[4] = {0, 0, 0, 0};
  if (centred) {
    double s[4] = {0, 0, 0, 0};
    for (int64_t t = 0; t < d; ++t)
      for (int c = 0; c < 4; ++c) s[c] += x[c][t];
    for (int c = 0; c < 4; ++c) mb[c] = s[c] / static_cast<double>(d);
  }
  const double ma = centred ? qm : 0.0;
  double ab[4] = {0, 0, 0, 0}, bb[4] = {0, 0, 0, 0};
  const bool norms = form != ExactForm::dot;
  for (int64_t t = 0; t < d; ++t) {
    const double a = static_cast<double>(q[t]) - ma;
    for (int c = 0; c < 4; ++c) {
      const double b = static_cast<double>(x[c][t]) - mb[c];
      ab[c] += a * b;
      if (norms) bb[c] += b * b;
    }
  }
  for (int c = 0; c < 4; ++c) {
    if (!norms) {
      out[c] = -ab[c];
      continue;
    }
    double cs = 0.0;
    if (qq > 0 && bb[c] > 0) {
      cs = ab[c] / (std::sqrt(qq) * std::sqrt(bb[c]));
      cs = cs > 1.0 ? 1.0 : (cs < -1.0 ? -1.0 : cs);
    }
    out[c] = -cs;
  }
}

/// The exact key knn ranks by: float64 for the product metrics, the l1 kernel's float otherwise.
double exact_pq_key(const MetricPlan& plan, const float* q, const float* x, int64_t d) {
  if (plan.rescores()) return exact_key(plan.exact, q, x, d);
  float v = 0;
  l1_block(q, 1, x, 1, d, &v, 1);  // one pair: the same sums as any block position gives it
  return static_cast<double>(v);
}

/// The nprobe nearest centroids of each prepared query under `coarse` (sqeuclidean, cosine or
/// dot), ranked in float32 from one sgemm per block of queries: |c|^2 - 2 q.c, -q.c / |c| (q has
/// unit norm) or -q.c, ties to the lower list. knn's float64 re-score of the candidates (which
/// makes equal rows tie exactly) cost about a quarter of the search here, and the probe set only
/// has to be good: where two centroids agree to float rounding at the nprobe-th place, either may
/// be probed (the GPU search, which uses knn, may then probe the other one).
void float_probes(const Context& ctx, int threads, MatrixView<const float> Qp, const IvfPqLists& L, int64_t nprobe,
                  Matrix<int64_t>& probes) {
  const int64_t nq = Qp.rows, d = L.dim, nlist = L.nlist;
  std::vector<float> scale(static_cast<size_t>(nlist)), shift(static_cast<size_t>(nlist), 0.0f);
  for (int64_t l = 0; l < nlist; ++l) {
    const double cc = exact_dot_vector(L.centroids.data() + l * d, L.centroids.data() + l * d, d);
    if (L.coarse == Metric::sqeuclidean) {
      scale[size_t(l)] = -2.0f, shift[size_t(l)] = static_cast<float>(cc);
    } else if (L.coarse == Metric::cosine) {
      scale[size_t(l)] = cc > 0 ? static_cast<float>(-1.0 / std::sqrt(cc)) : 0.0f;
    } else {
      scale[size_t(l)] = -1.0f;
    }
  }
  constexpr int64_t kBlock = 64;
  const BlasSerialScope serial_blas;
  struct Work {
    std::vector<float> dots;
    std::vector<std::pair<float, int64_t>> keys;
  };
  std::vector<Work> work(static_cast<size_t>(threads));
  run_tasks(ctx, threads, (nq + kBlock - 1) / kBlock, [&](int64_t b, int tid) {
    Work& w = work[static_cast<size_t>(tid)];
    const int64_t q0 = b * kBlock, rows = std::min(kBlock, nq - q0);
    w.dots.resize(static_cast<size_t>(rows * nlist));
    gemm_nt(Qp.row(q0), rows, L.centroids.data(), nlist, d, w.dots.data(), nlist);
    for (int64_t i = 0; i < rows; ++i) {
      const float* dot = w.dots.data() + i * nlist;
      w.keys.resize(static_cast<size_t>(nlist));
      for (int64_t l = 0; l < nlist; ++l) w.keys[size_t(l)] = {shift[size_t(l)] + scale[size_t(l)] * dot[l], l};
      std::nth_element(w.keys.begin(), w.keys.begin() + (nprobe - 1), w.keys.end());
      std::sort(w.keys.begin(), w.keys.begin() + nprobe);
      for (int64_t p = 0; p < nprobe; ++p) probes(q0 + i, p) = w.keys[size_t(p)].second;
    }
  });
}

}  // namespace

void ivf_pq_search(const Context& ctx, const IvfPqSearchArgs& a) {
  const IvfPqLists& L = *a.lists;
  translate_bad_alloc("ivf_pq search", [&] {
    const int threads = cpu_threads(ctx);
    const int64_t nq = a.Q.rows, d = L.dim, nprobe = a.nprobe, k = a.k, ks = L.ksub;
    const int64_t kc = a.refine > 0 ? std::max(a.refine, k) : k;
    // The allow-list's rows, a bit per arena row, tested as each list is scanned.
    const std::vector<uint64_t> mask = a.filter ? L.arena.mask(*a.filter, /*compact=*/false) : std::vector<uint64_t>{};
    const uint64_t* marks = a.filter ? mask.data() : nullptr;
    const MetricPlan& plan = L.plan;

    // 1. Prepared queries and their nearest nprobe centroids.
    Matrix<float> prepared;
    MatrixView<const float> Qp = a.Q;
    if (plan.prep != RowPrep::none) {
      prepared = Matrix<float>(nq, d);
      prepare_pq_rows(plan, a.Q.data, nq, d, prepared.data());
      Qp = prepared.view();
    }
    Matrix<int64_t> probes(nq, nprobe);
    if (L.coarse == Metric::pearson) {  // centres the centroids again: knn's own epilogue
      Matrix<float> probe_values(nq, nprobe);
      Context quiet = ctx;
      quiet.progress = nullptr;
      cpu_backend().knn(
          quiet, KnnArgs{Qp, L.centroid_rows(), nprobe, plan_metric(L.coarse), probe_values.view(), probes.view()});
    } else {
      float_probes(ctx, threads, Qp, L, nprobe, probes);
    }

    const Books books = regroup(L);
    const float* terms = L.row_terms.empty() ? nullptr : L.row_terms.data();
    struct Scratch {
      std::vector<float> table, residual;
      Selection sel;
      std::vector<std::pair<double, int64_t>> ranked;
      int64_t short_rows = 0, candidates = 0;
    };
    std::vector<Scratch> scratch(static_cast<size_t>(threads));
    const float worst = plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();

    // 2-3. One task per query.
    run_tasks(
        ctx, threads, nq,
        [&](int64_t i, int tid) {
          Scratch& sc = scratch[static_cast<size_t>(tid)];
          sc.table.resize(static_cast<size_t>(L.m * ks));
          sc.residual.resize(static_cast<size_t>(d));
          const float* q = Qp.row(i);
          if (L.table == PqTable::neg_dot) query_table(L, books, q, -1.0f, sc.table.data());
          if (terms) query_table(L, books, q, -2.0f, sc.table.data());
          sc.sel.reset(kc);
          for (int64_t p = 0; p < nprobe; ++p) {
            const int64_t l = probes(i, p);
            const int64_t r0 = L.arena.begin[static_cast<size_t>(l)], r1 = L.arena.end[static_cast<size_t>(l)];
            if (r0 == r1) continue;
            sc.candidates += r1 - r0;
            const float* c = L.centroids.data() + l * d;
            float bias = 0;
            if (L.table == PqTable::neg_dot) {
              bias = static_cast<float>(-exact_dot_vector(q, c, d));
            } else if (terms) {
              bias = static_cast<float>(exact_sqdist(q, c, d));
            } else {
              for (int64_t t = 0; t < d; ++t) sc.residual[static_cast<size_t>(t)] = q[t] - c[t];
              residual_table(L, books, sc.residual.data(), sc.table.data());
            }
            scan_list(L, sc.table.data(), bias, terms, r0, r1, marks, sc.sel);
          }
          std::vector<PqCandidate>& best = sc.sel.best();
          float* values = a.values.row(i);
          int64_t* ids = a.ids.row(i);
          int64_t have = 0;
          if (a.refine > 0) {
            sc.ranked.clear();
            // The candidates' rows are scattered over the stored vectors: fetch a group ahead.
            const float* qi = a.Q.row(i);
            shortlist_float32(plan, qi, L.vectors.data(), d, k, best);
            const auto row_of = [&](size_t c) { return L.vectors.data() + best[c].row * d; };
            const size_t nb = best.size();
            for (size_t c = 0; c < std::min<size_t>(8, nb); ++c) prefetch_row(row_of(c), d);
            const ExactForm form = plan.exact;
            const bool grouped = plan.rescores() && form != ExactForm::sqdist && form != ExactForm::none;
            size_t c = 0;
            if (grouped) {
              const bool centred = form == ExactForm::centred_cosine;
              const double qm = centred ? exact_mean(qi, d) : 0.0;
              const double qq = form == ExactForm::dot ? 0.0 : exact_dot(qi, qi, d, qm, qm);
              for (; c + 4 <= nb; c += 4) {
                for (size_t f = c + 8; f < std::min(c + 12, nb); ++f) prefetch_row(row_of(f), d);
                const float* xs[4] = {row_of(c), row_of(c + 1), row_of(c + 2), row_of(c + 3)};
                double keys[4];
                exact_keys4(form, qi, xs, d, qq, qm, keys);
                for (size_t u = 0; u < 4; ++u) sc.ranked.emplace_back(keys[u], best[c + u].id);
              }
            }
            for (; c < nb; ++c) {
              if (c + 8 < nb) prefetch_row(row_of(c + 8), d);
              sc.ranked.emplace_back(exact_pq_key(plan, qi, row_of(c), d), best[c].id);
            }
            have = std::min<int64_t>(k, static_cast<int64_t>(sc.ranked.size()));
            std::partial_sort(sc.ranked.begin(), sc.ranked.begin() + have, sc.ranked.end());
            for (int64_t s = 0; s < have; ++s) {
              values[s] = static_cast<float>(plan.value_of_key(sc.ranked[static_cast<size_t>(s)].first));
              ids[s] = sc.ranked[static_cast<size_t>(s)].second;
            }
          } else {
            have = std::min<int64_t>(k, static_cast<int64_t>(best.size()));
            std::partial_sort(best.begin(), best.begin() + have, best.end(), ranks_before);
            for (int64_t s = 0; s < have; ++s) {
              values[s] = approximate_value(plan.metric, best[static_cast<size_t>(s)].key);
              ids[s] = best[static_cast<size_t>(s)].id;
            }
            if (a.keys.data != nullptr) {  // a sharded search's first round merges by the estimates
              float* keys = a.keys.row(i);
              for (int64_t s = 0; s < k; ++s)
                keys[s] = s < have ? best[static_cast<size_t>(s)].key : std::numeric_limits<float>::infinity();
            }
          }
          for (int64_t s = have; s < k; ++s) values[s] = worst, ids[s] = -1;
          if (have < k) ++sc.short_rows;
        },
        0.05, 1.0);
    for (const Scratch& sc : scratch) {
      if (a.short_rows) *a.short_rows += sc.short_rows;
      if (a.candidates) *a.candidates += sc.candidates;
    }
  });
}

int64_t ivf_pq_shortlist(const MetricPlan& plan, int64_t k, int64_t n) {
  const ExactForm form = plan.exact;
  if (form != ExactForm::dot && form != ExactForm::cosine && form != ExactForm::sqdist) return n;
  return std::min(plan.candidates(k, n), n);
}

void ivf_pq_rank_shortlist(const MetricPlan& plan, std::vector<std::pair<double, int64_t>>& ranked, int64_t k,
                           float* values, int64_t* ids, bool cut) {
  const int64_t n = int64_t(ranked.size()), keep = cut ? ivf_pq_shortlist(plan, k, n) : n, have = std::min(k, keep);
  const float worst = plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  std::partial_sort(ranked.begin(), ranked.begin() + have, ranked.begin() + keep);
  for (int64_t c = 0; c < k; ++c) {
    values[c] = c < have ? static_cast<float>(plan.value_of_key(ranked[size_t(c)].first)) : worst;
    ids[c] = c < have ? ranked[size_t(c)].second : -1;
  }
}

void ivf_pq_rerank_keys(const IvfPqLists& L, const float* q, const int64_t* rows, int64_t count, float* shortlist,
                        double* exact) {
  const int64_t d = L.dim;
  for (int64_t c = 0; c < count; ++c) {
    const float* x = L.vectors.data() + rows[c] * d;
    shortlist[c] = shortlist_key(L.plan.exact, q, x, d);
    exact[c] = exact_pq_key(L.plan, q, x, d);
  }
}

}  // namespace simkit::detail::cpu
