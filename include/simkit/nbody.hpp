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
// Methods. direct: every pair, O(n m), in float32 (on the GPU in the shared-memory tiles of
// GPU Gems 3, ch. 31, two targets per thread; on the CPU AVX2 lanes over tiles of sources, OpenMP
// over blocks of targets), each target's pairs summed in float32 within a tile of sources (256 on
// the GPU, 1,024 on the CPU) and in float64 across tiles. Its rounding error is bounded by a few
// units of float32 rounding times the sum of the pair magnitudes G sum_j m_j / r_j^2 (not times
// |accel|, which cancellation can make small): tests/test_nbody.cpp checks 1e-5 of that scale
// against a float64 reference on awkward sizes; bench nbody measures 3.4e-8 at 2^20 bodies on
// the GPU, 9.2e-8 at 2^16 on the CPU.
//
// barnes_hut: a tree over the sources whose nodes carry their mass and centre of mass; groups of
// nearby targets walk it together, and a node far enough from the whole group (as theta says)
// acts as one mass, otherwise it is opened. Its error is that of the monopole approximation,
// measured against the direct sum (bench nbody: median relative force error on Plummer spheres):
//   CPU  an octree (Morton order, leaves of <= 32 bodies), groups of <= 128 targets; a node
//        whose bodies lie within b of its centre of mass is taken at distance d (to the group's
//        bounding box) when b / d < min(theta, 1); lists summed in float32, float64 across
//        tiles; optional quadrupoles. 2^20 bodies: median 3.0e-4 at theta 0.5, 9.6e-4 at 0.7.
//   GPU  a binary radix tree (Karras 2012) built on the device in ~1.5 ms for 2^22 bodies,
//        groups of <= 32 targets, one per warp; a node with bounding box side l and centre of
//        mass delta off the box's centre is taken when d > l / theta + delta; monopoles only.
//        2^20 bodies: median 7.3e-4 at theta 0.5, 1.7e-3 at 0.7.
// theta = 0 opens every node: the direct sum in another order.
//
//   simkit::Matrix<float> bodies = ...;              // n x 4: x, y, z, mass
//   simkit::Matrix<float> accel(bodies.rows(), 3);
//   std::vector<float> phi(bodies.rows());
//   simkit::nbody_accel(ctx, bodies.view(), accel.view(), simkit::ArrayView<float>(phi),
//                       {.G = 1.0, .softening = 0.01});

#include <cstdint>
#include <functional>
#include <string>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit {

enum class NbodyMethod {
  direct,      // every pair
  barnes_hut,  // a tree; a node seen under an angle below theta counts as one mass
};

struct NbodyOptions {
  double G = 1.0;          // the gravitational constant, > 0, in the units of the data
  double softening = 0.0;  // eps >= 0: distances become sqrt(r^2 + eps^2)
  NbodyMethod method = NbodyMethod::direct;
  /// barnes_hut: the opening angle, >= 0: smaller is more accurate and slower; each backend's
  /// rule is in the header comment above (0: every node opened, the direct sum in another order).
  double theta = 0.5;
  /// barnes_hut: per-target interaction counts (m values), read as the previous call's to split
  /// the targets over CPU threads by equal work (cost zones; all zero: equal counts), then
  /// overwritten with this call's (a target's count is its group's list length). Empty: equal
  /// counts, nothing kept. Host memory. The GPU schedules its groups dynamically and only writes
  /// them.
  ArrayView<int64_t> costs = {};
  /// barnes_hut, CPU only (the GPU refuses it with Error(unsupported)): add each accepted
  /// cell's quadrupole to its monopole. On a 3,001-body Plummer sphere the median force error at
  /// theta = 0.5 falls from 1.7e-3 to 5.2e-4, at 0.3 from 5.3e-4 to 9.0e-5 (tests/test_nbody.cpp
  /// prints both).
  bool quadrupole = false;
};

/// What a call did: pair and cell interactions summed over the targets, and, for barnes_hut,
/// the load balance of the threads: max / mean of their interactions under the split used
/// (cost zones when counts were given) and under an equal-count split of the same targets.
struct NbodyReport {
  int64_t interactions = 0;
  int threads = 1;
  double imbalance = 1.0;
  double imbalance_equal_count = 1.0;
  /// barnes_hut: milliseconds spent building the tree (codes, sort, nodes, moments) and
  /// walking it (the force evaluation proper); 0 for direct.
  double build_ms = 0, walk_ms = 0;
  /// barnes_hut on the GPU: the groups of (at most 32) nearby targets that walk the tree
  /// together, one per warp, and the tree nodes they tested (each test serves a whole group).
  int64_t groups = 0, nodes_tested = 0;
};

/// The acceleration (and, when `potential` is not empty, the potential) of every body of
/// `bodies` (n x 4 rows: x, y, z, mass) due to all the others: accel is n x 3, potential n
/// values. Inputs and outputs on the host or (GPU backend) on the device, each independently.
/// Throws Error(invalid_argument) on a shape other than n x 4, n = 0, non-finite values,
/// negative masses, G <= 0 or a negative or non-finite softening, and outputs of the wrong shape.
NbodyReport nbody_accel(const Context& ctx, MatrixView<const float> bodies, MatrixView<float> accel,
                        ArrayView<float> potential = {}, const NbodyOptions& options = {});

/// The field of `sources` (n x 4: x, y, z, mass) at `targets` (m x 3: x, y, z): accel m x 3,
/// potential m values (or empty). The same rules and errors as nbody_accel.
NbodyReport nbody_field(const Context& ctx, MatrixView<const float> targets, MatrixView<const float> sources,
                        MatrixView<float> accel, ArrayView<float> potential = {}, const NbodyOptions& options = {});

/// A system to integrate: bodies (n x 4: x, y, z, mass) and velocities (n x 3).
struct NbodySystem {
  Matrix<float> bodies;
  Matrix<float> velocities;
};

/// Initial conditions drawn deterministically from `seed`, total mass 1, centre of mass at rest
/// at the origin, in units where G = 1:
///   "plummer"    a Plummer sphere in Henon units (virial radius 1, total energy -1/4), sampled
///                as Aarseth, Henon and Wielen (1974), radii cut at 10 scale lengths;
///   "uniform"    a cold ball: uniform in the unit sphere, at rest (it collapses);
///   "collision"  two Plummer spheres of n/2 bodies, 6 apart on x, falling towards each other
///                at 0.3 each.
/// Error(invalid_argument) for another kind or n < 2 (collision: n < 4).
NbodySystem nbody_initial(const std::string& kind, int64_t n, uint64_t seed);

/// What an integration conserves, in float64: kinetic and potential energy (1/2 sum m_i phi_i,
/// the softened potential) and the total momentum.
struct NbodyDiagnostics {
  double kinetic = 0, potential = 0, total = 0;
  double momentum[3] = {0, 0, 0};
};
NbodyDiagnostics nbody_diagnostics(const Context& ctx, MatrixView<const float> bodies,
                                   MatrixView<const float> velocities, const NbodyOptions& options = {});

/// `steps` leapfrog steps of `dt` (kick-drift-kick: half a kick from the current accelerations,
/// a drift, the new accelerations, half a kick; second order, time-reversible, symplectic, so the
/// energy error oscillates instead of growing) on host `bodies` (positions updated in place) and
/// `velocities`. `after_step(step)` is called after each step (for snapshots and reports).
/// The accelerations come from nbody_accel on ctx's device. Errors as nbody_accel, and
/// Error(invalid_argument) for velocities of another shape or a dt that is not finite and > 0.
void nbody_leapfrog(const Context& ctx, MatrixView<float> bodies, MatrixView<float> velocities, double dt,
                    int64_t steps, const NbodyOptions& options = {},
                    const std::function<void(int64_t step)>& after_step = {});

}  // namespace simkit
