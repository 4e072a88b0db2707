#pragma once
// The point tree's searches (cpu/tree_search.cpp): exact k nearest and fixed-radius neighbours
// of the rows of Q, for the l2 family (ranked by the float64 squared distance of
// core/exact_metric.hpp, ties by the lower id: what brute-force knn ranks by).

#include <cstdint>

#include <simkit/radius.hpp>

#include "core/metric_plan.hpp"
#include "spatial/point_tree.hpp"

namespace simkit::detail::spatial::cpu {

/// Queries per packet (at most 64): they walk the tree together (a node's box read once for all
/// of them, eight queries a box test) and each drops out where the box is farther than its own
/// current bound. Against cKDTree (see tree_knn.cpp's leaf size; 1,000,000 rows, 100,000
/// queries, 2 threads, 2026-11-26), with leaves of 32 packets of 16 / 32 / 64 gave 2.26 / 2.29 /
/// 2.36 times its queries/s at d = 3 and 2.91 / 3.61 / 4.36 at d = 8; with leaves of 64, 32 / 64
/// gave 2.46 / 2.54 and 4.30 / 4.96: 64, the most a packet's bit mask holds. Before the float32
/// prefilter (200,000 rows, leaves of 16, d = 3) 8 / 16 / 32 gave 0.73 / 0.83 / 0.83.
inline constexpr int64_t kPacket = 64;

/// What a search did: packets, node visits (a node counted once per packet that reached it),
/// and pair evaluations.
struct TreeSearchStats {
  int64_t packets = 0, node_visits = 0, pairs = 0;
};

/// For each row of Q (host, m x d), its k nearest base rows into values / ids (host, m x k).
/// `mask`, when given, restricts the candidates to the base rows whose bit is set (bit r of word
/// r / 64, r a row of the tree's X); a query with fewer than k candidates is padded with id -1
/// and value +inf.
TreeSearchStats tree_knn(const Context& ctx, const PointTree& tree, MatrixView<const float> Q, int64_t k,
                         const MetricPlan& plan, float* values, int64_t* ids, int64_t packet = kPacket,
                         const uint64_t* mask = nullptr);

/// For each row of Q, the base rows whose value is <= radius, nearest first, at most `cap` (0:
/// all) of them; `mask` as for tree_knn; `stats`, when given, receives the walk's counts.
RadiusResult tree_radius(const Context& ctx, const PointTree& tree, MatrixView<const float> Q, double radius,
                         const MetricPlan& plan, int64_t cap, int64_t packet = kPacket, const uint64_t* mask = nullptr,
                         TreeSearchStats* stats = nullptr);

}  // namespace simkit::detail::spatial::cpu
