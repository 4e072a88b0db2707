// k-NN on the GPU for k > 1024, beyond the device selection's list capacity.
//
// The GPU still computes every metric tile (the O(m n d) part); the tiles come back to pinned
// host memory and the host keeps each query's best candidates (HostTopK, OpenMP over queries).
// Two device tiles and two pinned buffers alternate, so the host selects tile t while the GPU
// computes and copies tile t + 1. Device memory stays bounded by the budget, host memory by
// one query batch's candidate lists. l2 / sqeuclidean keep kc = k + max(16, k / 8) candidates
// by the expanded-form value and re-score them exactly, as the device path does, so both paths
// give the same answers (ties to the lower id).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "check.hpp"
#include "core/backend.hpp"
#include "gemm.hpp"
#include "host_select.hpp"
#include "resources.hpp"
#include "select.hpp"
#include "tile_ops.hpp"

namespace simkit::detail::cuda {

namespace {

struct FallbackNeeds {
  Metric metric;
  int64_t d, kc;
  bool q_host, x_host, rescore_on_device;
  size_t workspace;
  size_t bytes(int64_t mb, int64_t nb) const {
    auto R = [](size_t b) { return Carver::round(b); };
    const size_t umb = size_t(mb), unb = size_t(nb), ud = size_t(d);
    size_t b = R(workspace);
    if (q_host) b += R(umb * ud * 4);
    b += R(operand_scratch_floats(metric, mb, d, q_host) * 4);
    if (x_host) b += R(unb * ud * 4);
    b += R(operand_scratch_floats(metric, nb, d, x_host) * 4);
    b += 2 * R(umb * unb * 4);
    if (rescore_on_device) b += R(umb * size_t(kc) * 8) + R(umb * size_t(kc) * 4);
    return b;
  }
};

}  // namespace

void knn_fallback(const Context& ctx, Resources& r, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                  int64_t kc, Metric metric, MatrixView<float> values, MatrixView<int64_t> ids, size_t budget) {
  const int64_t m = Q.rows, n = X.rows, d = Q.cols;
  const bool rescore = metric == Metric::l2 || metric == Metric::sqeuclidean;
  const int64_t keep = rescore ? kc : k;
  FallbackNeeds need{metric,
                     d,
                     keep,
                     Q.where == Memory::host,
                     X.where == Memory::host,
                     rescore && X.where == Memory::device,
                     metric == Metric::l1 ? 0 : gemm_workspace_bytes(budget)};
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
  float* q_stage = need.q_host ? carve.take<float>(size_t(mb) * d) : nullptr;
  float* q_scratch = carve.take<float>(operand_scratch_floats(metric, mb, d, need.q_host));
  float* x_stage = need.x_host ? carve.take<float>(size_t(nb) * d) : nullptr;
  float* x_scratch = carve.take<float>(operand_scratch_floats(metric, nb, d, need.x_host));
  float* tile[2] = {carve.take<float>(size_t(mb) * nb), carve.take<float>(size_t(mb) * nb)};
  int64_t* cand_ids_dev = need.rescore_on_device ? carve.take<int64_t>(size_t(mb) * keep) : nullptr;
  float* cand_vals_dev = need.rescore_on_device ? carve.take<float>(size_t(mb) * keep) : nullptr;
  r.pinned[0].reserve(size_t(mb) * nb * 4);
  r.pinned[1].reserve(size_t(mb) * nb * 4);
  float* host_tile[2] = {static_cast<float*>(r.pinned[0].data()), static_cast<float*>(r.pinned[1].data())};
  cudaEvent_t* landed = &r.event[7];  // [slot]: the tile in that pinned buffer has arrived
  cudaStream_t s = r.stream[0];

  const bool direct_out = values.where == Memory::host && ids.where == Memory::host;
  std::vector<float> out_v(direct_out ? 0 : size_t(mb) * k);
  std::vector<int64_t> out_i(direct_out ? 0 : size_t(mb) * k);
  std::vector<int64_t> cand_ids;
  std::vector<float> cand_vals, q_rows;
  const int64_t tiles = (n + nb - 1) / nb, batches = (m + mb - 1) / mb;

  for (int64_t q0 = 0, batch = 0; q0 < m; q0 += mb, ++batch) {
    const int64_t rows = std::min(mb, m - q0);
    const float* q_raw = Q.data + q0 * d;
    if (need.q_host) {
      check_cuda(cudaMemcpyAsync(q_stage, q_raw, size_t(rows) * d * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      q_raw = q_stage;
    }
    const Operand qop = prepare_operand(metric, q_raw, need.q_host, rows, d, q_scratch, s);
    HostTopK top(rows, keep, larger_is_better(metric));

    int64_t pending_cols = 0, pending_id0 = 0;  // the tile waiting in host_tile[(t - 1) & 1]
    auto consume = [&](int slot) {
      check_cuda(cudaEventSynchronize(landed[slot]), "cudaEventSynchronize");
      top.add_tile(host_tile[slot], pending_cols, pending_cols, pending_id0);
    };
    for (int64_t t = 0; t < tiles; ++t) {
      const int slot = int(t & 1);
      const int64_t j0 = t * nb, cols = std::min(nb, n - j0);
      const float* x_raw = X.data + j0 * d;
      if (need.x_host) {
        check_cuda(cudaMemcpyAsync(x_stage, x_raw, size_t(cols) * d * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
        x_raw = x_stage;
      }
      const Operand xop = prepare_operand(metric, x_raw, need.x_host, cols, d, x_scratch, s);
      metric_tile(r, s, metric, qop, rows, xop, cols, d, tile[slot], cols, ws, need.workspace);
      // host_tile[slot] was consumed (synchronously, below) two iterations ago.
      check_cuda(cudaMemcpyAsync(host_tile[slot], tile[slot], size_t(rows) * cols * 4, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
      check_cuda(cudaEventRecord(landed[slot], s), "cudaEventRecord");
      if (t > 0) consume(slot ^ 1);  // the previous tile, while this one computes
      pending_cols = cols, pending_id0 = j0;
      if (ctx.progress) ctx.progress(double(batch * tiles + t + 1) / double(batches * tiles + 1));
    }
    consume(int((tiles - 1) & 1));
    top.finish();

    float* vals_dst = direct_out ? values.data + q0 * k : out_v.data();
    int64_t* ids_dst = direct_out ? ids.data + q0 * k : out_i.data();
    if (!rescore) {
      for (int64_t i = 0; i < rows; ++i) {
        const auto& best = top.row(i);
        for (int64_t c = 0; c < k; ++c) {
          vals_dst[i * k + c] = best[size_t(c)].first;
          ids_dst[i * k + c] = best[size_t(c)].second;
        }
      }
    } else {
      cand_ids.resize(size_t(rows) * keep);
      for (int64_t i = 0; i < rows; ++i) {
        const auto& best = top.row(i);
        for (int64_t c = 0; c < keep; ++c) cand_ids[size_t(i * keep + c)] = best[size_t(c)].second;
      }
      const bool take_sqrt = metric == Metric::l2;
      if (need.x_host) {
        const float* q_host_rows = Q.data + q0 * d;
        if (!need.q_host) {
          q_rows.resize(size_t(rows) * d);
          check_cuda(cudaMemcpyAsync(q_rows.data(), q_raw, size_t(rows) * d * 4, cudaMemcpyDeviceToHost, s),
                     "cudaMemcpyAsync");
          check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
          q_host_rows = q_rows.data();
        }
        host_rescore_sort(q_host_rows, X.data, d, cand_ids.data(), keep, rows, keep, k, take_sqrt, vals_dst, ids_dst);
      } else {
        // The base is on the device: re-score there (q_raw is the device copy of the batch).
        cand_vals.resize(size_t(rows) * keep);
        check_cuda(cudaMemcpyAsync(cand_ids_dev, cand_ids.data(), size_t(rows) * keep * 8, cudaMemcpyHostToDevice, s),
                   "cudaMemcpyAsync");
        rescore_sq(q_raw, d, X.data, d, d, cand_ids_dev, keep, cand_vals_dev, keep, rows, keep, take_sqrt, s);
        check_cuda(cudaMemcpyAsync(cand_vals.data(), cand_vals_dev, size_t(rows) * keep * 4, cudaMemcpyDeviceToHost, s),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        host_sort_pairs(cand_vals.data(), cand_ids.data(), rows, keep, k, vals_dst, ids_dst);
      }
    }
    if (!direct_out) {
      // cudaMemcpyDefault: each destination may be host or device independently.
      check_cuda(cudaMemcpy(values.data + q0 * k, vals_dst, size_t(rows) * k * 4, cudaMemcpyDefault), "cudaMemcpy");
      check_cuda(cudaMemcpy(ids.data + q0 * k, ids_dst, size_t(rows) * k * 8, cudaMemcpyDefault), "cudaMemcpy");
    }
  }
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
