#pragma once
// The n-body family's Barnes-Hut sum: an octree over the sources in Morton order, monopole
// moments, a walk per target with the opening angle theta, and the targets split over threads
// by cost zones (cpu/barnes_hut.cpp); on the GPU a binary radix tree walked a warp of targets at a
// time (cuda/barnes_hut.cu).

#include <simkit/nbody.hpp>

#include "nbody/nbody_direct.hpp"

namespace simkit::detail::cpu {

/// `costs` (m values or empty): read as last call's interaction counts per target to split the
/// work, then overwritten with this call's.
NbodyReport nbody_barnes_hut(const Context& ctx, const NbodyArgs& a, double theta, bool quadrupole,
                             ArrayView<int64_t> costs);

}  // namespace simkit::detail::cpu

namespace simkit::detail::cuda {

/// `costs` (m values or empty) receives each target's interaction count; the GPU balances its
/// groups of targets dynamically and never reads them.
NbodyReport nbody_barnes_hut(const Context& ctx, const NbodyArgs& a, double theta, ArrayView<int64_t> costs);

}  // namespace simkit::detail::cuda
