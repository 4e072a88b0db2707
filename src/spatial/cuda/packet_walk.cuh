#pragma once
// The packet walk of the point tree on the GPU, after the ray packets of the parallel
// case-studies lecture: P consecutive lanes of a warp (P = 1, 2, 4, 8, 16 or 32) hold P
// Morton-neighbouring queries, one query a lane, and walk the tree together, depth first, the
// child nearer the packet's centre first. At each node every lane of the packet reads the same
// box (one broadcast load) and tests its own query against it; a ballot keeps the lanes whose
// query is not yet pruned (box farther than the query's bound: its k-th key, or the radius), and
// only those scan a leaf. So a node costs one fetch per packet, and each query prunes as sharply
// as it would alone; what a packet pays is divergence: the lanes whose bit is off wait while the
// others scan (PacketCounters::leaf_lanes measures how many worked).
//
// The stack lives in each lane's local memory, every lane of a packet holding the same copy
// (pushes and pops are packet-uniform), so packets of a warp walk independently: P < 32 is the
// "one query alone" end of the study (P = 1: no sharing, no packet divergence, warp divergence
// instead).
//
// Keys are the float64 squared distance summed in the order of the device re-score
// (cuda/exact_key.cuh's lane-per-coordinate butterfly), so that a key here equals brute-force
// knn's bit for bit on device-resident rows; ranking is by (key, row).

#include <cstdint>

#include "spatial/cuda/device_tree.hpp"

namespace simkit::detail::spatial::cuda {

/// A box is pruned only beyond bound * kSlack: its distance is a lower bound of its rows' keys up
/// to the rounding of a differently ordered sum (a few units of 2^-53).
constexpr double kSlack = 1 + 1e-12;
/// Stack entries: two per level below the root; a heap over < 2^31 rows of leaves >= 1 has < 32
/// levels.
constexpr int kStack = 64;

struct PacketCounters {
  unsigned long long packets, node_visits, leaf_visits, leaf_lanes, pairs;
};

/// The lane's squared distance to row x in the butterfly order of warp_sum over 32 lanes of
/// which D hold a term: terms i and i + 4, then + 2, then + 1 (adding the zero lanes is exact).
template <int D>
__device__ __forceinline__ double key_of(const float (&q)[D], const float* __restrict__ x) {
  double s[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    if (c < D) {
      const double e = double(q[c]) - double(x[c]);
      s[c] = e * e;
    } else {
      s[c] = 0;
    }
  }
#pragma unroll
  for (int o = 4; o > 0; o /= 2)
#pragma unroll
    for (int i = 0; i < o; ++i) s[i] = s[i] + s[i + o];
  return s[0];
}

template <int D>
__device__ __forceinline__ double box_distance2(const float (&q)[D], const float* __restrict__ lo,
                                                const float* __restrict__ hi) {
  double s = 0;
#pragma unroll
  for (int c = 0; c < D; ++c) {
    const double below = double(lo[c]) - double(q[c]), above = double(q[c]) - double(hi[c]);
    const double g = below > 0 ? below : (above > 0 ? above : 0.0);
    s += g * g;
  }
  return s;
}

/// The lanes of this lane's packet of P.
__device__ __forceinline__ unsigned packet_lanes(int P) {
  const int lane = threadIdx.x & 31;
  return P == 32 ? 0xffffffffu : ((1u << P) - 1) << (lane / P * P);
}

/// The centre of the packet's live queries (every lane of the packet gets it).
template <int D>
__device__ __forceinline__ void packet_centre(const float (&q)[D], bool live, int P, float (&centre)[D]) {
  float count = live ? 1.f : 0.f;
  for (int o = P / 2; o > 0; o /= 2) count += __shfl_xor_sync(packet_lanes(P), count, o, P);
#pragma unroll
  for (int c = 0; c < D; ++c) {
    float s = live ? q[c] : 0.f;
    for (int o = P / 2; o > 0; o /= 2) s += __shfl_xor_sync(packet_lanes(P), s, o, P);
    centre[c] = count > 0 ? s / count : 0.f;
  }
}

/// Walks the tree for the packet: `bound` is this lane's current pruning bound (a query that is
/// not live passes -inf), `leaf(j)` scans leaf j for this lane's query and may lower `bound`.
/// The packet's leader adds its counts to `counters` (when given).
template <int D, class Leaf>
__device__ void packet_walk(const DeviceTree& t, const float (&q)[D], const double& bound, bool live, int P,
                            Leaf&& leaf, PacketCounters* counters) {
  const unsigned lanes = packet_lanes(P);
  const int lane = threadIdx.x & 31;
  float centre[D];
  packet_centre<D>(q, live, P, centre);
  int node[kStack];
  unsigned mask[kStack];
  int sp = 0;
  const unsigned start = __ballot_sync(lanes, live) & lanes;
  if (start) node[0] = 1, mask[0] = start, sp = 1;
  unsigned long long visits = 0, leaf_visits = 0, leaf_lanes = 0, pairs = 0;
  while (sp > 0) {
    --sp;
    const int v = node[sp];
    const float* lo = t.lo + int64_t(v) * D;
    const float* hi = t.hi + int64_t(v) * D;
    const bool open = box_distance2<D>(q, lo, hi) <= bound * kSlack;
    const unsigned active = __ballot_sync(lanes, open) & mask[sp];
    if (!active) continue;
    ++visits;
    if (v >= t.first_leaf) {
      const int j = v - t.first_leaf;
      if ((active >> lane) & 1u) leaf(j);
      const int rows = min(t.leaf_size, t.n - j * t.leaf_size);
      ++leaf_visits, leaf_lanes += __popc(active), pairs += rows > 0 ? unsigned(rows) * __popc(active) : 0u;
      continue;
    }
    const int left = 2 * v;
    const float* llo = t.lo + int64_t(left) * D;
    const float* lhi = t.hi + int64_t(left) * D;
    const bool left_first = box_distance2<D>(centre, llo, lhi) <= box_distance2<D>(centre, llo + D, lhi + D);
    node[sp] = left_first ? left + 1 : left, mask[sp] = active, ++sp;
    node[sp] = left_first ? left : left + 1, mask[sp] = active, ++sp;
  }
  if (counters && lane % P == 0 && start) {
    atomicAdd(&counters->packets, 1ull);
    atomicAdd(&counters->node_visits, visits);
    atomicAdd(&counters->leaf_visits, leaf_visits);
    atomicAdd(&counters->leaf_lanes, leaf_lanes);
    atomicAdd(&counters->pairs, pairs);
  }
}

}  // namespace simkit::detail::spatial::cuda
