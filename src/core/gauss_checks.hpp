#pragma once
// simkit::gauss_transform's argument checks (core/gauss.cpp), also made by the ranks of
// simkit::mpi::gauss_transform on their slices before they agree on the method.

#include <vector>

#include <simkit/context.hpp>
#include <simkit/gauss.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

/// Every argument's shape and value, and NaN / Inf in the host-resident arrays; throws
/// Error(invalid_argument) with gauss_transform's message.
void check_gauss_arguments(const Context& ctx, MatrixView<const float> X, const std::vector<double>& q,
                           MatrixView<const float> Y, double h, MatrixView<double> out, const GaussOptions& options);

}  // namespace simkit::detail
