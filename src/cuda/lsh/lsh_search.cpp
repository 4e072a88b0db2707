// GPU lsh search. Per batch of queries:
//   1. hashing and probing on the host, with the CPU backend's code (index/lsh_hash.hpp): the
//      projections are tables x bits dot products per query -- a few dozen, against the
//      hundreds of thousands of rows a query is then compared with -- and computing them with
//      the same sgemm as the CPU makes both backends probe the same buckets and meet the same
//      candidates by construction (cuBLAS and OpenBLAS may round a projection differently, and
//      one that sits on a hash boundary would then land in another bucket). The bucket lookup
//      is a binary search in each table's sorted keys, as on the CPU.
//   2. the candidates scored on the device, in one of two regimes chosen by the batch's
//      candidate fraction f = candidates / (queries x rows):
//        sparse (f < 1/8)  each query's candidate rows gathered into a padded id matrix and
//                          re-scored directly in float64 (rescore.cu; l1: its float value,
//                          summed as the k-NN's tile kernel sums it). Work ~ f n d per query.
//        dense (f >= 1/8)  every row scored against the batch by this backend's pairwise
//                          (cuBLAS products and the metric's epilogue, or the l1 tile kernel),
//                          non-candidates masked to NaN, the best kc selected (select_k), and
//                          those re-scored in float64. The seed's 6 x 2 configuration makes ~80%
//                          of the rows candidates; there a GEMM over all rows runs near peak and
//                          a gather of 80% of them, row by row, cannot.
//      1/8 is where a float64 gather stops being cheaper than a float32 GEMM over every row (an
//      H100 runs FP32 GEMMs at ~50 TFLOP/s and scattered float64 dot products at a few).
//   3. knn's rule on the host: (key, row) ranking with rank_exact_rows (core/rescore.hpp),
//      rows turned into ids, rows short of k padded with (worst, -1) and counted.
// The dense regime selects kc = k + margin by float32 keys before the float64 re-score, as
// knn does; the sparse regime re-scores every candidate, as the CPU backend does. Both give
// the CPU's result wherever float32 does not misorder rows beyond the margin.

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/rescore.hpp"
#include "cpu/parallel.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/lsh/lsh_kernels.hpp"
#include "cuda/rescore.hpp"
#include "index/lsh_hash.hpp"

namespace simkit::detail::cuda {

namespace {

/// The rows, resident on one device until the index changes (LshTables::device).
class DeviceTables final : public LshDeviceTables {
 public:
  DeviceTables(const Context& ctx, const LshTables& T) : gpu_id(ctx.gpu_id), rows(ctx, T.rows()) {}
  int gpu_id;
  DeviceMatrix<float> rows;
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

constexpr int64_t kBatch = 256;                  // queries per batch (sparse)
constexpr size_t kDenseBytes = size_t(1) << 30;  // score + mask buffers of one dense batch

}  // namespace

void CudaBackend::lsh_search(const Context& ctx, const LshSearchArgs& a) const {
  const LshTables& T = *a.tables;
  const int64_t m = a.Q.rows, d = T.dim, k = a.k, n = T.size(), H = T.hashes();
  DeviceGuard guard(ctx.gpu_id);
  const int threads = cpu::cpu_threads(ctx);

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
  const int64_t dense_batch = std::clamp<int64_t>(int64_t(kDenseBytes / (size_t(n) * 5)), 1, kBatch);
  std::vector<LshCandidates> scratch(size_t(std::max(1, threads)));
  std::vector<std::vector<int64_t>> cands;
  std::vector<int64_t> ids_h;
  std::vector<double> keys_h;
  Context quiet = ctx;
  quiet.progress = nullptr;

  for (int64_t q0 = 0; q0 < m; q0 += kBatch) {
    const int64_t b = std::min(kBatch, m - q0);
    cands.resize(size_t(b));
    cpu::run_tasks(quiet, threads, b, [&](int64_t i, int tid) {
      LshCandidates& c = scratch[size_t(tid)];
      c.gather(T, proj.data() + (q0 + i) * H, a.probes);
      cands[size_t(i)] = c.rows();
    });
    int64_t total = 0, widest = 1;
    for (const auto& c : cands) {
      total += int64_t(c.size());
      widest = std::max(widest, int64_t(c.size()));
      if (int64_t(c.size()) < k && a.short_rows) ++*a.short_rows;
    }
    if (a.candidates) *a.candidates += total;
    float* values = a.values.row(q0);
    int64_t* ids = a.ids.row(q0);
    const bool dense = total * 8 >= b * n;

    if (!dense) {
      // 2a. Sparse: every candidate re-scored in float64.
      const int64_t C = widest;
      ids_h.assign(size_t(b * C), kEmptyId);
      for (int64_t i = 0; i < b; ++i)
        std::copy(cands[size_t(i)].begin(), cands[size_t(i)].end(), ids_h.begin() + i * C);
      DeviceMatrix<int64_t> ids_d(ctx, MatrixView<const int64_t>{ids_h.data(), b, C});
      DeviceMatrix<double> keys_d(ctx, b, C);
      if (plan.rescores())
        rescore_keys(plan.exact, Qd + q0 * d, d, X, d, d, ids_d.view().data, C, keys_d.view().data, C, b, C, nullptr);
      else
        lsh_l1_keys(Qd + q0 * d, X, d, ids_d.view().data, b, C, keys_d.view().data, nullptr);
      keys_h.resize(size_t(b * C));
      to_host(keys_h.data(), keys_d.view().data, keys_h.size() * sizeof(double));
      rank_exact_rows(plan, keys_h.data(), ids_h.data(), b, C, k, values, ids);
    } else {
      // 2b. Dense: all rows scored, non-candidates masked, the best kc re-scored.
      for (int64_t s0 = 0; s0 < b; s0 += dense_batch) {
        const int64_t sb = std::min(dense_batch, b - s0);
        DeviceMatrix<float> scores(ctx, sb, n);
        pairwise(quiet, PairwiseArgs{MatrixView<const float>{Qd + (q0 + s0) * d, sb, d, Memory::device}, D->rows.view(),
                                     plan, scores.view()});
        std::vector<uint8_t> mask(size_t(sb * n), 0);
        for (int64_t i = 0; i < sb; ++i)
          for (int64_t r : cands[size_t(s0 + i)]) mask[size_t(i * n + r)] = 1;
        DeviceMatrix<uint8_t> mask_d(ctx, MatrixView<const uint8_t>{mask.data(), sb, n});
        lsh_mask(scores.view().data, mask_d.view().data, sb * n, nullptr);
        check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
        DeviceMatrix<float> best_v(ctx, sb, kc);
        DeviceMatrix<int64_t> best_i(ctx, sb, kc);
        select_k(quiet, SelectKArgs{scores.view(), kc, plan.negate ? Order::descending : Order::ascending,
                                    best_v.view(), best_i.view()});
        std::vector<float> vals(size_t(sb * kc));
        ids_h.resize(size_t(sb * kc));
        to_host(vals.data(), best_v.view().data, vals.size() * sizeof(float));
        to_host(ids_h.data(), best_i.view().data, ids_h.size() * sizeof(int64_t));
        for (int64_t& r : ids_h)
          if (r < 0) r = kEmptyId;
        keys_h.resize(size_t(sb * kc));
        if (plan.rescores()) {
          DeviceMatrix<int64_t> ids_d(ctx, MatrixView<const int64_t>{ids_h.data(), sb, kc});
          DeviceMatrix<double> keys_d(ctx, sb, kc);
          rescore_keys(plan.exact, Qd + (q0 + s0) * d, d, X, d, d, ids_d.view().data, kc, keys_d.view().data, kc, sb,
                       kc, nullptr);
          to_host(keys_h.data(), keys_d.view().data, keys_h.size() * sizeof(double));
        } else {
          // l1: the pairwise value is the tile kernel's float sum, the k-NN's own value.
          for (size_t e = 0; e < keys_h.size(); ++e)
            keys_h[e] = ids_h[e] == kEmptyId ? std::numeric_limits<double>::infinity() : double(vals[e]);
        }
        rank_exact_rows(plan, keys_h.data(), ids_h.data(), sb, kc, k, values + s0 * k, ids + s0 * k);
      }
    }
    // 3. Rows to ids; short rows padded.
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
