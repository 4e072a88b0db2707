#pragma once
// The IFGT's plan: the limits within which its parameters are searched, the search itself
// (plan_ifgt, shared by both backends: it runs on the host over a sample of the data and prices
// each candidate with the cost model of the device that will run it), and the last step every
// transform takes once it has clustered all the sources (finalize_ifgt: the exact radii fix the
// order p and the bound actually guaranteed).

#include <algorithm>
#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/gauss.hpp>
#include <simkit/matrix.hpp>

#include "core/backend.hpp"

namespace simkit::detail {

/// Largest Taylor order p tried.
constexpr int kIfgtMaxOrder = 40;
/// Largest expansion (monomials per cluster), and largest coefficient table K * P (128 MiB of
/// float64): beyond these the expansions cost more memory than the data they summarise.
constexpr int64_t kIfgtMaxMonomials = int64_t{1} << 15;
constexpr int64_t kIfgtMaxCoefficients = int64_t{1} << 24;
/// Largest K. A target finds its clusters by a loop over all centres, so K is kept where that
/// loop stays cheap next to the expansions; and K is at most n / 4, since with clusters of a
/// few points the IFGT is the direct sum done expensively (except that up to 16 clusters are
/// always allowed, where that costs nothing).
constexpr int64_t kIfgtMaxClusters = 4096;
inline int64_t ifgt_cluster_limit(int64_t n) {
  return std::min(kIfgtMaxClusters, std::max(std::min<int64_t>(n, 16), n / 4));
}
/// The GPU expansions are compiled per dimension (cuda/ifgt.cu) up to this d.
constexpr int64_t kIfgtMaxGpuDims = 8;

/// The parameters aim at this fraction of eps, leaving the rest to floating-point rounding. Every
/// sum the transform forms has absolute terms adding up to at most sum|q| (ifgt_bound.hpp), so
/// its worst-case rounding is about (terms in the longest chain of additions) ulps of sum|q|:
/// a coefficient task's sources, plus one addition per task of a cluster, plus the P terms of
/// an expansion. With P <= 2^15 and n <= 2^26 that is < 7e4 ulps ~ 8e-12 sum|q|, within the 1%
/// left over for any eps >= kIfgtMinEps; smaller eps are refused.
constexpr double kIfgtEpsShare = 0.99;
constexpr double kIfgtMinEps = 1e-9;

/// The plan reads at most this many sources and targets (IfgtSample).
constexpr int64_t kIfgtSampleSources = 8192;
constexpr int64_t kIfgtSampleTargets = 256;
inline int64_t ifgt_sample_rows(int64_t rows, bool sources) {
  return std::min(rows, sources ? kIfgtSampleSources : kIfgtSampleTargets);
}

/// Rows i * rows / count of a host matrix, as float64.
std::vector<double> sample_rows(MatrixView<const float> M, int64_t count);
/// The least and greatest coordinate in each column of a host matrix.
void bounding_box(MatrixView<const float> M, std::vector<double>& lo, std::vector<double>& hi);
/// The sample of host views (cuda::ifgt_sample takes device ones).
IfgtSample ifgt_sample(MatrixView<const float> X, MatrixView<const float> Y);

/// Chooses K, the centres, p and r for |error| <= eps * sum|q| (options.eps), or takes K and p
/// from options.ifgt_clusters / ifgt_order where those are set. `device` selects the cost model:
/// the plan is the cheapest predicted on that device, and direct_cost is the direct sum's
/// predicted time there.
IfgtChoice plan_ifgt(const Context& ctx, Device device, const IfgtSample& sample, double h,
                     const GaussOptions& options);

/// What a transform settles once every source is assigned to its nearest planned centre:
/// `radius` holds each cluster's exact radius (K values). Throws Error(invalid_argument) when no
/// order within the limits meets the plan's target (possible only where the sample under-
/// estimated a radius badly).
IfgtFinal finalize_ifgt(const IfgtChoice& choice, const std::vector<double>& radius, int64_t d, double h);

}  // namespace simkit::detail
