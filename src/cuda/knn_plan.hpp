#pragma once
// How k-NN on the GPU cuts its work: query batch rows (mb) and base tile rows (nb).

#include <cstddef>
#include <cstdint>

#include <simkit/metric.hpp>

namespace simkit::detail::cuda {

struct KnnShape {
  Metric metric = Metric::l2;
  int64_t m = 0, n = 0, d = 0, k = 0;
  int capacity = 32;  // running-list length per query
  bool q_host = false, x_host = false, out_host = false;
  bool global_aux = false;  // per-base-row norms computed once for all of X
  bool tile_aux = false;    // ... or per tile
  size_t workspace = 0;     // cuBLAS workspace
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
