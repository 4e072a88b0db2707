// pairwise on the GPU: the m x n matrix in blocks of query rows x base rows sized to the
// memory budget. With everything on the device and room to spare (the common case) that is a
// single block: prepare Q and X once, one matrix product written straight into `out`, one
// epilogue pass for l2.
//
// Device-resident inputs are checked for NaN / Inf here rather than by a separate pass and
// round trip before the call: the row pass that every dot-family metric but dot makes anyway
// raises a flag (a scan does it for dot and l1), read back at the one synchronisation at the
// end. On the seed shapes that saves two scans and two host round trips, ~5% of a 0.3 ms call.
#include <algorithm>
#include <cstdint>
#include <string>

#include <simkit/error.hpp>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gemm.hpp"
#include "cuda/resources.hpp"
#include "cuda/rows.hpp"
#include "cuda/staging.hpp"
#include "cuda/tile_ops.hpp"

namespace simkit::detail::cuda {

namespace {

struct Plan {
  int64_t mb = 0, nb = 0;
  size_t workspace = 0;
};

struct Needs {
  MetricPlan plan;
  int64_t d;
  bool q_host, x_host, out_host;
  size_t workspace;
  // Bytes of scratch for a block of mb queries and nb base rows.
  size_t bytes(int64_t mb, int64_t nb) const {
    size_t b = Carver::round(workspace) + Carver::round(2 * sizeof(int));  // + the non-finite flags
    if (q_host) b += Carver::round(size_t(mb) * size_t(d) * 4);
    b += Carver::round(operand_scratch_floats(plan, mb, d, q_host) * 4);
    if (x_host) b += Carver::round(size_t(nb) * size_t(d) * 4);
    b += Carver::round(operand_scratch_floats(plan, nb, d, x_host) * 4);
    if (out_host) b += Carver::round(size_t(mb) * size_t(nb) * 4);
    return b;
  }
};

Plan plan(const Needs& need, int64_t m, int64_t n, size_t budget) {
  Plan p{m, n, need.workspace};
  // Halve the larger side until the blocks fit; the base side first at equal sizes, since a
  // full query block means X is streamed only once.
  while (need.bytes(p.mb, p.nb) > budget) {
    if (p.mb == 1 && p.nb == 1)
      throw Error(ErrorCode::out_of_memory, "gpu_memory_budget of " + std::to_string(budget) +
                                                " bytes is too small for pairwise with d = " + std::to_string(need.d));
    if (p.nb >= p.mb && p.nb > 1)
      p.nb = (p.nb + 1) / 2;
    else
      p.mb = (p.mb + 1) / 2;
  }
  return p;
}

}  // namespace

void CudaBackend::pairwise(const Context& ctx, const PairwiseArgs& a) const {
  const MatrixView<const float> Q = a.Q, X = a.X;
  const MetricPlan& metric = a.plan;
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const int64_t m = Q.rows, n = X.rows, d = Q.cols;
  const size_t budget = working_budget(ctx, r);

  Needs need{metric,
             d,
             Q.where == Memory::host,
             X.where == Memory::host,
             a.out.where == Memory::host,
             metric.product ? gemm_workspace_bytes(budget) : 0};
  const Plan p = plan(need, m, n, budget);
  r.arena.reserve(need.bytes(p.mb, p.nb), budget);
  Carver carve(r.arena);
  void* ws = p.workspace ? carve.take<unsigned char>(p.workspace) : nullptr;
  int* bad = carve.take<int>(2);  // [0]: queries, [1]: base held a NaN or Inf
  check_cuda(cudaMemsetAsync(bad, 0, 2 * sizeof(int), s), "cudaMemsetAsync");
  const bool scan = !reads_rows(metric);  // no row pass to fuse the check with
  if (scan && !need.q_host) flag_non_finite(Q.data, m * d, bad, r.multiprocessors, s);
  if (scan && !need.x_host) flag_non_finite(X.data, n * d, bad + 1, r.multiprocessors, s);
  RowStage<const float> q_rows(Q, p.mb), x_rows(X, p.nb);
  RowStage<float> out(a.out, p.mb);
  out.set_block_cols(p.nb);
  q_rows.carve(carve);
  float* q_scratch = carve.take<float>(operand_scratch_floats(metric, p.mb, d, need.q_host));
  x_rows.carve(carve);
  float* x_scratch = carve.take<float>(operand_scratch_floats(metric, p.nb, d, need.x_host));
  out.carve(carve);

  auto stage_x = [&](int64_t j0, int64_t rows) {
    return prepare_operand(metric, x_rows.in(j0, rows, s), need.x_host, rows, d, x_scratch, s, bad + 1);
  };

  const int64_t q_blocks = (m + p.mb - 1) / p.mb, x_blocks = (n + p.nb - 1) / p.nb;
  Operand xop;
  if (x_blocks == 1) xop = stage_x(0, n);
  int64_t done = 0;
  for (int64_t i0 = 0; i0 < m; i0 += p.mb) {
    const int64_t mb = std::min(p.mb, m - i0);
    const Operand qop = prepare_operand(metric, q_rows.in(i0, mb, s), need.q_host, mb, d, q_scratch, s, bad);
    for (int64_t j0 = 0; j0 < n; j0 += p.nb) {
      const int64_t nb = std::min(p.nb, n - j0);
      if (x_blocks > 1) xop = stage_x(j0, nb);
      int64_t ldo = 0;
      float* dst = out.out_block(i0, j0, nb, ldo);
      metric_tile(r, s, metric, qop, mb, xop, nb, d, dst, ldo, ws, p.workspace);
      out.back_block(i0, mb, j0, nb, s);
      ++done;
      if (ctx.progress && (q_blocks * x_blocks > 1)) ctx.progress(double(done) / double(q_blocks * x_blocks));
    }
  }
  // One read-back: both flags (the host waits for the stream here, caller's or not).
  int* bad_host = static_cast<int*>(r.pinned_small.data());
  check_cuda(cudaMemcpyAsync(bad_host, bad, 2 * sizeof(int), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  call.finish();
  // Same words as the host-side check in src/core/validate.cpp.
  if (bad_host[0] || bad_host[1])
    throw Error(ErrorCode::invalid_argument,
                std::string(bad_host[0] ? "queries" : "base") + " contains NaN or Inf (found on the device)");
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
