#pragma once
// The octree of the CPU Barnes-Hut (barnes_hut.cpp) and the target groups that walk it.
//
// Sources are sorted by 63-bit Morton code (21 bits per axis in the cube around them) and a node
// is a run of that order: the bodies of one octree cell, split by octant until at most kLeafSize
// remain. Nodes are stored in depth-first preorder, so a node's subtree is the nodes up to its
// `next`: a walk that takes a node whole (or sums a leaf) jumps there, one that opens it steps to
// the next index -- no stack, and memory read front to back. Moments are summed bottom-up in
// float64 and stored in float32: mass, centre of mass, b_max (the radius about the centre of mass
// that holds every body of the node) and, when asked, the traceless quadrupole.
//
// Targets are grouped the same way: sorted by Morton code in the sources' cube (clamped to it),
// a run split by octant until at most group_size(m) remain, neighbouring small octants kept
// together; a group walks the tree once.

#include <cstdint>
#include <vector>

namespace simkit::detail::cpu::octree {

/// A leaf holds at most this many bodies (unless 21 levels of splitting could not separate them).
/// Leaves of 32 and groups of up to 128 were the fastest of leaves 8..64 and groups 16..512 on a
/// Plummer sphere of 2^20 bodies (2 cores, monopoles): at a median force error of 1e-3, 0.50 s
/// against 1.72 s for leaves of 8 and groups of 16 -- fewer, longer walks, each list summed by
/// more targets.
constexpr int64_t kLeafSize = 32;
/// A group of m targets holds at most this many: 128, fewer for small m so that there are at
/// least about 256 groups to split between threads.
inline int64_t group_size(int64_t m) { return m / 256 < 16 ? 16 : m / 256 > 128 ? 128 : m / 256; }

/// One node, 32 bytes.
struct Node {
  float x, y, z, mass;   // centre of mass and mass
  float open2;           // a group box farther than sqrt(open2) from (x, y, z) takes the node whole
  int32_t first, count;  // its bodies: positions first .. first + count - 1 of the Morton order
  int32_t next;          // the first node after its subtree; next == own index + 1: a leaf
};

struct Tree {
  std::vector<Node> nodes;             // preorder, the root first
  std::vector<float> quad;             // 6 per node (xx, yy, zz, xy, xz, yz, traceless) when asked, else empty
  std::vector<float> x, y, z, m;       // the sources in Morton order
  std::vector<int64_t> order;          // Morton position -> source index
  std::vector<uint64_t> codes;         // the sorted codes
  double lo[3] = {0, 0, 0}, side = 1;  // the cube the codes divide
};

/// The tree over n sources (rows x, y, z, mass). A node is taken whole by a group box at
/// distance d from its centre of mass when d > b_max / min(theta, 1) (open2 holds that radius
/// squared; theta = 0: never). `threads` OpenMP threads for the codes and the sort.
Tree build(const float* sources, int64_t n, double theta, bool quadrupole, int threads);

/// Targets in walk order, and groups of them: group g is positions bounds[g] .. bounds[g + 1] - 1.
struct Groups {
  std::vector<int64_t> order;   // walk position -> target index
  std::vector<int64_t> bounds;  // groups + 1 values, 0 first, m last
};

/// The bodies of the tree as targets: the Morton order itself.
Groups group_bodies(const Tree& t);

/// m targets (x, y, z at rows of `stride` floats) sorted by their codes in the tree's cube.
Groups group_targets(const Tree& t, const float* targets, int64_t m, int64_t stride, int threads);

}  // namespace simkit::detail::cpu::octree
