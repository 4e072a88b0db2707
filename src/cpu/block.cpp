#include "cpu/block.hpp"

#include <climits>
#include <cstring>
#include <utility>

#include "cpu/l1.hpp"

namespace simkit::detail::cpu {

BlockEngine::BlockEngine(const MetricPlan& plan, MatrixView<const float> Q, MatrixView<const float> X, int threads)
    : plan_(plan),
      Q_(Q),
      X_(X),
      q_stats_(row_stats(Q, plan, threads)),
      x_own_(row_stats(X, plan, threads)),
      x_stats_(&x_own_),
      tau_(cancellation_threshold(Q.cols)) {}

BlockEngine::BlockEngine(const MetricPlan& plan, MatrixView<const float> Q, RowStats q_stats, MatrixView<const float> X,
                         const RowStats& x_stats)
    : plan_(plan),
      Q_(Q),
      X_(X),
      q_stats_(std::move(q_stats)),
      x_stats_(&x_stats),
      tau_(cancellation_threshold(Q.cols)) {}

const float* BlockEngine::query_rows(Workspace& ws, int64_t i0, int64_t tq) const {
  const int64_t d = Q_.cols;
  if (plan_.prep != RowPrep::centre_normalize) return Q_.row(i0);
  if (ws.q_at != i0 || ws.q_rows != tq) {
    ws.q_centred.resize(static_cast<size_t>(tq * d));
    centre_rows(Q_.row(i0), tq, d, q_stats_.mean.data() + i0, ws.q_centred.data());
    ws.q_at = i0, ws.q_rows = tq;
  }
  return ws.q_centred.data();
}

const float* BlockEngine::base_rows(Workspace& ws, int64_t j0, int64_t tx) const {
  const int64_t d = X_.cols;
  if (plan_.prep != RowPrep::centre_normalize) return X_.row(j0);
  if (ws.x_at != j0 || ws.x_rows != tx) {
    ws.x_centred.resize(static_cast<size_t>(tx * d));
    centre_rows(X_.row(j0), tx, d, x_stats_->mean.data() + j0, ws.x_centred.data());
    ws.x_at = j0, ws.x_rows = tx;
  }
  return ws.x_centred.data();
}

void BlockEngine::compute(Workspace& ws, int64_t i0, int64_t tq, int64_t j0, int64_t tx, float* out, int64_t ldo,
                          bool squared) const {
  // BLAS takes int leading dimensions: a wider output (n > 2^31 - 1) goes through scratch.
  if (ldo > INT_MAX) {
    ws.block.resize(static_cast<size_t>(tq * tx));
    compute(ws, i0, tq, j0, tx, ws.block.data(), tx, squared);
    for (int64_t i = 0; i < tq; ++i)
      std::memcpy(out + i * ldo, ws.block.data() + i * tx, static_cast<size_t>(tx) * sizeof(float));
    return;
  }
  const int64_t d = Q_.cols;
  const float* q = query_rows(ws, i0, tq);
  const float* x = base_rows(ws, j0, tx);
  if (!plan_.product) {
    l1_block(q, tq, x, tx, d, out, ldo);
    return;
  }
  gemm_nt(q, tq, x, tx, d, out, ldo);
  if (plan_.prep != RowPrep::none)
    cosine_epilogue(out, ldo, tq, tx, q_stats_.inv.data() + i0, x_stats_->inv.data() + j0);
  else if (plan_.expanded)
    sqdist_epilogue(out, ldo, tq, tx, q_stats_.sq.data() + i0, x_stats_->sq.data() + j0, q, x, d, tau_,
                    plan_.root && !squared);
}

}  // namespace simkit::detail::cpu
