#pragma once
// SIMKIT_HD marks the few functions that the CPU backend and the CUDA kernels share (scan
// operators, key order, merge-path search), so that both backends run the very same logic and
// the CPU tests cover it.
#if defined(__CUDACC__)
#define SIMKIT_HD __host__ __device__ __forceinline__
#else
#define SIMKIT_HD inline
#endif
