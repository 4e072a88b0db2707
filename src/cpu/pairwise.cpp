// CPU pairwise: the m x n output cut into kQueryTile x kBaseTile blocks, each computed in
// place by one thread (sgemm + epilogue, or the l1 kernel) while it is hot in cache.

#include <vector>

#include "core/parallel.hpp"
#include "cpu/block.hpp"
#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

void CpuBackend::pairwise(const Context& ctx, const PairwiseArgs& a) const {
  const MatrixView<const float> Q = a.Q, X = a.X;
  const MatrixView<float> out = a.out;
  translate_bad_alloc("pairwise", [&] {
    const int threads = cpu_threads(ctx);
    const BlasSerialScope serial_blas;
    const BlockEngine engine(a.plan, Q, X, threads);
    const int64_t m = Q.rows, n = X.rows;
    const int64_t q_tiles = (m + kQueryTile - 1) / kQueryTile;
    const int64_t x_tiles = (n + kBaseTile - 1) / kBaseTile;
    std::vector<BlockEngine::Workspace> ws(static_cast<size_t>(threads));
    run_tasks(ctx, threads, q_tiles * x_tiles, [&](int64_t task, int tid) {
      const int64_t i0 = task / x_tiles * kQueryTile, j0 = task % x_tiles * kBaseTile;
      const int64_t tq = std::min(kQueryTile, m - i0), tx = std::min(kBaseTile, n - j0);
      engine.compute(ws[static_cast<size_t>(tid)], i0, tq, j0, tx, out.row(i0) + j0, n);
    });
    if (ctx.progress) ctx.progress(1.0);
  });
}

}  // namespace simkit::detail::cpu
