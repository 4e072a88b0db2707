#pragma once
// The low-dimensional tree behind knn(method = tree) and radius_search, with its one tuning knob
// and its counters exposed: for benchmarks and for studying what query packets buy. Everyday
// callers use knn() and radius_search(), which run these with the defaults.
//
// The tree is a bounding-volume hierarchy over the base rows in Morton order (leaves of 64 rows
// on the CPU, 32 on the GPU).
// Queries are put in the same order and walk it in packets: a packet's queries test each node's
// box together (one fetch for all of them), each dropping out where the box lies beyond its own
// current k-th distance (or the radius). On the CPU a packet is a group of queries walked by one
// thread; on the GPU it is P lanes of a warp, a query per lane.
//
//   simkit::TreeReport r = simkit::knn_tree(ctx, Q.view(), X.view(), 16, simkit::Metric::l2,
//                                           values.view(), ids.view(), {.packet = 8});
//   double fetches_per_query = double(r.node_visits) / double(Q.rows());

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>
#include <simkit/radius.hpp>

namespace simkit {

struct TreeOptions {
  /// Queries per packet; 0 takes the backend's default, measured best (64 on the CPU, 32 on the
  /// GPU). The CPU takes 1 .. 64; the GPU a power of two from 1 to 32 (a warp's lanes).
  int64_t packet = 0;
};

/// What one search did. A node visit is a node's box fetched for a packet (once however many
/// of its queries test it); a leaf visit likewise.
struct TreeReport {
  int64_t packets = 0;
  int64_t node_visits = 0;
  int64_t leaf_visits = 0;  // GPU only (0 on the CPU)
  int64_t leaf_lanes = 0;   // GPU: lanes that scanned at leaf visits; / (leaf_visits * packet) is
                            // the share of a packet's lanes that worked, 1 - that its divergence
  int64_t pairs = 0;        // query-row distances computed by the walk
  double build_seconds = 0, search_seconds = 0;
};

/// knn(ctx, Q, X, k, metric, values, ids, KnnMethod::tree) with its options and its report.
/// Same checks and errors as knn(); on the GPU also k <= 128 (Error(unsupported) beyond).
TreeReport knn_tree(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
                    MatrixView<float> values, MatrixView<int64_t> ids, const TreeOptions& options = {});

/// radius_search() with the tree's options; `report` (when given) receives its counters.
RadiusResult radius_search(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                           Metric metric, int64_t max_neighbors, const TreeOptions& options,
                           TreeReport* report = nullptr);

}  // namespace simkit
