#pragma once
// Floats as ints whose signed order is the floats' order, so that a bounding box can be reduced
// with atomicMin / atomicMax on ints (there is no float atomicMin): the n-body tree's and the
// point tree's bounds.

namespace simkit::detail::cuda {

__device__ __forceinline__ int ordered(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}

__device__ __forceinline__ float unordered(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

}  // namespace simkit::detail::cuda
