// k-NN on the GPU without an m x n matrix.
//
// Queries go in batches of mb rows, the base in tiles of nb rows. Per tile: the product (or
// the l1 kernel) writes an mb x nb score tile; the selection kernel (select_k.cuh) folds it into
// each query's running list of the best C candidates, kept in device memory. Two tile buffers
// alternate, and the product runs on one stream while the selection of the previous tile runs
// on another, so the selection hides under the compute-bound product. A tile holds as many
// queries as possible, for the selection's parallelism (knn_plan.cpp has the measurements).
// Memory is bounded by the budget whatever n: it holds two tiles, one query batch, its lists.
//
// Keys (smaller is better) per metric, from the product T = alpha * Q X^T:
//   l2, sqeuclidean  T = -2 q.x, key = T + |x|^2   (|q|^2 is the same for the whole row)
//   cosine           T = -q.x / |q| (normalised Q), key = T * (1 / |x|)
//   dot, pearson     T = -q.x (pearson: centred, normalised Q and X tile), key = T
//   l1               the l1 tile, key = distance
// l2 / sqeuclidean keep kc = min(n, k + max(16, k / 8)) candidates, then re-score them exactly
// (double sums of squared differences) and re-sort, so the ids do not depend on the
// cancellation in the expanded form. k > 1024 goes to the host fallback (knn_fallback.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <simkit/error.hpp>

#include "check.hpp"
#include "core/backend.hpp"
#include "gemm.hpp"
#include "host_select.hpp"
#include "knn_plan.hpp"
#include "l1.hpp"
#include "resources.hpp"
#include "rows.hpp"
#include "select.hpp"

namespace simkit::detail::cuda {

void knn_fallback(const Context& ctx, Resources& r, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                  int64_t kc, Metric metric, MatrixView<float> values, MatrixView<int64_t> ids, size_t budget);

namespace {

bool two_streams() {
  static const bool on = [] {
    const char* v = std::getenv("SIMKIT_KNN_STREAMS");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return on;
}

}  // namespace

void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids) {
  DeviceGuard guard(ctx.gpu_id);
  Lease lease(ctx.gpu_id);
  Resources& r = *lease;
  const int64_t m = Q.rows, n = X.rows, d = Q.cols;
  const bool rescore = metric == Metric::l2 || metric == Metric::sqeuclidean;
  const int64_t kc = rescore ? std::min(n, k + std::max<int64_t>(16, k / 8)) : k;
  const size_t budget = working_budget(ctx, r);
  if (k > 1024 || kc > kMaxListCapacity) {
    knn_fallback(ctx, r, Q, X, k, kc, metric, values, ids, budget);
    return;
  }

  KnnShape shape;
  shape.metric = metric;
  shape.m = m, shape.n = n, shape.d = d, shape.k = k;
  shape.capacity = select_capacity(kc);
  shape.q_host = Q.where == Memory::host;
  shape.x_host = X.where == Memory::host;
  shape.out_host = values.where == Memory::host || ids.where == Memory::host;
  shape.workspace = metric == Metric::l1 ? 0 : gemm_workspace_bytes(budget);
  const bool needs_aux = metric == Metric::l2 || metric == Metric::sqeuclidean || metric == Metric::cosine;
  shape.global_aux = needs_aux && !shape.x_host && size_t(n) * 4 <= budget / 4;
  shape.tile_aux = needs_aux && !shape.global_aux;
  const KnnPlan p = plan_knn(shape, budget);

  r.arena.reserve(p.bytes, budget);
  Carver carve(r.arena);
  const int C = shape.capacity;
  void* ws = shape.workspace ? carve.take<unsigned char>(shape.workspace) : nullptr;
  float* aux_all = shape.global_aux ? carve.take<float>(size_t(n)) : nullptr;
  float* q_stage = shape.q_host ? carve.take<float>(size_t(p.mb) * d) : nullptr;
  const bool q_prep = metric == Metric::cosine || metric == Metric::pearson;
  float* q_prep_buf = q_prep && !shape.q_host ? carve.take<float>(size_t(p.mb) * d) : nullptr;
  float* state_k = carve.take<float>(size_t(p.mb) * C);
  int64_t* state_i = carve.take<int64_t>(size_t(p.mb) * C);
  float* out_v = shape.out_host ? carve.take<float>(size_t(p.mb) * k) : nullptr;
  int64_t* out_i = shape.out_host ? carve.take<int64_t>(size_t(p.mb) * k) : nullptr;
  float* tile[2];
  float* x_stage[2] = {nullptr, nullptr};
  float* x_prep[2] = {nullptr, nullptr};
  float* aux_tile[2] = {nullptr, nullptr};
  for (int s = 0; s < 2; ++s) {
    tile[s] = carve.take<float>(size_t(p.mb) * p.ldt);
    if (shape.x_host) x_stage[s] = carve.take<float>(size_t(p.nb) * d);
    if (metric == Metric::pearson && !shape.x_host) x_prep[s] = carve.take<float>(size_t(p.nb) * d);
    if (shape.tile_aux) aux_tile[s] = carve.take<float>(size_t(p.nb));
  }
  if (shape.x_host) {
    r.pinned[0].reserve(size_t(p.nb) * d * 4);
    r.pinned[1].reserve(size_t(p.nb) * d * 4);
  }

  cudaStream_t s0 = r.stream[0], s1 = two_streams() ? r.stream[1] : r.stream[0], s2 = r.stream[2];
  cudaEvent_t* computed = &r.event[1];  // [slot]: product of the tile in that slot done
  cudaEvent_t* selected = &r.event[3];  // [slot]: selection of that slot done
  cudaEvent_t* copied = &r.event[5];    // [slot]: host -> device copy of that slot done
  // Earlier work on these events belongs to finished calls (the lease synchronised them).

  const RowOp aux_op = metric == Metric::cosine ? RowOp::inv_norms : RowOp::sq_norms;
  const KeyMode mode = metric == Metric::cosine ? KeyMode::mul_aux : needs_aux ? KeyMode::add_aux : KeyMode::plain;
  const float alpha = rescore ? -2.f : -1.f;
  if (shape.global_aux) row_prep(aux_op, X.data, d, nullptr, 0, aux_all, n, d, s0);

  const int64_t tiles = (n + p.nb - 1) / p.nb, batches = (m + p.mb - 1) / p.mb;
  std::vector<float> host_q;
  std::vector<int64_t> host_i, host_ids_out;
  std::vector<float> host_vals_out;
  for (int64_t q0 = 0, batch = 0; q0 < m; q0 += p.mb, ++batch) {
    const int64_t mb = std::min(p.mb, m - q0);
    const float* q_raw = Q.data + q0 * d;
    if (shape.q_host) {
      check_cuda(cudaMemcpyAsync(q_stage, q_raw, size_t(mb) * d * 4, cudaMemcpyHostToDevice, s0), "cudaMemcpyAsync");
      q_raw = q_stage;
    }
    const float* q_use = q_raw;
    if (q_prep) {
      float* dst = shape.q_host ? q_stage : q_prep_buf;
      row_prep(metric == Metric::cosine ? RowOp::normalize : RowOp::centre_normalize, q_raw, d, dst, d, nullptr, mb, d,
               s0);
      q_use = dst;
    }
    // The same running lists as the public select_k (select_rows.cpp), fed tile by tile.
    const TopKLists lists{state_k, state_i, C, int(kc), int(mb)};
    lists.reset(s0);

    for (int64_t t = 0; t < tiles; ++t) {
      const int slot = int(t & 1);
      const int64_t j0 = t * p.nb, nb = std::min(p.nb, n - j0);
      const float* x_raw = X.data + j0 * d;
      if (shape.x_host) {
        // The copy that last read this pinned buffer must be done before we refill it.
        check_cuda(cudaEventSynchronize(copied[slot]), "cudaEventSynchronize");
        std::memcpy(r.pinned[slot].data(), x_raw, size_t(nb) * d * 4);
        check_cuda(cudaStreamWaitEvent(s2, computed[slot], 0), "cudaStreamWaitEvent");
        check_cuda(
            cudaMemcpyAsync(x_stage[slot], r.pinned[slot].data(), size_t(nb) * d * 4, cudaMemcpyHostToDevice, s2),
            "cudaMemcpyAsync");
        check_cuda(cudaEventRecord(copied[slot], s2), "cudaEventRecord");
        check_cuda(cudaStreamWaitEvent(s0, copied[slot], 0), "cudaStreamWaitEvent");
        x_raw = x_stage[slot];
      }
      // The tile, aux and prepared rows of this slot were last read by the selection two tiles ago.
      check_cuda(cudaStreamWaitEvent(s0, selected[slot], 0), "cudaStreamWaitEvent");
      const float* aux = nullptr;
      if (shape.global_aux) aux = aux_all + j0;
      if (shape.tile_aux) {
        row_prep(aux_op, x_raw, d, nullptr, 0, aux_tile[slot], nb, d, s0);
        aux = aux_tile[slot];
      }
      const float* x_use = x_raw;
      if (metric == Metric::pearson) {
        float* dst = shape.x_host ? x_stage[slot] : x_prep[slot];
        row_prep(RowOp::centre_normalize, x_raw, d, dst, d, nullptr, nb, d, s0);
        x_use = dst;
      }
      if (metric == Metric::l1)
        l1_tile(q_raw, d, x_raw, d, tile[slot], p.ldt, mb, nb, d, s0);
      else
        dot_tile(r, s0, mb, nb, d, alpha, q_use, d, x_use, d, tile[slot], p.ldt, ws, shape.workspace);
      check_cuda(cudaEventRecord(computed[slot], s0), "cudaEventRecord");

      check_cuda(cudaStreamWaitEvent(s1, computed[slot], 0), "cudaStreamWaitEvent");
      lists.add_tile(tile[slot], p.ldt, int(nb), mode, aux, j0, s1);
      check_cuda(cudaEventRecord(selected[slot], s1), "cudaEventRecord");
      if (ctx.progress) ctx.progress(double(batch * tiles + t + 1) / double(batches * tiles + 1));
    }
    stream_wait(r, s0, s1);

    // Finalise the batch: exact re-scoring (l2 family), sort, best k out.
    float* vals_dst = values.data + q0 * k;
    int64_t* ids_dst = ids.data + q0 * k;
    if (rescore && shape.x_host) {
      // The base is on the host: re-score there (the candidates' rows never come over).
      host_i.resize(size_t(mb) * C);
      check_cuda(cudaMemcpyAsync(host_i.data(), state_i, size_t(mb) * C * 8, cudaMemcpyDeviceToHost, s0),
                 "cudaMemcpyAsync");
      const float* q_host_rows = Q.data + q0 * d;
      if (!shape.q_host) {
        host_q.resize(size_t(mb) * d);
        check_cuda(cudaMemcpyAsync(host_q.data(), q_raw, size_t(mb) * d * 4, cudaMemcpyDeviceToHost, s0),
                   "cudaMemcpyAsync");
        q_host_rows = host_q.data();
      }
      check_cuda(cudaStreamSynchronize(s0), "cudaStreamSynchronize");
      const bool direct = values.where == Memory::host && ids.where == Memory::host;
      host_vals_out.resize(direct ? 0 : size_t(mb) * k);
      host_ids_out.resize(direct ? 0 : size_t(mb) * k);
      host_rescore_sort(q_host_rows, X.data, d, host_i.data(), C, mb, kc, k, metric == Metric::l2,
                        direct ? vals_dst : host_vals_out.data(), direct ? ids_dst : host_ids_out.data());
      if (!direct) {
        check_cuda(cudaMemcpyAsync(vals_dst, host_vals_out.data(), size_t(mb) * k * 4, cudaMemcpyDefault, s0),
                   "cudaMemcpyAsync");
        check_cuda(cudaMemcpyAsync(ids_dst, host_ids_out.data(), size_t(mb) * k * 8, cudaMemcpyDefault, s0),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(s0), "cudaStreamSynchronize");
      }
      continue;
    }
    if (rescore) rescore_sq(q_raw, d, X.data, d, d, state_i, C, state_k, C, mb, kc, metric == Metric::l2, s0);
    const float sign = larger_is_better(metric) ? -1.f : 1.f;
    float* v_out = values.where == Memory::device ? vals_dst : out_v;
    int64_t* i_out = ids.where == Memory::device ? ids_dst : out_i;
    lists.finish(k, sign, v_out, i_out, s0);
    if (values.where == Memory::host)
      check_cuda(cudaMemcpyAsync(vals_dst, out_v, size_t(mb) * k * 4, cudaMemcpyDeviceToHost, s0), "cudaMemcpyAsync");
    if (ids.where == Memory::host)
      check_cuda(cudaMemcpyAsync(ids_dst, out_i, size_t(mb) * k * 8, cudaMemcpyDeviceToHost, s0), "cudaMemcpyAsync");
  }
  check_cuda(cudaStreamSynchronize(s0), "cudaStreamSynchronize");
  check_cuda(cudaStreamSynchronize(s1), "cudaStreamSynchronize");
  check_cuda(cudaStreamSynchronize(s2), "cudaStreamSynchronize");
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
