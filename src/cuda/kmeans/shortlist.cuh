#pragma once
// A thread's running list of the kNearestCandidates smallest approximate keys (k-means'
// candidate passes).

#include "cuda/kmeans/kmeans_kernels.hpp"

namespace simkit::detail::cuda {

/// The kNearestCandidates smallest (key, id) pairs offered, in (key, id) order: the same list whatever the order
/// of the offers, so the threads of a point agree after merging.
struct Shortlist {
  float key[kNearestCandidates];
  int id[kNearestCandidates];
  __device__ void clear() {
#pragma unroll
    for (int q = 0; q < kNearestCandidates; ++q) key[q] = __int_as_float(0x7f800000), id[q] = -1;
  }
  __device__ bool wants(float k, int i) const {
    return k < key[kNearestCandidates - 1] ||
           (k == key[kNearestCandidates - 1] && unsigned(i) < unsigned(id[kNearestCandidates - 1]));
  }
  __device__ void offer(float k, int i) {
#pragma unroll
    for (int q = 0; q < kNearestCandidates; ++q) {
      if (k < key[q] || (k == key[q] && unsigned(i) < unsigned(id[q]))) {
        const float tk = key[q];
        const int ti = id[q];
        key[q] = k, id[q] = i;
        k = tk, i = ti;
      }
    }
  }
  /// Drops the smallest pair (the lists of a warp are merged by popping their heads).
  __device__ void pop_front() {
#pragma unroll
    for (int q = 0; q + 1 < kNearestCandidates; ++q) key[q] = key[q + 1], id[q] = id[q + 1];
    key[kNearestCandidates - 1] = __int_as_float(0x7f800000), id[kNearestCandidates - 1] = -1;
  }
};

}  // namespace simkit::detail::cuda
