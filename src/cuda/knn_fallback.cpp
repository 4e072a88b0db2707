// k-NN on the GPU for k > 1024, beyond the device selection's list capacity.
//
// The GPU still computes every metric tile (the O(m n d) part); the tiles come back to pinned
// host memory and the host keeps each query's best candidates with the CPU backend's selection
// (cpu/select/top_k.hpp, OpenMP over queries).
// Two device tiles and two pinned buffers alternate, so the host selects tile t while the GPU
// computes and copies tile t + 1. Device memory stays bounded by the budget, host memory by
// one query batch's candidate lists. The candidates kept (plan.candidates) are re-scored in
// float64 and ranked by the rule of every k-NN path (cuda/rescore.cu on the device when the
// base is there, core/rescore.cpp otherwise), so this path gives the same answers -- except
// where more rows tie at the k-th key than the margin holds: the check of core/knn_certify.hpp
// is not applied here yet (its keys are the metric's values, not the device lists' keys).
#include <algorithm>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/rescore.hpp"
#include "cpu/select/top_k.hpp"
#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gemm.hpp"
#include "cuda/rescore.hpp"
#include "cuda/resources.hpp"
#include "cuda/staging.hpp"
#include "cuda/tile_ops.hpp"

namespace simkit::detail::cuda {

namespace {

struct FallbackNeeds {
  MetricPlan plan;
  int64_t d, keep;
  bool q_host, x_host, rescore_on_device;
  size_t workspace;
  size_t bytes(int64_t mb, int64_t nb) const {
    auto R = [](size_t b) { return Carver::round(b); };
    const size_t umb = size_t(mb), unb = size_t(nb), ud = size_t(d);
    size_t b = R(workspace);
    if (q_host) b += R(umb * ud * 4);
    b += R(operand_scratch_floats(plan, mb, d, false) * 4);
    if (x_host) b += R(unb * ud * 4);
    b += R(operand_scratch_floats(plan, nb, d, x_host) * 4);
    b += 2 * R(umb * unb * 4);
    if (rescore_on_device) b += R(umb * size_t(keep) * 8) + R(umb * size_t(keep) * 8);
    return b;
  }
};

}  // namespace

void knn_fallback(const Context& ctx, Call& call, const KnnArgs& a, int64_t keep, size_t budget) {
  Resources& r = call.r();
  const MatrixView<const float> Q = a.Q, X = a.X;
  const MetricPlan& plan = a.plan;
  const int64_t m = Q.rows, n = X.rows, d = Q.cols, k = a.k;
  const FallbackNeeds need{plan,
                           d,
                           keep,
                           Q.where == Memory::host,
                           X.where == Memory::host,
                           plan.rescores() && X.where == Memory::device,
                           plan.product ? gemm_workspace_bytes(budget) : 0};
  // A query batch's candidate lists live on the host: mb * (keep + nb) pairs at most.
  int64_t mb = std::min<int64_t>(m, 512), nb = std::min<int64_t>(n, 8192);
  while (need.bytes(mb, nb) > budget) {
    if (nb > 256 && nb >= mb)
      nb = (nb + 1) / 2;
    else if (mb > 1)
      mb = (mb + 1) / 2;
    else if (nb > 1)
      nb = (nb + 1) / 2;
    else
      throw Error(ErrorCode::out_of_memory, "gpu_memory_budget of " + std::to_string(budget) +
                                                " bytes is too small for k-NN with d = " + std::to_string(d) +
                                                ", k = " + std::to_string(k));
  }

  r.arena.reserve(need.bytes(mb, nb), budget);
  Carver carve(r.arena);
  void* ws = need.workspace ? carve.take<unsigned char>(need.workspace) : nullptr;
  RowStage<const float> q_rows(Q, mb), x_rows(X, nb);
  q_rows.carve(carve);
  // Queries are prepared into their own buffer: the re-score reads the raw rows.
  float* q_scratch = carve.take<float>(operand_scratch_floats(plan, mb, d, false));
  x_rows.carve(carve);
  float* x_scratch = carve.take<float>(operand_scratch_floats(plan, nb, d, need.x_host));
  float* tile[2] = {carve.take<float>(size_t(mb) * nb), carve.take<float>(size_t(mb) * nb)};
  int64_t* cand_ids_dev = need.rescore_on_device ? carve.take<int64_t>(size_t(mb) * keep) : nullptr;
  double* cand_keys_dev = need.rescore_on_device ? carve.take<double>(size_t(mb) * keep) : nullptr;
  r.pinned[0].reserve(size_t(mb) * nb * 4);
  r.pinned[1].reserve(size_t(mb) * nb * 4);
  float* host_tile[2] = {static_cast<float*>(r.pinned[0].data()), static_cast<float*>(r.pinned[1].data())};
  const cudaStream_t s = call.stream();

  const bool direct_out = a.values.where == Memory::host && a.ids.where == Memory::host;
  std::vector<float> out_v(direct_out ? 0 : size_t(mb) * k);
  std::vector<int64_t> out_i(direct_out ? 0 : size_t(mb) * k);
  std::vector<cpu::TopK> top(static_cast<size_t>(mb));
  std::vector<int64_t> cand_ids;
  std::vector<double> cand_keys;
  std::vector<float> q_rows_host;
  const int64_t tiles = (n + nb - 1) / nb, batches = (m + mb - 1) / mb;

  for (int64_t q0 = 0, batch = 0; q0 < m; q0 += mb, ++batch) {
    const int64_t rows = std::min(mb, m - q0);
    const float* q_raw = q_rows.in(q0, rows, s);
    const Operand qop = prepare_operand(plan, q_raw, false, rows, d, q_scratch, s);
    for (int64_t i = 0; i < rows; ++i) top[size_t(i)].reset(keep, n);

    int64_t pending_cols = 0, pending_id0 = 0;  // the tile waiting in host_tile[(t - 1) & 1]
    auto consume = [&](int slot) {
      check_cuda(cudaEventSynchronize(r.slot[slot].copied), "cudaEventSynchronize");
      const float* tile_rows = host_tile[slot];
#pragma omp parallel for schedule(dynamic, 4)
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = tile_rows + i * pending_cols;
        cpu::TopK& list = top[size_t(i)];
        if (a.row_mask)
          plan.negate ? list.offer_marked<true>(row, pending_cols, pending_id0, a.row_mask)
                      : list.offer_marked<false>(row, pending_cols, pending_id0, a.row_mask);
        else if (plan.negate)
          list.offer<true>(row, pending_cols, pending_id0);
        else
          list.offer<false>(row, pending_cols, pending_id0);
      }
    };
    for (int64_t t = 0; t < tiles; ++t) {
      const int slot = int(t & 1);
      const int64_t j0 = t * nb, cols = std::min(nb, n - j0);
      const Operand xop = prepare_operand(plan, x_rows.in(j0, cols, s), need.x_host, cols, d, x_scratch, s);
      metric_tile(r, s, plan, qop, rows, xop, cols, d, tile[slot], cols, ws, need.workspace);
      // host_tile[slot] was consumed (synchronously, below) two iterations ago.
      check_cuda(cudaMemcpyAsync(host_tile[slot], tile[slot], size_t(rows) * cols * 4, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
      check_cuda(cudaEventRecord(r.slot[slot].copied, s), "cudaEventRecord");
      if (t > 0) consume(slot ^ 1);  // the previous tile, while this one computes
      pending_cols = cols, pending_id0 = j0;
      if (ctx.progress) ctx.progress(double(batch * tiles + t + 1) / double(batches * tiles + 1));
    }
    consume(int((tiles - 1) & 1));

    float* vals_dst = direct_out ? a.values.data + q0 * k : out_v.data();
    int64_t* ids_dst = direct_out ? a.ids.data + q0 * k : out_i.data();
    // Each row's kept candidates, best first (the order matters only without a re-score).
    cand_ids.resize(size_t(rows) * keep);
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<cpu::Candidate>& best = top[size_t(i)].best();
      std::sort(best.begin(), best.end(), cpu::ranks_before);
      for (int64_t c = 0; c < keep; ++c) {
        cand_ids[size_t(i * keep + c)] = best[size_t(c)].id;
        if (!plan.rescores() && c < k) {
          vals_dst[i * k + c] = float(plan.value_of_key(best[size_t(c)].key));
          ids_dst[i * k + c] = best[size_t(c)].id;
        }
      }
    }
    // Without a re-score the selection's own values are final (l1), written above.
    if (plan.rescores() && need.x_host) {
      const float* q_host = Q.data + q0 * d;
      if (!need.q_host) {
        q_rows_host.resize(size_t(rows) * d);
        check_cuda(cudaMemcpyAsync(q_rows_host.data(), q_raw, size_t(rows) * d * 4, cudaMemcpyDeviceToHost, s),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        q_host = q_rows_host.data();
      }
      rescore_rank_rows(plan, MatrixView<const float>(q_host, rows, d), X, cand_ids.data(), keep, keep, k, vals_dst,
                        ids_dst);
    } else if (plan.rescores()) {
      // The base is on the device: the keys are computed there, ranked here.
      cand_keys.resize(size_t(rows) * keep);
      check_cuda(cudaMemcpyAsync(cand_ids_dev, cand_ids.data(), size_t(rows) * keep * 8, cudaMemcpyHostToDevice, s),
                 "cudaMemcpyAsync");
      rescore_keys(plan.exact, q_raw, d, X.data, d, d, cand_ids_dev, keep, cand_keys_dev, keep, rows, keep, s);
      check_cuda(cudaMemcpyAsync(cand_keys.data(), cand_keys_dev, size_t(rows) * keep * 8, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      rank_exact_rows(plan, cand_keys.data(), cand_ids.data(), rows, keep, k, vals_dst, ids_dst);
    }
    if (!direct_out) {
      // cudaMemcpyDefault: each destination may be host or device independently.
      check_cuda(cudaMemcpy(a.values.data + q0 * k, vals_dst, size_t(rows) * k * 4, cudaMemcpyDefault), "cudaMemcpy");
      check_cuda(cudaMemcpy(a.ids.data + q0 * k, ids_dst, size_t(rows) * k * 8, cudaMemcpyDefault), "cudaMemcpy");
    }
  }
  call.finish();
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
