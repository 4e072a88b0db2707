#pragma once
// How k-NN on the GPU cuts and keys its work: the selection key each metric plan becomes, the
// query batch rows (mb) and base tile rows (nb), and the device scratch they take.

#include <cstddef>
#include <cstdint>

#include "core/metric_plan.hpp"
#include "cuda/rows.hpp"
#include "cuda/select/top_k_lists.hpp"

namespace simkit::detail::cuda {

/// The selection key of a tile entry, smaller is better, from the product T = alpha * q'.x'
/// (or the l1 tile) and a per-base-row aux value:
///   expanded   q, x raw, alpha = -2, key = T + |x|^2   (|q|^2 is the same for the whole row);
///              translated: q - c and x - c for a point c of the data, key = T + |x - c|^2
///              (the same distances without the cancellation of data far from the origin)
///   normalize  q normalised, x raw, alpha = -1, key = T * (1 / |x|)   (no normalised copy of X)
///   centred    q and x centred and normalised, alpha = -1, key = T
///   dot        alpha = -1, key = T;   l1: the l1 tile, key = distance
struct KnnKeys {
  float alpha = -1.f;
  KeyMode mode = KeyMode::plain;
  RowOp aux_op = RowOp::sq_norms;  // what aux holds, when mode is add_aux or mul_aux
  bool prep_q = false, prep_x = false;
  RowOp prep_op = RowOp::normalize;

  bool needs_aux() const noexcept { return mode == KeyMode::add_aux || mode == KeyMode::mul_aux; }
  /// The base rows' preparation also writes their aux (translate: |x - c|^2).
  bool aux_from_prep() const noexcept { return prep_x && prep_op == RowOp::translate; }
};

/// `translated`: an expanded metric moved to a point of the data (knn.cpp says when).
KnnKeys knn_keys(const MetricPlan& plan, bool translated);

struct KnnShape {
  MetricPlan plan;
  KnnKeys keys;
  int64_t m = 0, n = 0, d = 0, k = 0, kc = 0;
  int capacity = 32;  // running-list length per query
  bool q_host = false, x_host = false, values_host = false, ids_host = false;
  bool global_aux = false;         // per-base-row aux computed once for all of X
  bool tile_aux = false;           // ... or per tile
  bool rescore_on_device = false;  // the base is on the device: candidates re-scored there
  bool translated = false;         // the expanded form runs on q - c and x - c (d floats for c)
  size_t workspace = 0;            // cuBLAS workspace
};

struct KnnPlan {
  int64_t mb = 0, nb = 0;
  int64_t ldt = 0;   // tile row stride: nb rounded up to a multiple of 4 (16-byte rows)
  size_t bytes = 0;  // device scratch in total
};

/// Device scratch for batches of mb queries and tiles of nb base rows (two tile slots).
size_t knn_bytes(const KnnShape& s, int64_t mb, int64_t nb);

/// The tile: up to 16,384 queries per batch (split evenly) times enough base rows for about
/// 20M scores per buffer (the measurements are in knn_plan.cpp); then shrunk until the scratch
/// fits the budget. Throws Error(out_of_memory) when even 1 x 4 does not fit.
KnnPlan plan_knn(const KnnShape& s, size_t budget);

}  // namespace simkit::detail::cuda
