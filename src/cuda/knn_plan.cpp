#include "cuda/knn_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <simkit/error.hpp>

#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

namespace {

int64_t round_up4(int64_t v) { return (v + 3) / 4 * 4; }

// Base tiles other than the last must be multiples of 4 (16-byte aligned norms per tile) and,
// when large, of 128 (whole GEMM tiles).
int64_t fit_nb(int64_t nb, int64_t n) {
  if (nb >= n) return n;
  if (nb >= 256) return nb / 128 * 128;
  return std::max<int64_t>(4, nb / 4 * 4);
}

}  // namespace

KnnKeys knn_keys(const MetricPlan& plan, bool translated) {
  KnnKeys k;
  if (plan.expanded) {
    k.alpha = -2.f;
    k.mode = KeyMode::add_aux;
    k.aux_op = RowOp::sq_norms;
    if (translated) k.prep_q = k.prep_x = true, k.prep_op = RowOp::translate;
  } else if (plan.prep == RowPrep::normalize) {
    k.mode = KeyMode::mul_aux;
    k.aux_op = RowOp::inv_norms;
    k.prep_q = true;
    k.prep_op = RowOp::normalize;
  } else if (plan.prep == RowPrep::centre_normalize) {
    k.prep_q = k.prep_x = true;
    k.prep_op = RowOp::centre_normalize;
  }
  return k;
}

size_t knn_bytes(const KnnShape& s, int64_t mb, int64_t nb) {
  auto R = [](size_t b) { return Carver::round(b); };
  const size_t d = size_t(s.d), umb = size_t(mb), unb = size_t(nb), ldt = size_t(round_up4(nb));
  size_t b = R(s.workspace);
  if (s.translated) b += R(d * 4);
  if (s.global_aux) b += R(size_t(s.n) * 4);
  if (s.q_host) b += R(umb * d * 4);
  // Prepared queries get their own buffer: the re-score reads the raw rows.
  if (s.keys.prep_q) b += R(umb * d * 4);
  b += R(umb * size_t(s.capacity) * 4) + R(umb * size_t(s.capacity) * 8);
  if (s.rescore_on_device) b += R(umb * size_t(s.capacity) * 8);
  if (s.values_host) b += R(umb * size_t(s.k) * 4);
  if (s.ids_host) b += R(umb * size_t(s.k) * 8);
  size_t slot = R(umb * ldt * 4);
  if (s.x_host) slot += R(unb * d * 4);
  if (s.keys.prep_x && !s.x_host) slot += R(unb * d * 4);
  if (s.tile_aux) slot += R(unb * 4);
  return b + 2 * slot;
}

// The starting tile: as many queries as possible (up to kMaxBatch) times enough base rows for
// about kTileElems scores. Measured on the H100, 1M x 128 base, 10,000 queries, k = 10
// (bench/results/2026-11-22-h100.md), median ms by tile (queries x base rows):
//   1429 x 2176 (the earlier L2-resident rule) 118.3   2500 x 2560 107.4   5000 x 1024 112.8
//   5000 x 2048 104.1   10000 x 512 113.4   10000 x 1024 102.4   10000 x 2048 97.7   2048 x 4096 98.6
// Keeping the tile in L2 does not pay: the selection is latency-bound, one warp per query, so
// it wants many queries in flight, and the product wants many thread blocks per launch
// (K = 128 is short). Two buffers of ~80 MB each are cheap next to a 512 MB base.
constexpr int64_t kTileElems = int64_t{20} << 20;
constexpr int64_t kMaxBatch = 16384;

KnnPlan plan_knn(const KnnShape& s, size_t budget) {
  const int64_t batches = (s.m + kMaxBatch - 1) / kMaxBatch;
  int64_t mb = (s.m + batches - 1) / batches;
  int64_t nb = fit_nb(std::max<int64_t>(256, (kTileElems / mb + 128) / 256 * 256), s.n);
  // SIMKIT_KNN_TILE=MBxNB overrides the starting tile (the budget still shrinks it): the knob
  // the tile measurements in bench/results were taken with.
  if (const char* v = std::getenv("SIMKIT_KNN_TILE")) {
    long long want_mb = 0, want_nb = 0;
    if (std::sscanf(v, "%lldx%lld", &want_mb, &want_nb) == 2 && want_mb > 0 && want_nb > 0) {
      mb = std::min<int64_t>(s.m, want_mb);
      nb = fit_nb(std::min<int64_t>(s.n, want_nb), s.n);
    }
  }

  while (knn_bytes(s, mb, nb) > budget) {
    if (nb > 256)
      nb = fit_nb(nb / 2, s.n);
    else if (mb > 64)
      mb = (mb + 1) / 2;
    else if (nb > 4)
      nb = fit_nb(nb / 2, s.n);
    else if (mb > 1)
      mb = (mb + 1) / 2;
    else
      throw Error(ErrorCode::out_of_memory, "gpu_memory_budget of " + std::to_string(budget) +
                                                " bytes is too small for k-NN with d = " + std::to_string(s.d) +
                                                ", k = " + std::to_string(s.k) + " (needs " +
                                                std::to_string(knn_bytes(s, 1, std::min<int64_t>(4, s.n))) + ")");
  }
  KnnPlan p;
  p.mb = mb;
  p.nb = nb;
  p.ldt = round_up4(nb);
  p.bytes = knn_bytes(s, mb, nb);
  return p;
}

}  // namespace simkit::detail::cuda
