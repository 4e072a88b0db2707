#pragma once
// The n-body family's Barnes-Hut sum. CPU: an octree over the sources in Morton order, one walk
// per group of Morton-neighbouring targets, the groups split over threads by cost zones
// (cpu/octree.*, cpu/barnes_hut.cpp). GPU: a binary radix tree built on the device, walked by
// warps of up to 32 neighbouring targets (cuda/radix_tree.*, cuda/barnes_hut.cu).

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
