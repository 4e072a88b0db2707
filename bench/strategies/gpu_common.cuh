#pragma once
// What the six GPU strategies share: launch checks and the block-wide tree reduction of S5
// and S6 (each thread's partial Sums halved in shared memory until one is left, as the study
// describes: fewer threads work at every level, the cost it names for these strategies).

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "pair_metrics.hpp"

namespace simkit::strategies {

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Opts a kernel into more than the default 48 KiB of dynamic shared memory when it needs it.
template <class Kernel>
void set_dynamic_smem(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)) != cudaSuccess)
    throw std::runtime_error("a block needs " + std::to_string(bytes) +
                             " bytes of shared memory, more than the GPU gives");
}

/// Adds the fields of `from` that metric M's pass uses (first_pass: pearson's means pass, s3
/// and s4 only).
template <StudyMetric M, bool first_pass>
__device__ __forceinline__ void combine_used(Sums& into, const Sums& from) {
  if constexpr (first_pass) {
    into.s3 += from.s3, into.s4 += from.s4;
  } else {
    into.s0 += from.s0;
    if constexpr (sums_used<M>() >= 3) into.s1 += from.s1, into.s2 += from.s2;
    if constexpr (sums_used<M>() == 5) into.s3 += from.s3, into.s4 += from.s4;
  }
}

/// The block's Sums reduced to one, returned to every thread. `shared` holds blockDim.x
/// entries; any block size (the halving folds an odd count's last entry in). Ends synchronised,
/// so the caller may reuse `shared` at once.
template <StudyMetric M, bool first_pass>
__device__ Sums block_reduce(Sums mine, Sums* shared) {
  const int tid = threadIdx.x;
  shared[tid] = mine;
  __syncthreads();
  for (int active = blockDim.x; active > 1;) {
    const int half = (active + 1) / 2;
    if (tid < active - half) combine_used<M, first_pass>(shared[tid], shared[tid + half]);
    __syncthreads();
    active = half;
  }
  const Sums total = shared[0];
  __syncthreads();
  return total;
}

/// One pair's value from a block: the dimensions strided over the threads, then the tree
/// reduction; `a` may sit in shared memory (the cached vector), `b` in global memory.
template <StudyMetric M>
__device__ float block_pair(const float* a, const float* b, int64_t d, Sums* shared) {
  const int tid = threadIdx.x, threads = blockDim.x;
  Sums mine;
  if constexpr (M == StudyMetric::pearson) {
    for (int64_t t = tid; t < d; t += threads) mine.s3 += a[t], mine.s4 += b[t];
    const Sums sums = block_reduce<M, true>(mine, shared);
    const float ma = sums.s3 / float(d), mb = sums.s4 / float(d);
    mine = Sums{};
    for (int64_t t = tid; t < d; t += threads) accumulate<StudyMetric::cosine>(mine, a[t] - ma, b[t] - mb);
  } else {
    for (int64_t t = tid; t < d; t += threads) accumulate<M>(mine, a[t], b[t]);
  }
  return finish<M>(block_reduce<M, false>(mine, shared), d);
}

}  // namespace simkit::strategies
