#pragma once
// k-means over several GPUs of one process (Context::gpu_ids): a KmeansEngine made of one
// engine per GPU, each holding a contiguous shard of the points (core/shards.hpp).
//
//   assignment  each shard labels its own points (a point's label and cost depend on it and the
//               centroids alone); labels and costs read back in shard order are the one-GPU ones.
//   update      each shard sums its clusters by core/centroid_sums.hpp's rule; the shards' float64
//               sums are added in shard order, from 0, and the centroids made from the totals.
//   inertia     the shards' inertias added in shard order.
//
// What is guaranteed: for a given set of GPUs, the same inputs give the same labels and centroids,
// bit for bit, whatever the thread count. Against one GPU the sums differ only by float64
// rounding (a cluster's points are summed in shard pieces, not one run of chunks), so a centroid
// coordinate can differ by one float32 unit where its mean lies that close to a rounding boundary,
// and a label only where a point is that close to equidistant from two centroids (the tests find
// none on their data); one shard is the one-GPU engine exactly.

#include <memory>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

#include "core/kmeans_engine.hpp"

namespace simkit::detail {

class Backend;

/// The engine k-means runs on ctx: sharded_kmeans_engine over gpu_shard_contexts(ctx) when ctx
/// names several GPUs, else the backend's own.
std::unique_ptr<KmeansEngine> make_kmeans_engine(const Context& ctx, const Backend& backend, MatrixView<const float> X,
                                                 bool spherical);

/// An engine over `shards` (one Context each, from gpu_shard_contexts; CPU ones in the tests)
/// for the n x d host points X.
std::unique_ptr<KmeansEngine> sharded_kmeans_engine(const std::vector<Context>& shards, MatrixView<const float> X,
                                                    bool spherical);

}  // namespace simkit::detail
