#pragma once
// The limits within which the IFGT's parameters are searched (ifgt_params.cpp) and which the
// transform (ifgt.cpp) re-checks on the choice it is handed.

#include <algorithm>
#include <cstdint>

namespace simkit::detail::cpu {

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

/// The parameters aim at this fraction of eps, leaving the rest to floating-point rounding. Every
/// sum the transform forms has absolute terms adding up to at most sum|q| (ifgt_bound.hpp), so
/// its worst-case rounding is about (terms in the longest chain of additions) ulps of sum|q|:
/// a coefficient task's 2048 sources, plus one addition per task of a cluster, plus the P terms
/// of an expansion. With P <= 2^15 and n <= 2^26 that is < 7e4 ulps ~ 8e-12 sum|q|, within the
/// 1% left over for any eps >= kIfgtMinEps; smaller eps are refused.
constexpr double kIfgtEpsShare = 0.99;
constexpr double kIfgtMinEps = 1e-9;

}  // namespace simkit::detail::cpu
