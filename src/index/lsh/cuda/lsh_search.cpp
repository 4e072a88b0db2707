// GPU lsh search. Per batch of queries:
//   1. hashing and probing on the host, with the CPU backend's code (index/lsh_hash.hpp): the
//      projections are tables x bits dot products per query -- a few dozen, against the
//      hundreds of thousands of rows a query is then compared with -- and computing them with
//      the same sgemm as the CPU makes both backends probe the same buckets and meet the same
//      candidates by construction (cuBLAS and OpenBLAS may round a projection differently, and
//      one that sits on a hash boundary would then land in another bucket). The bucket lookup
//      is a binary search in each table's sorted keys, as on the CPU. The host keeps only the
//      probed BUCKETS of each query (a few per table), never their rows.
//   2. the candidates scored on the device, in one of two regimes chosen by the batch's
//      candidate fraction f = candidates / (queries x rows):
//        sparse (f < 1/8)  each query's candidate rows gathered on the host into a padded id
//                          matrix and re-scored directly in float64 (rescore.cu; l1: its float
//                          value, summed as the k-NN's tile kernel sums it). Work ~ f n d per
//                          query, and f n row ids per query are cheap to collect.
//        dense (f >= 1/8)  every row scored against the batch by this backend's pairwise
//                          (cuBLAS products and the metric's epilogue, or the l1 tile kernel),
//                          non-candidates set to NaN in that output by lsh_mark, the best kc
//                          selected (select_k), and those re-scored in float64. The seed's 6 x 2
//                          configuration makes ~80% of the rows candidates; there a GEMM over all
//                          rows runs near peak and a gather of 80% of them, row by row, cannot.
//      1/8 is where a float64 gather stops being cheaper than a float32 GEMM over every row (an
//      H100 runs FP32 GEMMs at ~50 TFLOP/s and scattered float64 dot products at a few).
//   3. knn's rule on the host: (key, row) ranking with rank_exact_rows (core/rescore.hpp),
//      rows turned into ids, rows short of k padded with (worst, -1) and counted.
//
// The dense regime's candidate set. Collecting it on the host (the union of ~320,000 row ids
// per query at the seed's configuration, de-duplicated, shipped as a byte mask of queries x
// rows) cost ~10 ms a query, twenty times the GEMM. Instead the device copy of the tables
// holds every row's bucket in every table (bucket_of, int32, tables x n), and lsh_mark tests,
// for each (query, row), whether the row's bucket in some table is on the query's probe list
// of that table -- exactly the rows the CPU's gather unites, so both backends rank the same
// candidates. A table taken whole (lsh_whole_table: the same for every query) makes every row
// a candidate of every query, and no marking runs at all.
//
// Choosing the regime needs the exact distinct count, as before (the choice must not move, or
// float32 pre-selection could order differently than the float64 gather). The bucket sizes
// bound it per query: the sum over tables of the probed buckets' sizes (capped at n) from
// above, the largest single table's sum from below (a table's buckets are disjoint). Below the
// threshold by the upper bound: sparse, counted by the host gather. Above it by the lower
// bound: dense, counted by the same lsh_mark pass that masks the scores. In between: one
// counting-only lsh_mark pass decides. The dense path also reuses its device buffers across
// batches and re-scores select_k's row ids where they lie, instead of a round trip per batch.

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/parallel.hpp"
#include "core/rescore.hpp"
#include "cuda/check.hpp"
#include "cuda/rescore.hpp"
#include "index/lsh/cuda/lsh_kernels.hpp"
#include "index/lsh/lsh_hash.hpp"
#include "index/lsh/lsh_searchers.hpp"

namespace simkit::detail::cuda {

namespace {

/// bucket_of[t * n + r]: row r's bucket in table t, numbered within the table (from the CSR:
/// bucket b of table t holds members[bucket_start[g] .. bucket_start[g + 1]), g = key_start[t] + b).
std::vector<int32_t> bucket_numbers(const LshTables& T) {
  const int64_t n = T.size(), L = T.tables;
  if (n > std::numeric_limits<int32_t>::max())
    throw Error(ErrorCode::unsupported, "lsh GPU search: more than 2^31 - 1 rows");
  std::vector<int32_t> of(size_t(L * n), 0);
  for (int64_t t = 0; t < L; ++t)
    for (int64_t b = 0; b < T.buckets(t); ++b) {
      const int64_t g = T.key_start[size_t(t)] + b;
      for (int64_t p = T.bucket_start[size_t(g)]; p < T.bucket_start[size_t(g + 1)]; ++p)
        of[size_t(t * n + T.members[size_t(p)])] = int32_t(b);
    }
  return of;
}

/// The rows and their buckets, resident on one device until the index changes (LshTables::device).
/// Memory: n x dim floats plus tables x n int32.
class DeviceTables final : public LshDeviceTables {
 public:
  DeviceTables(const Context& ctx, const LshTables& T) : gpu_id(ctx.gpu_id), rows(ctx, T.rows()) {
    const std::vector<int32_t> of = bucket_numbers(T);
    if (!of.empty()) bucket_of = DeviceMatrix<int32_t>(ctx, MatrixView<const int32_t>{of.data(), T.tables, T.size()});
  }
  int gpu_id;
  DeviceMatrix<float> rows;
  DeviceMatrix<int32_t> bucket_of;  // tables x n
};

std::shared_ptr<const DeviceTables> device_tables(const Context& ctx, const LshTables& T) {
  std::lock_guard g(T.device_mutex);
  auto have = std::dynamic_pointer_cast<const DeviceTables>(T.device);
  if (!have || have->gpu_id != ctx.gpu_id) {
    have = std::make_shared<const DeviceTables>(ctx, T);
    T.device = std::const_pointer_cast<DeviceTables>(have);
  }
  return have;
}

void to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}
void to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

/// A device buffer of at least `count` elements, kept across batches (grown, never shrunk).
template <class T>
T* room(const Context& ctx, DeviceMatrix<T>& m, int64_t count) {
  if (m.rows() * m.cols() < count) m = DeviceMatrix<T>(ctx, 1, count);
  return m.view().data;
}

/// One query's probed buckets (numbered within their table), table after table, `length` of
/// them per table, sorted and distinct; and the bounds they give on its distinct candidates.
struct Probed {
  std::vector<int32_t> buckets;
  std::vector<int64_t> length;  // per table
  int64_t lower = 0, upper = 0;
};

constexpr int64_t kBatch = 256;                  // queries per batch
constexpr size_t kDenseBytes = size_t(1) << 30;  // the score buffer of one dense sub-batch

}  // namespace

void lsh_search(const Context& ctx, const LshSearchArgs& a) {
  const LshTables& T = *a.tables;
  const int64_t m = a.Q.rows, d = T.dim, k = a.k, n = T.size(), H = T.hashes(), L = T.tables;
  DeviceGuard guard(ctx.gpu_id);
  const int threads = cpu_threads(ctx);

  // 1. Host copy of the queries for hashing, device copy for scoring.
  Matrix<float> q_host;
  MatrixView<const float> Qh = a.Q;
  if (a.Q.where == Memory::device) {
    q_host = Matrix<float>(m, d);
    to_host(q_host.data(), a.Q.data, size_t(m * d) * sizeof(float));
    Qh = q_host.view();
  }
  DeviceMatrix<float> q_dev;
  const float* Qd = a.Q.data;
  if (a.Q.where == Memory::host) {
    q_dev = DeviceMatrix<float>(ctx, a.Q);
    Qd = q_dev.view().data;
  }
  std::vector<float> proj(size_t(m * H));
  lsh_project(T, Qh, proj.data(), threads);
  const std::shared_ptr<const DeviceTables> D = device_tables(ctx, T);
  const float* X = D->rows.view().data;

  const MetricPlan& plan = T.plan;
  const float worst = plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  const int64_t kc = std::min(std::max(plan.candidates(k, n), k), n);
  const int64_t dense_batch =
      std::clamp<int64_t>(int64_t(kDenseBytes / (size_t(std::max<int64_t>(n, 1)) * sizeof(float))), 1, kBatch);
  // A table taken whole puts every row in every query's union.
  bool every_row = false;
  for (int64_t t = 0; t < L; ++t) every_row = every_row || lsh_whole_table(T, t, a.probes);

  std::vector<LshCandidates> scratch(size_t(std::max(1, threads)));
  std::vector<Probed> probed(size_t(std::min(kBatch, m)));
  std::vector<std::vector<int64_t>> cands;
  std::vector<int64_t> ids_h, counts_h;
  std::vector<int32_t> lists_h;
  std::vector<double> keys_h;
  std::vector<float> vals_h;
  DeviceMatrix<int32_t> lists_d;
  DeviceMatrix<int64_t> counts_d, ids_d;
  DeviceMatrix<float> scores_d, best_v;
  DeviceMatrix<double> keys_d;
  Context quiet = ctx;
  quiet.progress = nullptr;

  for (int64_t q0 = 0; q0 < m; q0 += kBatch) {
    const int64_t b = std::min(kBatch, m - q0);
    // Each query's probe lists and count bounds (a table taken whole needs neither).
    int64_t lower = 0, upper = 0, P = 1;
    if (every_row) {
      lower = upper = b * n;
    } else {
      run_tasks(quiet, threads, b, [&](int64_t i, int tid) {
        LshCandidates& c = scratch[size_t(tid)];
        Probed& p = probed[size_t(i)];
        p.buckets.clear();
        p.length.assign(size_t(L), 0);
        p.lower = p.upper = 0;
        for (int64_t t = 0; t < L; ++t) {
          const size_t at = p.buckets.size();
          const int64_t g0 = T.key_start[size_t(t)];
          for (int64_t g : c.probe(T, proj.data() + (q0 + i) * H, t, a.probes)) p.buckets.push_back(int32_t(g - g0));
          // Distinct: two probes meeting one bucket would count its rows twice in the bounds.
          std::sort(p.buckets.begin() + std::ptrdiff_t(at), p.buckets.end());
          p.buckets.erase(std::unique(p.buckets.begin() + std::ptrdiff_t(at), p.buckets.end()), p.buckets.end());
          int64_t rows = 0;
          for (size_t e = at; e < p.buckets.size(); ++e) {
            const int64_t g = g0 + p.buckets[e];
            rows += T.bucket_start[size_t(g + 1)] - T.bucket_start[size_t(g)];
          }
          p.length[size_t(t)] = int64_t(p.buckets.size() - at);
          p.lower = std::max(p.lower, rows);
          p.upper += rows;
        }
        p.upper = std::min(p.upper, n);
      });
      for (int64_t i = 0; i < b; ++i) {
        const Probed& p = probed[size_t(i)];
        lower += p.lower, upper += p.upper;
        for (int64_t len : p.length) P = std::max(P, len);
      }
    }

    // The regime, by the exact candidate total (see the header); counts_h once it is known.
    bool counted = false, dense = false;
    counts_h.assign(size_t(b), 0);
    int64_t* counts_dev = nullptr;
    if (every_row) {
      std::fill(counts_h.begin(), counts_h.end(), n);
      counted = true, dense = true;
    } else if (upper * 8 < b * n) {
      dense = false;
    } else {
      lists_h.assign(size_t(b * L * P), -1);
      for (int64_t i = 0; i < b; ++i) {
        const Probed& p = probed[size_t(i)];
        size_t from = 0;
        for (int64_t t = 0; t < L; ++t) {
          const int64_t len = p.length[size_t(t)];
          std::copy_n(p.buckets.begin() + std::ptrdiff_t(from), len, lists_h.begin() + (i * L + t) * P);
          from += size_t(len);
        }
      }
      to_device(room(ctx, lists_d, b * L * P), lists_h.data(), lists_h.size() * sizeof(int32_t));
      counts_dev = room(ctx, counts_d, b);
      check_cuda(cudaMemsetAsync(counts_dev, 0, size_t(b) * sizeof(int64_t), nullptr), "cudaMemsetAsync");
      if (lower * 8 >= b * n) {
        dense = true;  // counted by the masking passes below
      } else {
        lsh_mark(D->bucket_of.view().data, n, L, lists_d.view().data, P, b, nullptr, 0, counts_dev, nullptr);
        to_host(counts_h.data(), counts_dev, size_t(b) * sizeof(int64_t));
        int64_t total = 0;
        for (int64_t c : counts_h) total += c;
        counted = true, dense = total * 8 >= b * n;
      }
    }
    float* values = a.values.row(q0);
    int64_t* ids = a.ids.row(q0);

    if (!dense) {
      // 2a. Sparse: every candidate gathered on the host and re-scored in float64.
      cands.resize(size_t(b));
      run_tasks(quiet, threads, b, [&](int64_t i, int tid) {
        LshCandidates& c = scratch[size_t(tid)];
        const Probed& p = probed[size_t(i)];  // probed above: the buckets, not probed again
        c.gather(T, p.buckets.data(), p.length.data());
        cands[size_t(i)] = c.rows();
      });
      int64_t widest = 1;
      for (int64_t i = 0; i < b; ++i) {
        counts_h[size_t(i)] = int64_t(cands[size_t(i)].size());
        widest = std::max(widest, counts_h[size_t(i)]);
      }
      const int64_t C = widest;
      ids_h.assign(size_t(b * C), kEmptyId);
      for (int64_t i = 0; i < b; ++i)
        std::copy(cands[size_t(i)].begin(), cands[size_t(i)].end(), ids_h.begin() + i * C);
      int64_t* ids_dev = room(ctx, ids_d, b * C);
      double* keys_dev = room(ctx, keys_d, b * C);
      to_device(ids_dev, ids_h.data(), ids_h.size() * sizeof(int64_t));
      if (plan.rescores())
        rescore_keys(plan.exact, Qd + q0 * d, d, X, d, d, ids_dev, C, keys_dev, C, b, C, nullptr);
      else
        lsh_l1_keys(Qd + q0 * d, X, d, ids_dev, b, C, keys_dev, nullptr);
      keys_h.resize(size_t(b * C));
      to_host(keys_h.data(), keys_dev, keys_h.size() * sizeof(double));
      rank_exact_rows(plan, keys_h.data(), ids_h.data(), b, C, k, values, ids);
    } else {
      // 2b. Dense: all rows scored, non-candidates masked on the device, the best kc re-scored.
      float* S = room(ctx, scores_d, std::min(dense_batch, b) * n);
      float* bv = room(ctx, best_v, std::min(dense_batch, b) * kc);
      int64_t* bi = room(ctx, ids_d, std::min(dense_batch, b) * kc);
      double* keys_dev = room(ctx, keys_d, std::min(dense_batch, b) * kc);
      for (int64_t s0 = 0; s0 < b; s0 += dense_batch) {
        const int64_t sb = std::min(dense_batch, b - s0);
        cuda_backend()->pairwise(
            quiet, PairwiseArgs{MatrixView<const float>{Qd + (q0 + s0) * d, sb, d, Memory::device}, D->rows.view(),
                                plan, MatrixView<float>{S, sb, n, Memory::device}});
        if (!every_row)
          lsh_mark(D->bucket_of.view().data, n, L, lists_d.view().data + s0 * L * P, P, sb, S, n,
                   counted ? nullptr : counts_dev + s0, nullptr);
        check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
        cuda_backend()->select_k(quiet, SelectKArgs{MatrixView<const float>{S, sb, n, Memory::device}, kc,
                                                    plan.negate ? Order::descending : Order::ascending,
                                                    MatrixView<float>{bv, sb, kc, Memory::device},
                                                    MatrixView<int64_t>{bi, sb, kc, Memory::device}});
        ids_h.resize(size_t(sb * kc));
        keys_h.resize(size_t(sb * kc));
        if (plan.rescores()) {
          // select_k's row ids re-scored where they lie; an empty slot (-1) becomes kEmptyId.
          lsh_empty_ids(bi, sb * kc, nullptr);
          rescore_keys(plan.exact, Qd + (q0 + s0) * d, d, X, d, d, bi, kc, keys_dev, kc, sb, kc, nullptr);
          to_host(keys_h.data(), keys_dev, keys_h.size() * sizeof(double));
          to_host(ids_h.data(), bi, ids_h.size() * sizeof(int64_t));
        } else {
          // l1: the pairwise value is the tile kernel's float sum, the k-NN's own value.
          vals_h.resize(size_t(sb * kc));
          to_host(vals_h.data(), bv, vals_h.size() * sizeof(float));
          to_host(ids_h.data(), bi, ids_h.size() * sizeof(int64_t));
          for (size_t e = 0; e < keys_h.size(); ++e) {
            if (ids_h[e] < 0) ids_h[e] = kEmptyId;
            keys_h[e] = ids_h[e] == kEmptyId ? std::numeric_limits<double>::infinity() : double(vals_h[e]);
          }
        }
        rank_exact_rows(plan, keys_h.data(), ids_h.data(), sb, kc, k, values + s0 * k, ids + s0 * k);
      }
      if (!counted) to_host(counts_h.data(), counts_dev, size_t(b) * sizeof(int64_t));
    }
    // 3. Candidates counted, rows short of k noted; rows to ids, short rows padded.
    for (int64_t c : counts_h) {
      if (a.candidates) *a.candidates += c;
      if (c < k && a.short_rows) ++*a.short_rows;
    }
    for (int64_t e = 0; e < b * k; ++e) {
      if (ids[e] < 0 || ids[e] == kEmptyId) {
        ids[e] = -1, values[e] = worst;
      } else {
        ids[e] = T.ids[size_t(ids[e])];
      }
    }
  }
}

}  // namespace simkit::detail::cuda
