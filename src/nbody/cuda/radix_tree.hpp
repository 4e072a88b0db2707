#pragma once
// The GPU Barnes-Hut tree: a binary radix tree over the sources' Morton codes (Karras, "Maximizing
// parallelism in the construction of BVHs, octrees, and k-d trees", HPG 2012), built in five
// kernels and one sort, all on the call's stream:
//
//   bounds     the sources' bounding box (a reduction, atomics on order-preserving ints)
//   codes      63-bit Morton codes in the cube over that box, 21 bits per axis
//   sort       the codes with the sources' rows as values (CUB's radix sort, simkit's sort route),
//              then the bodies gathered into that order
//   nodes      n - 1 internal nodes, each from the sorted codes alone: its range of bodies,
//              its split, its children, in parallel over the nodes (equal codes are told
//              apart by their positions, so duplicates need no special case)
//   moments    bottom-up: a thread per body climbs towards the root; at each node the first
//              child to arrive stops, the second combines both (mass, centre of mass, bounding
//              box) and goes on, so every node is done exactly once, after its children
//
// Node ids: internal nodes 0 .. n-2 (0 is the root), a body p (sorted position) is ~p. With a
// single body the root is ~0. The opening distance of a node is r = l / theta + delta (l the
// longest side of its bounding box, delta the distance from its centre of mass to the box's
// centre: Barnes 1994's correction for a mass that sits off-centre), and never less than half
// the box's diagonal plus delta (so a node is never taken whole from inside, at any theta); a
// node is taken whole by a group of targets whose box lies farther than r from its centre of
// mass. theta = 0 opens every node (r = inf).
//
// Rule choice, measured on the H200 with 2^22-body Plummer spheres (bench nbody, 2026-11-26):
// this rule gave a median force error of 7.8e-4 at theta 0.5 in 17.6 ms, 2.0e-4 at 0.3 in 54.7
// ms. The CPU octree's rule (reach / d < theta, reach bounding the bodies about the centre of
// mass) gave 4.3e-3 at 0.5 in 10.4 ms and 1.7e-3 at 0.3 in 28.6 ms: worse at equal time. A
// binary tree's nodes shrink by 2^(1/3) a level, not 2, so the nodes it takes sit just inside
// the threshold, where an octree's mostly sit well inside; the box side is the more cautious
// measure of a node here. The same theta is a little less accurate here than on the CPU (at
// 2^20 and theta 0.5, median 7.3e-4 against 3.0e-4); bench nbody prints both.

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

struct RadixTree {
  int n = 0;
  int root = 0;                   // 0, or ~0 for a single body
  float4* bodies = nullptr;       // n: x, y, z, mass in Morton order
  int* order = nullptr;           // n: Morton position -> input row
  float4* mass_centre = nullptr;  // n - 1: centre of mass, mass
  int4* links = nullptr;          // n - 1: left child, right child, first body, last body (inclusive)
  float* open2 = nullptr;         // n - 1: squared opening distance
  const float* box = nullptr;     // 4 floats on the device: lower corner, side of the Morton cube
};

/// Device bytes build_radix_tree carves for n sources (sort scratch included).
size_t radix_tree_bytes(int64_t n);

/// Builds the tree of the n sources (device rows of 4 floats: x, y, z, mass) on `stream`,
/// carving its arrays from `carve`.
RadixTree build_radix_tree(const float* sources, int64_t n, double theta, Carver& carve, int multiprocessors,
                           cudaStream_t stream);

/// The walk's groups of targets (sorted positions [x, y]): the largest nodes of a radix tree over
/// the targets' codes that hold at most kGroup of them, so a group is one cell of the Morton grid
/// (compact in space) rather than any kGroup consecutive targets (which may straddle the box).
inline constexpr int kGroup = 32;
struct Groups {
  int2* ranges = nullptr;  // up to the number of targets
  int* count = nullptr;    // on the device: how many ranges were made
};

/// Bytes make_groups carves for `count` targets.
size_t groups_bytes(int64_t count);

/// Groups over `count` sorted targets from the links of their radix tree (RadixTree::links when
/// the targets are the bodies).
Groups make_groups(const int4* links, int64_t count, Carver& carve, cudaStream_t stream);

/// Targets other than the bodies, in the Morton order of a tree's cube (those outside it clamped
/// to its faces), and their groups.
struct SortedTargets {
  float4* positions = nullptr;  // x, y, z, 0
  int* order = nullptr;         // Morton position -> input row
  Groups groups;
};

/// Bytes sort_targets carves for m targets.
size_t sorted_targets_bytes(int64_t m);

/// The m targets (device rows of `stride` floats, x y z first) sorted and grouped.
SortedTargets sort_targets(const RadixTree& tree, const float* targets, int64_t m, int64_t stride, Carver& carve,
                           cudaStream_t stream);

}  // namespace simkit::detail::cuda
