#pragma once
// The point tree's searches on the GPU (cuda/tree_knn.cu, cuda/tree_radius.cu; gpu_absent.cpp
// without CUDA): the tree built on the device from the base rows, the queries in its Morton
// order, packets of consecutive lanes walking it (cuda/packet_walk.cuh). Inputs and outputs may
// be in host or device memory; host arrays are copied over and back.

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/radius.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail::spatial::gpu {

/// The largest k the GPU walk keeps per lane (a sorted list in local memory).
inline constexpr int64_t kMaxK = 128;

/// Lanes per packet by default: a whole warp. On the H100 (bench tree, 10,000,000 uniform rows,
/// 1,000,000 queries, k = 16, 2026-11-26) packets of 1 / 8 / 32 took 31.2 / 24.9 / 20.5 ms at
/// d = 3 and 1.56 / 1.73 / 1.29 s at d = 8: sharing the node fetches beats the divergence it
/// brings (at 32 only 16% of the lanes scan at a leaf visit at d = 3).
inline constexpr int kPacket = 32;

/// What a GPU search did (summed over packets) and how long its parts took.
struct WalkReport {
  int64_t packets = 0, node_visits = 0, leaf_visits = 0, leaf_lanes = 0, pairs = 0;
  double build_ms = 0, search_ms = 0;
};

/// k nearest base rows of each query (k <= kMaxK, l2 family): values / ids m x k; `packet` is
/// 1, 2, 4, 8, 16 or 32 lanes.
WalkReport tree_knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k,
                    const MetricPlan& plan, MatrixView<float> values, MatrixView<int64_t> ids, int packet);

/// The base rows within `radius` of each query, nearest first, at most `cap` (0: all).
RadiusResult tree_radius(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, double radius,
                         const MetricPlan& plan, int64_t cap, int packet, WalkReport* report);

}  // namespace simkit::detail::spatial::gpu
