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
/// few points the IFGT is the direct sum done expensively.
constexpr int64_t kIfgtMaxClusters = 4096;
inline int64_t ifgt_cluster_limit(int64_t n) { return std::max<int64_t>(1, std::min(kIfgtMaxClusters, n / 4)); }

/// The parameters aim at this fraction of eps, leaving the rest to floating-point rounding
/// (about (P + cluster size) ulps of sum|q|); eps below kIfgtMinEps is refused for that reason.
constexpr double kIfgtEpsShare = 0.99;
constexpr double kIfgtMinEps = 1e-12;

}  // namespace simkit::detail::cpu
