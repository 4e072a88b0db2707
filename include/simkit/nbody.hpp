#pragma once
// Softened Newtonian gravity between point masses: what n bodies do to each other, or what a
// set of sources does at a set of targets (like the Gauss transform, with the kernel 1 / r).
//
// For a target at x and sources x_j of mass m_j, with gravitational constant G and softening
// length eps (a Plummer softening: every distance r is replaced by sqrt(r^2 + eps^2)):
//
//     accel(x)     = G sum_j m_j (x_j - x) / (|x_j - x|^2 + eps^2)^(3/2)
//     potential(x) = -G sum_j m_j / sqrt(|x_j - x|^2 + eps^2)
//
// A pair at distance exactly zero contributes nothing: a body and itself, two bodies at the
// same point, a target placed on a source. So nbody_accel() over one set is the two-set sum of
// the set with itself.
//
// Method: the direct sum, every pair, O(n m), in float32 with float32 accumulation per target
// (on the GPU in the shared-memory tiles of GPU Gems 3, ch. 31; on the CPU SIMD lanes over the
// sources and OpenMP over the targets). Its rounding error is bounded by a few units of float32
// rounding times the sum of the pair magnitudes G sum_j m_j / r_j^2 (not times |accel|, which
// cancellation can make small): tests/test_nbody.cpp checks 1e-5 of that scale against a
// float64 reference on awkward sizes.
//
//   simkit::Matrix<float> bodies = ...;              // n x 4: x, y, z, mass
//   simkit::Matrix<float> accel(bodies.rows(), 3);
//   std::vector<float> phi(bodies.rows());
//   simkit::nbody_accel(ctx, bodies.view(), accel.view(), simkit::ArrayView<float>(phi),
//                       {.G = 1.0, .softening = 0.01});

#include <cstdint>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit {

struct NbodyOptions {
  double G = 1.0;          // the gravitational constant, > 0, in the units of the data
  double softening = 0.0;  // eps >= 0: distances become sqrt(r^2 + eps^2)
};

/// The acceleration (and, when `potential` is not empty, the potential) of every body of
/// `bodies` (n x 4 rows: x, y, z, mass) due to all the others: accel is n x 3, potential n
/// values. Inputs and outputs on the host or (GPU backend) on the device, each independently.
/// Throws Error(invalid_argument) on a shape other than n x 4, n = 0, non-finite values,
/// negative masses, G <= 0 or a negative or non-finite softening, and outputs of the wrong shape.
void nbody_accel(const Context& ctx, MatrixView<const float> bodies, MatrixView<float> accel,
                 ArrayView<float> potential = {}, const NbodyOptions& options = {});

/// The field of `sources` (n x 4: x, y, z, mass) at `targets` (m x 3: x, y, z): accel m x 3,
/// potential m values (or empty). The same rules and errors as nbody_accel.
void nbody_field(const Context& ctx, MatrixView<const float> targets, MatrixView<const float> sources,
                 MatrixView<float> accel, ArrayView<float> potential = {}, const NbodyOptions& options = {});

}  // namespace simkit
